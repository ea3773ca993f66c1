#include "submoe/kernels/ternary_kernel_table.h"

#include <algorithm>
#include <string>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/codec/ternary_packed.h"

namespace submoe::kernels {

using ternary::DictEntry;
using ternary::kDictEntries;
using ternary::kMaxWeightsPerEntry;

Result<TernaryKernelTable> build_ternary_kernel_table(const DictEntry* dict) {
  if (dict == nullptr) return invalid_argument("build_ternary_kernel_table: null dictionary");
  SUBMOE_RETURN_IF_ERROR(ternary::validate_dictionary_table(dict));

  TernaryKernelTable t;
  t.source = dict;
  t.lengths.reset(kDictEntries);
  t.sign_masks.reset(kDictEntries);
  t.masks.reset(kDictEntries);

  // First pass: per-entry sign masks, and the slot count every entry fits in.
  uint32_t slot_count = 1;
  uint32_t max_length = 0;
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    uint8_t sym[kMaxWeightsPerEntry];
    const uint32_t n = ternary::dict_entry_symbols(dict[i], sym);
    uint32_t plus = 0, minus = 0;
    for (uint32_t k = 0; k < n; ++k) {
      if (sym[k] == ternary::kSymbolMax) plus |= 1u << k;
      if (sym[k] == ternary::kSymbolMin) minus |= 1u << k;
    }
    t.lengths[i] = static_cast<uint8_t>(n);
    t.sign_masks[i] = static_cast<uint64_t>(plus) | (static_cast<uint64_t>(minus) << 32);
    t.masks[i] = {static_cast<uint16_t>(plus), static_cast<uint16_t>(plus >> 16), static_cast<uint16_t>(minus),
                  static_cast<uint16_t>(minus >> 16)};
    slot_count = std::max<uint32_t>({slot_count, static_cast<uint32_t>(__builtin_popcount(plus)),
                                     static_cast<uint32_t>(__builtin_popcount(minus))});
    max_length = std::max(max_length, n);
  }
  t.slot_count = slot_count;
  t.max_length = max_length;
  t.has_perm = slot_count <= kPermSlotsPerSign;

  // Slot records: offsets of the nonzero weights, doubled; unused slots point at
  // the zero row of the doubled layout.
  t.slots.reset(static_cast<size_t>(kDictEntries) * 2 * slot_count);
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    uint8_t* rec = t.slots.data() + static_cast<size_t>(i) * 2 * slot_count;
    std::fill(rec, rec + 2 * slot_count, kSlotPad);
    for (uint32_t sign = 0; sign < 2; ++sign) {
      uint32_t bits = static_cast<uint32_t>(t.sign_masks[i] >> (32 * sign));
      for (uint32_t s = 0; bits != 0; ++s, bits &= bits - 1) {
        rec[sign * slot_count + s] = static_cast<uint8_t>(2 * __builtin_ctz(bits));
      }
    }
  }

  if (t.has_perm) {
    t.perm.reset(kDictEntries);
    for (uint32_t i = 0; i < kDictEntries; ++i) {
      uint8_t lane[8];
      std::fill(lane, lane + 8, kPermPad);
      for (uint32_t sign = 0; sign < 2; ++sign) {
        uint32_t bits = static_cast<uint32_t>(t.sign_masks[i] >> (32 * sign));
        for (uint32_t s = 0; bits != 0; ++s, bits &= bits - 1) {
          lane[sign * kPermSlotsPerSign + s] = static_cast<uint8_t>(__builtin_ctz(bits));
        }
      }
      uint8_t bytes[8];
      for (uint32_t l = 0; l < 8; ++l) bytes[perm_lane_byte(l)] = lane[l];
      const uint32_t n = t.lengths[i];
      bytes[0] = static_cast<uint8_t>(bytes[0] | ((n & 7u) << 5));
      bytes[1] = static_cast<uint8_t>(bytes[1] | (((n >> 3) & 7u) << 5));
      uint64_t r = 0;
      for (uint32_t b = 0; b < 8; ++b) r |= static_cast<uint64_t>(bytes[b]) << (8 * b);
      t.perm[i] = r;
    }
  }
  return t;
}

}  // namespace submoe::kernels
