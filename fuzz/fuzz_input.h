// Helpers shared by the libFuzzer targets: a property check that aborts (the
// fuzzer reports it as a crash with the input), and a reader of the input's
// bytes that yields 0 once they run out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace submoe::fuzz {

inline void require(bool ok) {
  if (!ok) std::abort();
}

struct Reader {
  const uint8_t* p;
  size_t n;
  uint32_t u8() { return n ? (--n, *p++) : 0u; }
  uint32_t u16() { return u8() | (u8() << 8); }
};

}  // namespace submoe::fuzz
