// Integrity checksums of artifact bytes: XXH3-64 (xxHash 0.8, Debian's
// libxxhash-dev, compiled inline), spelled in manifests as 16 lowercase hex
// digits. Fast (tens of GB/s per core), not cryptographic: it detects
// corruption, not tampering.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "submoe/core/status.h"

namespace submoe {

// The manifest's name of the algorithm below.
inline constexpr std::string_view kChecksumAlgorithm = "xxh3_64";

uint64_t xxh3_64(std::span<const uint8_t> bytes);
inline uint64_t xxh3_64(std::string_view text) {
  return xxh3_64({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// "2d06800538d394c2"
std::string checksum_hex(uint64_t checksum);
// The inverse; kCorruptData unless exactly 16 hex digits.
Result<uint64_t> parse_checksum_hex(std::string_view hex);

}  // namespace submoe
