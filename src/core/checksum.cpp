#include "submoe/core/checksum.h"

#include <cstdio>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace submoe {

uint64_t xxh3_64(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string checksum_hex(uint64_t checksum) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(checksum));
  return buf;
}

Result<uint64_t> parse_checksum_hex(std::string_view hex) {
  if (hex.size() != 16) return corrupt_data("checksum '" + std::string(hex) + "' is not 16 hex digits");
  uint64_t v = 0;
  for (char c : hex) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return corrupt_data("checksum '" + std::string(hex) + "' is not 16 lowercase hex digits");
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace submoe
