// Dictionary blob (docs/format.md 4), byte by byte so it reads the same on any
// host byte order.
#include "submoe/codec/ternary_dict_serialization.h"

#include <cmath>
#include <cstring>
#include <string>

namespace submoe::ternary {
namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::vector<uint8_t> serialize_dictionary(const TernaryDictionary& dict) {
  std::vector<uint8_t> out(kDictBlobBytes, 0);
  std::memcpy(out.data(), kDictMagic, sizeof kDictMagic);
  put_u32(out.data() + 8, kFormatVersion);
  put_u32(out.data() + 12, static_cast<uint32_t>(dict.kind()));
  uint64_t p0_bits;
  const double p0 = dict.p0();
  std::memcpy(&p0_bits, &p0, sizeof p0_bits);
  put_u64(out.data() + 16, p0_bits);
  put_u32(out.data() + 24, kDictEntries);
  put_u32(out.data() + 28, sizeof(DictEntry));
  uint8_t* p = out.data() + kDictHeaderBytes;
  for (const DictEntry& e : dict.entry_span()) {
    put_u32(p, e.word[0]);
    put_u32(p + 4, e.word[1]);
    p += sizeof(DictEntry);
  }
  return out;
}

Result<TernaryDictionary> deserialize_dictionary(std::span<const uint8_t> bytes) {
  if (bytes.size() < kDictHeaderBytes) {
    return corrupt_data("dictionary blob: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                        std::to_string(kDictHeaderBytes) + "-byte header");
  }
  const uint8_t* h = bytes.data();
  if (std::memcmp(h, kDictMagic, sizeof kDictMagic) != 0) return corrupt_data("dictionary blob: bad magic");
  const uint32_t version = get_u32(h + 8);
  if (version != kFormatVersion) {
    return unsupported("dictionary blob: format version " + std::to_string(version) + ", this build reads " +
                       std::to_string(kFormatVersion));
  }
  const uint32_t kind = get_u32(h + 12);
  if (kind != static_cast<uint32_t>(DictKind::kQmoe) && kind != static_cast<uint32_t>(DictKind::kTunstall)) {
    return corrupt_data("dictionary blob: unknown kind " + std::to_string(kind));
  }
  const uint64_t p0_bits = get_u64(h + 16);
  double p0;
  std::memcpy(&p0, &p0_bits, sizeof p0);
  if (!(p0 >= 0.0 && p0 <= 1.0)) return corrupt_data("dictionary blob: p0 not in [0, 1]");
  const uint32_t count = get_u32(h + 24);
  const uint32_t entry_bytes = get_u32(h + 28);
  if (count != kDictEntries || entry_bytes != sizeof(DictEntry)) {
    return corrupt_data("dictionary blob: " + std::to_string(count) + " entries of " + std::to_string(entry_bytes) +
                        " bytes, expected " + std::to_string(kDictEntries) + " of " + std::to_string(sizeof(DictEntry)));
  }
  if (bytes.size() != kDictBlobBytes) {
    return corrupt_data("dictionary blob: " + std::to_string(bytes.size()) + " bytes, expected " +
                        std::to_string(kDictBlobBytes) + " (truncated or trailing data)");
  }
  std::vector<DictEntry> entries(kDictEntries);
  const uint8_t* p = h + kDictHeaderBytes;
  for (DictEntry& e : entries) {
    e.word[0] = get_u32(p);
    e.word[1] = get_u32(p + 4);
    p += sizeof(DictEntry);
  }
  Result<TernaryDictionary> d = TernaryDictionary::from_entries(static_cast<DictKind>(kind), p0, entries);
  if (!d.is_ok()) return d.status().with_context("dictionary blob");
  return d;
}

}  // namespace submoe::ternary
