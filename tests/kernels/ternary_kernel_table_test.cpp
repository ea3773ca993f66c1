// The per-dictionary kernel table against the dictionary's own symbols, for both
// codes and several p0, and its rejection of corrupt dictionaries.
#include "submoe/kernels/ternary_kernel_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernel_test_support.h"

namespace submoe::kernels {
namespace {

using ternary::DictKind;

void check_table(const testing::DictFixture& fx) {
  const TernaryKernelTable& t = fx.table;
  ASSERT_EQ(t.source, fx.dict.entries());
  uint32_t max_per_sign = 0, max_len = 0;
  for (uint32_t i = 0; i < ternary::kDictEntries; ++i) {
    uint8_t sym[ternary::kMaxWeightsPerEntry];
    const uint32_t n = ternary::dict_entry_symbols(fx.dict.entries()[i], sym);
    ASSERT_EQ(t.lengths[i], n) << "entry " << i;
    max_len = std::max(max_len, n);
    std::vector<uint32_t> plus, minus;
    for (uint32_t k = 0; k < n; ++k) {
      if (sym[k] == ternary::kSymbolMax) plus.push_back(k);
      if (sym[k] == ternary::kSymbolMin) minus.push_back(k);
    }
    max_per_sign = std::max<uint32_t>({max_per_sign, static_cast<uint32_t>(plus.size()),
                                       static_cast<uint32_t>(minus.size())});
    // Masks.
    uint32_t pm = 0, mm = 0;
    for (uint32_t k : plus) pm |= 1u << k;
    for (uint32_t k : minus) mm |= 1u << k;
    ASSERT_EQ(t.sign_masks[i], pm | (static_cast<uint64_t>(mm) << 32)) << "entry " << i;
    ASSERT_EQ(t.masks[i].plus_lo | (static_cast<uint32_t>(t.masks[i].plus_hi) << 16), pm);
    ASSERT_EQ(t.masks[i].minus_lo | (static_cast<uint32_t>(t.masks[i].minus_hi) << 16), mm);
    // Slots: doubled offsets in order, then the pad.
    const uint8_t* rec = t.slot_record(i);
    for (uint32_t s = 0; s < t.slot_count; ++s) {
      ASSERT_EQ(rec[s], s < plus.size() ? 2 * plus[s] : kSlotPad) << "entry " << i << " slot " << s;
      ASSERT_EQ(rec[t.slot_count + s], s < minus.size() ? 2 * minus[s] : kSlotPad) << "entry " << i;
    }
    // Permute record, decoded the way the AVX-512 kernel reads it.
    if (t.has_perm) {
      const uint64_t r = t.perm[i];
      ASSERT_EQ(perm_record_length(r), n) << "entry " << i;
      for (uint32_t l = 0; l < 8; ++l) {
        const uint32_t idx = (r >> (8 * perm_lane_byte(l))) & 31u;
        const std::vector<uint32_t>& list = l < 4 ? plus : minus;
        const uint32_t s = l % 4;
        ASSERT_EQ(idx, s < list.size() ? list[s] : kPermPad) << "entry " << i << " lane " << l;
      }
    }
  }
  EXPECT_EQ(t.slot_count, std::max(1u, max_per_sign));
  EXPECT_EQ(t.max_length, max_len);
  EXPECT_EQ(t.has_perm, t.slot_count <= kPermSlotsPerSign);
  EXPECT_EQ(t.perm.empty(), !t.has_perm);
}

TEST(TernaryKernelTable, MatchesDictionarySymbols) {
  check_table(testing::dict_fixture(DictKind::kQmoe, 0.885));
  check_table(testing::dict_fixture(DictKind::kTunstall, 0.885));
  check_table(testing::dict_fixture(DictKind::kQmoe, 0.5));
}

TEST(TernaryKernelTable, DefaultCodesFitThePermuteKernel) {
  // The fast batch-1 AVX-512 kernel needs <= 4 w_max and <= 4 w_min per entry;
  // QMoE's default dictionary has at most 3 of each.
  EXPECT_TRUE(testing::dict_fixture(DictKind::kQmoe, 0.885).table.has_perm);
  EXPECT_EQ(testing::dict_fixture(DictKind::kQmoe, 0.885).table.slot_count, 3u);
  EXPECT_TRUE(testing::dict_fixture(DictKind::kTunstall, 0.885).table.has_perm);
}

TEST(TernaryKernelTable, RejectsCorruptDictionary) {
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  std::vector<ternary::DictEntry> entries(fx.dict.entries(), fx.dict.entries() + ternary::kDictEntries);
  entries[123].word[0] = (entries[123].word[0] & ~0xFu) | 15u;  // 15 pairs: impossible length
  EXPECT_FALSE(build_ternary_kernel_table(entries.data()).is_ok());
  entries[123] = fx.dict.entries()[123];
  entries[77].word[1] = entries[77].word[1] ^ 1u;  // pair counts of the two words disagree
  EXPECT_FALSE(build_ternary_kernel_table(entries.data()).is_ok());
  EXPECT_FALSE(build_ternary_kernel_table(nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
