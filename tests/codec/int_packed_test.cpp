// The int codec against an independent bit-by-bit packer, a hand-computed
// golden row, exact float reconstruction, and every rejection rule of
// pack_int_codes / validate_packed_int / make_packed_int_view.
#include "submoe/codec/int_packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "submoe/core/bf16.h"

namespace submoe::intn {
namespace {

struct Grid {
  uint32_t rows, cols, bits, group_size;
  std::vector<uint8_t> codes;
  std::vector<float> scales, zeros;
};

// Random codes, f16-exact scales over several binades (some negative, some
// subnormal in f16) and integer zeros.
Grid random_grid(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t group_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Grid g{rows, cols, bits, group_size, {}, {}, {}};
  const uint32_t groups = int_groups_per_row(cols, group_size);
  g.codes.resize(static_cast<size_t>(rows) * cols);
  for (auto& c : g.codes) c = static_cast<uint8_t>(rng() % (1u << bits));
  g.scales.resize(static_cast<size_t>(rows) * groups);
  g.zeros.resize(g.scales.size());
  for (size_t i = 0; i < g.scales.size(); ++i) {
    const float raw = std::ldexp(static_cast<float>(rng() % 1000 + 1) / 1000.0f, static_cast<int>(rng() % 30) - 22);
    g.scales[i] = f16_bits_to_float(float_to_f16_bits((rng() % 7 == 0) ? -raw : raw));
    g.zeros[i] = static_cast<float>(rng() % (1u << bits));
  }
  return g;
}

// Independent packer: sets stream bit by bit, exactly as docs/format.md words it.
std::vector<uint8_t> pack_bitwise(const Grid& g) {
  const size_t row_bytes = (static_cast<size_t>(g.cols) * g.bits + 31) / 32 * 4;
  std::vector<uint8_t> out(row_bytes * g.rows, 0);
  for (uint32_t r = 0; r < g.rows; ++r)
    for (uint32_t c = 0; c < g.cols; ++c)
      for (uint32_t b = 0; b < g.bits; ++b)
        if ((g.codes[static_cast<size_t>(r) * g.cols + c] >> b) & 1u) {
          const size_t bit = static_cast<size_t>(c) * g.bits + b;
          out[r * row_bytes + bit / 8] = static_cast<uint8_t>(out[r * row_bytes + bit / 8] | (1u << (bit % 8)));
        }
  return out;
}

Result<PackedIntMatrix> pack(const Grid& g) {
  return pack_int_codes(g.codes, g.rows, g.cols, g.bits, g.group_size, g.scales, g.zeros);
}

TEST(IntPacked, GoldenRowOfFiveThreeBitCodes) {
  // Stream: 001 010 011 100 101 -> byte 0 = 1 | 2<<3 | (3&3)<<6 = 0xD1,
  // byte 1 = 3>>2 | 4<<1 | 5<<4 = 0x58, then padding to one 32-bit word.
  const Grid g{1, 5, 3, 0, {1, 2, 3, 4, 5}, {0.5f}, {2.0f}};
  auto m = pack(g);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_EQ(m->qweight().size(), 4u);
  EXPECT_EQ(m->qweight()[0], 0xD1);
  EXPECT_EQ(m->qweight()[1], 0x58);
  EXPECT_EQ(m->qweight()[2], 0);
  EXPECT_EQ(m->qweight()[3], 0);
  EXPECT_EQ(m->scales()[0], 0x3800);  // 0.5 in f16
  auto w = decode_int_to_float(m->view());
  ASSERT_TRUE(w.is_ok());
  EXPECT_EQ(*w, (std::vector<float>{-0.5f, 0.0f, 0.5f, 1.0f, 1.5f}));
}

TEST(IntPacked, RoundTripMatchesBitwisePackerOverShapesBitsAndGroups) {
  uint64_t seed = 1;
  size_t checked = 0;
  for (uint32_t bits : {2u, 3u, 4u}) {
    for (uint32_t gs : {0u, 32u, 64u, 128u}) {
      for (uint32_t cols : {1u, 7u, 8u, 31u, 32u, 33u, 100u, 129u, 257u}) {
        for (uint32_t rows : {1u, 3u, 6u}) {
          const Grid g = random_grid(rows, cols, bits, gs, seed++);
          auto m = pack(g);
          ASSERT_TRUE(m.is_ok()) << m.status().to_string();
          const std::string what = "bits " + std::to_string(bits) + " gs " + std::to_string(gs) + " " +
                                   std::to_string(rows) + "x" + std::to_string(cols);
          const std::vector<uint8_t> want = pack_bitwise(g);
          ASSERT_EQ(std::vector<uint8_t>(m->qweight().begin(), m->qweight().end()), want) << what;
          EXPECT_EQ(m->row_bytes() % 4, 0u);
          auto codes = decode_int_codes(m->view());
          ASSERT_TRUE(codes.is_ok()) << what;
          ASSERT_EQ(*codes, g.codes) << what;
          auto w = decode_int_to_float(m->view());
          ASSERT_TRUE(w.is_ok()) << what;
          const uint32_t groups = int_groups_per_row(cols, gs);
          for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < cols; ++c) {
              const size_t gi = static_cast<size_t>(r) * groups + (gs ? c / gs : 0);
              const double ref = static_cast<double>(g.scales[gi]) *
                                 (static_cast<double>(g.codes[static_cast<size_t>(r) * cols + c]) - g.zeros[gi]);
              // Exact: an f16 scale times a 4-bit integer fits in a float.
              ASSERT_EQ(static_cast<double>((*w)[static_cast<size_t>(r) * cols + c]), ref) << what;
              ++checked;
            }
          // Copying the parts gives the same matrix.
          auto copy = PackedIntMatrix::from_parts(rows, cols, bits, gs, m->qweight(), m->scales(), m->zeros());
          ASSERT_TRUE(copy.is_ok()) << copy.status().to_string();
          EXPECT_EQ(std::memcmp(copy->qweight().data(), m->qweight().data(), m->qweight().size()), 0);
        }
      }
    }
  }
  EXPECT_GT(checked, 10000u);
}

TEST(IntPacked, PackIsDeterministic) {
  const Grid g = random_grid(5, 77, 3, 32, 99);
  auto a = pack(g), b = pack(g);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(std::vector<uint8_t>(a->qweight().begin(), a->qweight().end()),
            std::vector<uint8_t>(b->qweight().begin(), b->qweight().end()));
}

TEST(IntPacked, SizesAndBitsPerWeight) {
  EXPECT_EQ(int_row_bytes(1, 2), 4u);
  EXPECT_EQ(int_row_bytes(16, 2), 4u);
  EXPECT_EQ(int_row_bytes(17, 2), 8u);
  EXPECT_EQ(int_row_bytes(11, 3), 8u);  // 33 bits
  EXPECT_EQ(int_groups_per_row(100, 0), 1u);
  EXPECT_EQ(int_groups_per_row(100, 32), 4u);
  EXPECT_EQ(int_groups_per_row(128, 128), 1u);
  // 4 bits + (16 + 8) / 128 per weight, no padding at 1024 columns.
  EXPECT_DOUBLE_EQ(packed_int_bits_per_weight(8, 1024, 4, 128), 4.0 + 24.0 / 128.0);
  EXPECT_EQ(packed_int_bytes(3, 100, 3, 32), 3u * 40u + 3u * 4u * 3u);
}

TEST(IntPacked, PackRejectsBadGridsNamingTheProblem) {
  Grid g = random_grid(2, 40, 2, 32, 5);
  auto expect_error = [](const Grid& x, const std::string& needle) {
    auto m = pack(x);
    ASSERT_FALSE(m.is_ok()) << needle;
    EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  };
  for (float bad : {0.1f, NAN, INFINITY, 65536.0f, 1e-9f}) {
    Grid x = g;
    x.scales[3] = bad;
    expect_error(x, "row 1 group 1: scale");
  }
  for (float bad : {2.5f, -1.0f, 4.0f, NAN}) {
    Grid x = g;
    x.zeros[2] = bad;
    expect_error(x, "row 1 group 0: zero");
  }
  {
    Grid x = g;
    x.codes[45] = 4;
    expect_error(x, "code 4 at row 1 column 5");
  }
  for (uint32_t bits : {0u, 1u, 5u, 8u}) {
    Grid x = g;
    x.bits = bits;
    expect_error(x, "bits");
  }
  for (uint32_t gs : {1u, 16u, 48u, 256u}) {
    Grid x = g;
    x.group_size = gs;
    expect_error(x, "group_size");
  }
  {
    Grid x = g;
    x.codes.pop_back();
    expect_error(x, "codes for");
  }
  {
    Grid x = g;
    x.scales.push_back(1.0f);
    expect_error(x, "groups");
  }
  EXPECT_FALSE(pack_int_codes({}, 0, 4, 2, 0, {}, {}).is_ok());
  EXPECT_FALSE(pack_int_codes({}, 4, 0, 2, 0, std::vector<float>(4, 1.0f), std::vector<float>(4, 0.0f)).is_ok());
}

TEST(IntPacked, ValidateRejectsCorruptPaddingScalesZerosAndSizes) {
  const Grid g = random_grid(3, 37, 3, 32, 11);  // 111 bits per row: 17 padding bits
  auto m = pack(g);
  ASSERT_TRUE(m.is_ok());
  std::vector<uint8_t> q(m->qweight().begin(), m->qweight().end());
  std::vector<uint16_t> s(m->scales().begin(), m->scales().end());
  std::vector<uint8_t> z(m->zeros().begin(), m->zeros().end());
  const size_t rb = m->row_bytes();
  ASSERT_EQ(rb, 16u);
  auto view = [&] { return PackedIntView{3, 37, 3, 32, q.data(), rb, s.data(), z.data()}; };
  ASSERT_TRUE(validate_packed_int(view()).is_ok());

  // Every padding bit of row 1: 37 * 3 = 111 used bits, bits 111..127 padding.
  for (uint32_t bit = 111; bit < 128; ++bit) {
    q[rb + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    Status st = validate_packed_int(view());
    EXPECT_FALSE(st.is_ok()) << bit;
    EXPECT_NE(st.message().find("row 1"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("padding"), std::string::npos) << st.message();
    q[rb + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
  // A flipped used bit is a different, still valid matrix.
  q[rb] ^= 1;
  EXPECT_TRUE(validate_packed_int(view()).is_ok());
  q[rb] ^= 1;

  for (uint16_t bad : {uint16_t{0x7c00}, uint16_t{0xfc00}, uint16_t{0x7e00}, uint16_t{0x7c01}}) {
    const uint16_t keep = s[3];
    s[3] = bad;
    Status st = validate_packed_int(view());
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("row 1 group 1: scale"), std::string::npos) << st.message();
    s[3] = keep;
  }
  z[5] = 8;
  {
    Status st = validate_packed_int(view());
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("row 2 group 1: zero 8"), std::string::npos) << st.message();
  }
  z[5] = 7;
  EXPECT_TRUE(validate_packed_int(view()).is_ok());

  PackedIntView v = view();
  v.row_bytes = 12;
  EXPECT_NE(validate_packed_int(v).message().find("row_bytes"), std::string::npos);
  v = view();
  v.scales = nullptr;
  EXPECT_FALSE(validate_packed_int(v).is_ok());
  v = view();
  v.bits = 5;
  EXPECT_FALSE(validate_packed_int(v).is_ok());
  EXPECT_FALSE(decode_int_to_float(v).is_ok());
}

TEST(IntPacked, MakeViewChecksByteSizesAndAlignment) {
  const Grid g = random_grid(4, 70, 4, 64, 3);
  auto m = pack(g);
  ASSERT_TRUE(m.is_ok());
  const auto qb = std::as_bytes(m->qweight());
  const auto sb = std::as_bytes(m->scales());
  const auto zb = std::as_bytes(m->zeros());
  auto v = make_packed_int_view(4, 70, 4, 64, qb, sb, zb);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_TRUE(validate_packed_int(*v).is_ok());
  EXPECT_EQ(*decode_int_codes(*v), g.codes);

  EXPECT_NE(make_packed_int_view(4, 70, 4, 64, qb.first(qb.size() - 1), sb, zb).status().message().find("qweight"),
            std::string::npos);
  EXPECT_NE(make_packed_int_view(4, 70, 4, 64, qb, sb.first(sb.size() - 2), zb).status().message().find("scales"),
            std::string::npos);
  EXPECT_NE(make_packed_int_view(4, 70, 4, 64, qb, sb, zb.first(zb.size() - 1)).status().message().find("zeros"),
            std::string::npos);
  EXPECT_FALSE(make_packed_int_view(4, 70, 4, 48, qb, sb, zb).is_ok());
  // Scales at an odd address.
  std::vector<std::byte> shifted(sb.size() + 1);
  std::memcpy(shifted.data() + 1, sb.data(), sb.size());
  auto mis = make_packed_int_view(4, 70, 4, 64, qb, std::span<const std::byte>(shifted).subspan(1), zb);
  ASSERT_FALSE(mis.is_ok());
  EXPECT_NE(mis.status().message().find("aligned"), std::string::npos);
}

TEST(IntPacked, RandomCorruptionIsRejectedOrDecodesFinite) {
  const Grid g = random_grid(5, 45, 3, 32, 17);
  auto m = pack(g);
  ASSERT_TRUE(m.is_ok());
  std::mt19937_64 rng(23);
  size_t rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> q(m->qweight().begin(), m->qweight().end());
    std::vector<uint16_t> s(m->scales().begin(), m->scales().end());
    std::vector<uint8_t> z(m->zeros().begin(), m->zeros().end());
    switch (rng() % 3) {
      case 0: q[rng() % q.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 1: s[rng() % s.size()] ^= static_cast<uint16_t>(1u << (rng() % 16)); break;
      default: z[rng() % z.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
    }
    auto copy = PackedIntMatrix::from_parts(5, 45, 3, 32, q, s, z);
    if (!copy.is_ok()) {
      ++rejected;
      continue;
    }
    auto w = decode_int_to_float(copy->view());
    ASSERT_TRUE(w.is_ok());
    for (float x : *w) ASSERT_TRUE(std::isfinite(x));
  }
  EXPECT_GT(rejected, 100u);
  EXPECT_LT(rejected, 2000u);
}

}  // namespace
}  // namespace submoe::intn
