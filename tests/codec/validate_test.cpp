// validate_packed rejects each class of corruption with a message, and random
// corruption never makes validation or decoding misbehave (run under ASan).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codec_test_util.h"

namespace submoe::ternary {
namespace {

// A valid matrix as separate mutable arrays.
struct Parts {
  uint32_t rows = 6, cols = 50;
  std::vector<uint16_t> codes;
  std::vector<int32_t> offsets;
  std::vector<RowScales> scales;
  std::vector<DictEntry> dict;  // a copy only when a test corrupts it

  Parts() {
    static const PackedTernaryMatrix m =
        encode_ternary(submoe::testing::random_symbols(size_t{6} * 50, 0.7, 4), 6, 50,
                       submoe::testing::random_scales(6, 4), submoe::testing::tunstall_dict_0885())
            .value();
    codes.assign(m.codes().begin(), m.codes().end());
    offsets.assign(m.row_offsets().begin(), m.row_offsets().end());
    scales.assign(m.scales().begin(), m.scales().end());
  }
  void copy_dict() {
    const auto& d = submoe::testing::tunstall_dict_0885();
    dict.assign(d.entry_span().begin(), d.entry_span().end());
  }
  PackedTernaryView view() const {
    return {rows, cols, codes.data(), codes.size(), offsets.data(), scales.data(),
            dict.empty() ? submoe::testing::tunstall_dict_0885().entries() : dict.data()};
  }
};

void expect_rejected(const PackedTernaryView& v, const char* needle) {
  const Status st = validate_packed(v);
  ASSERT_FALSE(st.is_ok()) << needle;
  EXPECT_NE(st.message().find(needle), std::string::npos) << "message: " << st.message();
  EXPECT_FALSE(decode_symbols(v).is_ok());
  EXPECT_FALSE(decode_to_float(v).is_ok());
  EXPECT_FALSE(compute_ledger(v).is_ok());
}

TEST(ValidatePacked, AcceptsTheEncoderOutput) {
  Parts p;
  EXPECT_TRUE(validate_packed(p.view()).is_ok());
}

TEST(ValidatePacked, RejectsNullPointers) {
  Parts p;
  PackedTernaryView v = p.view();
  v.dict = nullptr;
  expect_rejected(v, "dictionary");
  v = p.view();
  v.row_offsets = nullptr;
  expect_rejected(v, "row_offsets");
  v = p.view();
  v.scales = nullptr;
  expect_rejected(v, "scales");
  v = p.view();
  v.codes = nullptr;
  expect_rejected(v, "codes");
}

TEST(ValidatePacked, RejectsBadRowOffsets) {
  {
    Parts p;
    p.offsets[0] = 1;
    expect_rejected(p.view(), "row_offsets[0]");
  }
  {
    Parts p;
    p.offsets[3] = p.offsets[2] - 1;
    expect_rejected(p.view(), "decrease");
  }
  {
    Parts p;  // an inner offset far past the end (would read out of range)
    p.offsets[2] = 1 << 30;
    expect_rejected(p.view(), "past the last offset");
  }
  {
    Parts p;  // truncated codes buffer
    PackedTernaryView v = p.view();
    v.num_codes -= 1;
    expect_rejected(v, "truncated");
  }
  {
    Parts p;  // oversized codes buffer
    p.codes.push_back(0);
    expect_rejected(p.view(), "codes buffer");
  }
}

TEST(ValidatePacked, RejectsRowsThatOverrunOrStopShort) {
  {
    Parts p;  // one more codeword in row 1: it starts past the row end
    p.codes.insert(p.codes.begin() + p.offsets[2], uint16_t{0});
    for (uint32_t r = 2; r <= p.rows; ++r) p.offsets[r]++;
    expect_rejected(p.view(), "past the row width");
  }
  {
    Parts p;  // row 1 loses its last codeword
    p.codes.erase(p.codes.begin() + p.offsets[2] - 1);
    for (uint32_t r = 2; r <= p.rows; ++r) p.offsets[r]--;
    expect_rejected(p.view(), "truncated row");
  }
  {
    Parts p;  // a width smaller than the codewords cover
    p.cols = 10;
    expect_rejected(p.view(), "past the row width");
  }
  {
    Parts p;  // zero width with codewords
    p.cols = 0;
    expect_rejected(p.view(), "empty row");
  }
}

TEST(ValidatePacked, RejectsBadScales) {
  Parts p;
  p.scales[3].w_min = float_to_bf16(0.5f);
  expect_rejected(p.view(), "w_min <= 0 <= w_max");
  Parts q;
  q.scales[0].w_max = bf16_t{0x7fc0};
  expect_rejected(q.view(), "NaN");
  Parts r;
  r.scales[5].w_min = bf16_t{0xff80};
  expect_rejected(r.view(), "infinite");
}

TEST(ValidatePacked, RejectsImpossibleDictionaryEntries) {
  const std::pair<DictEntry, const char*> bad[] = {
      {DictEntry{{0, 0}}, "not in 1..14"},
      {DictEntry{{15, 15}}, "not in 1..14"},
      {DictEntry{{3, 4}}, "word 1"},
      {DictEntry{{2u | (3u << 6), 2}}, "absent"},
      {DictEntry{{1u | (2u << 10), 1}}, "unused slot"},
  };
  for (const auto& [entry, needle] : bad) {
    Parts p;
    p.copy_dict();
    p.dict[40000] = entry;
    expect_rejected(p.view(), needle);
    expect_rejected(p.view(), "entry 40000");
  }
}

TEST(ValidatePacked, EmptyShapes) {
  const DictEntry* d = submoe::testing::qmoe_dict_0885().entries();
  const int32_t zero_offsets[5] = {0, 0, 0, 0, 0};
  const RowScales scales[4] = {};
  EXPECT_TRUE(validate_packed({0, 9, nullptr, 0, zero_offsets, nullptr, d}).is_ok());
  EXPECT_TRUE(validate_packed({4, 0, nullptr, 0, zero_offsets, scales, d}).is_ok());
  EXPECT_FALSE(validate_packed({4, 3, nullptr, 0, zero_offsets, scales, d}).is_ok());  // rows need codes
  auto s = decode_symbols({4, 0, nullptr, 0, zero_offsets, scales, d});
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(s->empty());
}

TEST(MakePackedView, ChecksBufferSizes) {
  Parts p;
  auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  auto ok = make_packed_view(p.rows, p.cols, bytes(p.codes), bytes(p.offsets), bytes(p.scales), p.view().dict);
  ASSERT_TRUE(ok.is_ok());
  EXPECT_TRUE(validate_packed(*ok).is_ok());
  EXPECT_FALSE(make_packed_view(p.rows, p.cols, bytes(p.codes).first(3), bytes(p.offsets), bytes(p.scales), p.view().dict).is_ok());
  EXPECT_FALSE(make_packed_view(p.rows, p.cols, bytes(p.codes), bytes(p.offsets).first(p.rows * 4), bytes(p.scales), p.view().dict).is_ok());
  EXPECT_FALSE(make_packed_view(p.rows, p.cols, bytes(p.codes), bytes(p.offsets), bytes(p.scales).first(4), p.view().dict).is_ok());
  EXPECT_FALSE(make_packed_view(p.rows + 1, p.cols, bytes(p.codes), bytes(p.offsets), bytes(p.scales), p.view().dict).is_ok());
  // Misaligned codes (an odd byte address) are refused, not read.
  std::vector<std::byte> shifted(p.codes.size() * 2 + 1);
  std::memcpy(shifted.data() + 1, p.codes.data(), p.codes.size() * 2);
  EXPECT_EQ(make_packed_view(p.rows, p.cols, std::span(shifted).subspan(1), bytes(p.offsets), bytes(p.scales), p.view().dict)
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  // A codes buffer cut short by whole codewords passes the size check and is
  // caught by validation.
  auto cut = make_packed_view(p.rows, p.cols, bytes(p.codes).first(p.codes.size() * 2 - 2), bytes(p.offsets),
                              bytes(p.scales), p.view().dict);
  ASSERT_TRUE(cut.is_ok());
  EXPECT_FALSE(validate_packed(*cut).is_ok());
}

// Random byte corruption of codes, offsets and scales: validation either
// accepts (and then decoding succeeds) or rejects; nothing reads out of range.
// The row rules of docs/format.md 5.3 checked codeword by codeword, as
// written: the scalar reference of the validator's table-and-sum pass.
bool reference_valid(const PackedTernaryView& v) {
  if (v.row_offsets[0] != 0 || static_cast<size_t>(v.row_offsets[v.rows]) != v.num_codes) return false;
  for (uint32_t r = 0; r < v.rows; ++r) {
    const int32_t begin = v.row_offsets[r], end = v.row_offsets[r + 1];
    if (end < begin || end > v.row_offsets[v.rows]) return false;
    const float lo = bf16_to_float(v.scales[r].w_min), hi = bf16_to_float(v.scales[r].w_max);
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > 0 || hi < 0) return false;
    if (v.cols == 0 && end != begin) return false;
    uint64_t col = 0;
    for (int32_t i = begin; i < end; ++i) {
      if (col >= v.cols) return false;
      col += entry_length(v.dict[v.codes[i]]);
    }
    if (col < v.cols) return false;
  }
  return true;
}

TEST(ValidatePacked, DictionaryLengthTableMatchesEveryEntry) {
  const auto& d = submoe::testing::tunstall_dict_0885();
  for (uint32_t c = 0; c < kDictEntries; ++c) ASSERT_EQ(d.entry_lengths()[c], entry_length(d.entries()[c])) << c;
}

TEST(ValidatePacked, SurvivesRandomCorruption) {
  std::mt19937_64 rng(123);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Parts p;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const uint64_t which = rng() % 3;
      uint8_t* base;
      size_t size;
      if (which == 0) {
        base = reinterpret_cast<uint8_t*>(p.codes.data()), size = p.codes.size() * 2;
      } else if (which == 1) {
        base = reinterpret_cast<uint8_t*>(p.offsets.data()), size = p.offsets.size() * 4;
      } else {
        base = reinterpret_cast<uint8_t*>(p.scales.data()), size = p.scales.size() * 4;
      }
      base[rng() % size] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    const bool ok = validate_packed(p.view()).is_ok();
    // The fast pass, with the dictionary's table or its own, agrees with the reference.
    EXPECT_EQ(reference_valid(p.view()), ok) << "trial " << trial;
    EXPECT_EQ(validate_packed_with_trusted_dict(p.view(), submoe::testing::tunstall_dict_0885().entry_lengths()).is_ok(), ok);
    if (ok) {
      ++accepted;
      auto s = decode_symbols(p.view());
      ASSERT_TRUE(s.is_ok());
      EXPECT_EQ(s->size(), size_t{p.rows} * p.cols);
    } else {
      ++rejected;
    }
  }
  // Codeword flips mostly stay valid; offset flips mostly not. Both happen.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 50);
}

}  // namespace
}  // namespace submoe::ternary
