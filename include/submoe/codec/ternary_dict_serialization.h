// Stand-alone dictionary blob (docs/format.md section 4): how a dictionary
// fitted to the data travels with it. 32-byte little-endian header, then the
// 65536 entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/status.h"

namespace submoe::ternary {

inline constexpr char kDictMagic[8] = {'S', 'M', 'O', 'E', 'D', 'I', 'C', 'T'};
inline constexpr size_t kDictHeaderBytes = 32;
inline constexpr size_t kDictBlobBytes = kDictHeaderBytes + kDictTableBytes;
static_assert(kDictBlobBytes == 524320, "docs/format.md section 4");

std::vector<uint8_t> serialize_dictionary(const TernaryDictionary& dict);
// Checks size, magic, version, kind, p0, entry count and size, then every entry
// and the table's completeness (TernaryDictionary::from_entries).
Result<TernaryDictionary> deserialize_dictionary(std::span<const uint8_t> bytes);

}  // namespace submoe::ternary
