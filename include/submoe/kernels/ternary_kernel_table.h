// Per-dictionary expansion of a ternary dictionary into the forms the fused
// kernels read, built once per dictionary (a few milliseconds) and shared by all
// matrices that use it. Every form is indexed by the uint16 codeword.
//
// Why several forms: each kernel family wants the entry in a shape it can use
// without decoding 2-bit symbols in the hot loop (measurements in
// docs/perf-notes.md):
//   - lengths/sign_masks: scalar paths;
//   - masks: AVX-512 masked-add kernel (any dictionary; one kmov per 16 lanes);
//   - perm: AVX-512 permute kernel (dictionaries whose entries hold at most 4
//     w_max and at most 4 w_min symbols, e.g. every p0 >= 0.8 code here);
//   - slots: the nonzero positions, used by the AVX2 batch-1 kernel and by every
//     small-batch kernel (one vector add per nonzero weight for all tokens).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::kernels {

// AVX-512 mask record: bit k of plus_* / minus_* is set when weight k of the
// entry is w_max / w_min (lo = weights 0..15, hi = weights 16..27). Loaded with
// kmovw straight from memory into mask registers.
struct TernaryMaskRecord {
  uint16_t plus_lo;
  uint16_t plus_hi;
  uint16_t minus_lo;
  uint16_t minus_hi;
};
static_assert(sizeof(TernaryMaskRecord) == 8);

// AVX-512 permute record (8 bytes, one uint64): slot bytes whose low 5 bits are
// the offset (0..27) of a nonzero weight, or kPermPad (28) for an unused slot.
// Lane l (0..7) of the kernel's index vector reads byte 4 * (l % 2) + l / 2 (what
// a qword broadcast plus per-lane right shifts by 8 * (l / 2) yields); lanes 0-3
// are the w_max slots, 4-7 the w_min slots. Bits 5-7 of bytes 0 and 1 hold the
// entry length: length = (byte0 >> 5) | ((byte1 >> 5) << 3).
inline constexpr uint32_t kPermSlotsPerSign = 4;
inline constexpr uint8_t kPermPad = 28;
constexpr uint32_t perm_lane_byte(uint32_t lane) { return 4 * (lane % 2) + lane / 2; }
constexpr uint32_t perm_record_length(uint64_t r) {
  return static_cast<uint32_t>(((r >> 5) & 7u) | (((r >> 13) & 7u) << 3));
}

// Slot records: per entry 2 * slot_count bytes, first slot_count for the w_max
// weights, then slot_count for the w_min weights, in increasing offset. A used
// slot holds 2 * offset, an unused one kSlotPad (1). Kernels read activations in
// the "doubled" layout where column c occupies rows 2c (its values) and 2c + 1
// (zeros), so slot byte b at column c addresses row 2c + b and an unused slot
// adds zeros without a branch.
inline constexpr uint8_t kSlotPad = 1;

struct TernaryKernelTable {
  const ternary::DictEntry* source = nullptr;  // the dictionary this was built from
  uint32_t max_length = 0;      // longest entry, in weights (1..28)
  uint32_t slot_count = 0;      // max over entries of max(#w_max, #w_min), >= 1
  bool has_perm = false;        // slot_count <= kPermSlotsPerSign

  AlignedBuffer<uint8_t> lengths;          // kDictEntries
  AlignedBuffer<uint64_t> sign_masks;      // bits 0..27 w_max, bits 32..59 w_min
  AlignedBuffer<TernaryMaskRecord> masks;  // kDictEntries
  AlignedBuffer<uint64_t> perm;            // kDictEntries when has_perm, else empty
  AlignedBuffer<uint8_t> slots;            // kDictEntries * 2 * slot_count

  TernaryKernelTable() = default;
  TernaryKernelTable(TernaryKernelTable&&) noexcept = default;
  TernaryKernelTable& operator=(TernaryKernelTable&&) noexcept = default;

  const uint8_t* slot_record(uint32_t code) const { return slots.data() + static_cast<size_t>(code) * 2 * slot_count; }
};

// Validates every entry (ternary::validate_dictionary_table rules) and builds all
// forms. dict: kDictEntries entries.
Result<TernaryKernelTable> build_ternary_kernel_table(const ternary::DictEntry* dict);

}  // namespace submoe::kernels
