// Helpers shared by the libFuzzer targets: a property check that aborts (the
// fuzzer reports it as a crash with the input), a reader of the input's bytes
// that yields 0 once they run out, a field taker, and a bit-for-bit float
// comparison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

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

// Up to n next bytes (fewer when the input runs out); with `pad`, zero-filled to n.
inline std::vector<uint8_t> take(Reader& r, size_t n, bool pad) {
  std::vector<uint8_t> v;
  while (v.size() < n && r.n > 0) v.push_back(static_cast<uint8_t>(r.u8()));
  if (pad) v.resize(n, 0);
  return v;
}

// The same float bits (so -0 differs from +0 and NaNs compare by payload).
inline bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

}  // namespace submoe::fuzz
