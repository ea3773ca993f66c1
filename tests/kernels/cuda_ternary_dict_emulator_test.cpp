// The CUDA kernels' lane logic, run on the CPU (no GPU needed), against the
// codec's reference decoder and a float64 oracle.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <span>
#include <vector>

#include "kernels/cuda_test_support.h"
#include "submoe/codec/ternary_dict.h"
#include "submoe/kernels/cuda/ternary_dict_emulator.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda {
namespace {

using testing::dictionary;
using testing::edge_shapes;
using testing::issue_p0s;
using testing::make_activations;
using testing::make_matrix;
using testing::Shape;
using testing::shape_name;
using ternary::DictKind;

const DictKind kKinds[] = {DictKind::kQmoe, DictKind::kTunstall};

std::string case_name(DictKind kind, double p0, Shape s) {
  return std::string(ternary::dict_kind_name(kind)) + " p0=" + std::to_string(p0) + " " + shape_name(s);
}

TEST(CudaLaneLogic, EveryDictionaryEntryDecodesAsTheFormatSays) {
  for (DictKind kind : kKinds) {
    const ternary::DictEntry* entries = dictionary(kind).entries();
    uint32_t odd = 0;
    for (uint32_t i = 0; i < ternary::kDictEntries; ++i) {
      const ternary::DictEntry& e = entries[i];
      const uint32_t length = ternary::entry_length(e);
      ASSERT_EQ(cuda_lane::entry_advance(e.word[0], e.word[1]), length) << "entry " << i;
      odd += length % 2;
      for (uint32_t l = 0; l < cuda_lane::kWarpSize; ++l) {
        const uint32_t s = cuda_lane::lane_symbol(e.word[0], e.word[1], cuda_lane::lane_slot(l));
        if (l < cuda_lane::kActiveLanes) {
          ASSERT_EQ(s, ternary::entry_symbol(e, l)) << "entry " << i << " lane " << l;
        } else {
          ASSERT_EQ(s, 0u) << "idle lane " << l << " must read nothing";
        }
        // Exactly the weights of the entry contribute.
        ASSERT_EQ(cuda_lane::symbol_contributes(s), l < length && s != ternary::kSymbolZero) << "entry " << i;
      }
    }
    if (kind == DictKind::kTunstall) {
      EXPECT_GT(odd, 0u) << "a Tunstall table must exercise the odd-length (absent slot) path";
    } else {
      EXPECT_EQ(odd, 0u);
    }
  }
}

TEST(CudaLaneLogic, HandMadeEntriesOfEveryLength) {
  std::mt19937 rng(7);
  for (uint32_t length = 1; length <= ternary::kMaxWeightsPerEntry; ++length) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<uint8_t> symbols(length);
      for (auto& s : symbols) s = static_cast<uint8_t>(variant == 0 ? 0 : variant == 1 ? 2 : rng() % 3);
      auto e = ternary::make_dict_entry(symbols);
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      const ternary::DictEntry& entry = e.value();
      EXPECT_EQ(cuda_lane::entry_advance(entry.word[0], entry.word[1]), length);
      for (uint32_t l = 0; l < cuda_lane::kWarpSize; ++l) {
        const uint32_t s = cuda_lane::lane_symbol(entry.word[0], entry.word[1], cuda_lane::lane_slot(l));
        const uint32_t expect = l < length                          ? symbols[l]
                                : l == length && length % 2 == 1 ? uint32_t{ternary::kSymbolAbsent}
                                                                 : 0u;
        EXPECT_EQ(s, expect) << "length " << length << " lane " << l;
      }
    }
  }
}

TEST(CudaLaneLogic, ButterflyAddsInXorTreeOrder) {
  // 2^24 + 31 ones: a left-to-right float sum gives 2^24 (every 1 is lost), the
  // exact sum is 2^24 + 31, the xor tree 2^24 + 30 (only the first pair rounds).
  float v[32];
  v[0] = 0x1p24f;
  for (int l = 1; l < 32; ++l) v[l] = 1.0f;
  EXPECT_EQ(cuda_lane::butterfly_sum_emulated(v), 0x1p24f + 30.0f);
  // Integers sum exactly in any order.
  for (int l = 0; l < 32; ++l) v[l] = static_cast<float>(l * l - 100);
  float expect = 0;
  for (int l = 0; l < 32; ++l) expect += static_cast<float>(l * l - 100);
  EXPECT_EQ(cuda_lane::butterfly_sum_emulated(v), expect);
}

TEST(CudaLaneLogic, TileGeometry) {
  EXPECT_EQ(cuda_lane::tile_count(0, 32), 1u);
  EXPECT_EQ(cuda_lane::tile_count(1, 32), 1u);
  EXPECT_EQ(cuda_lane::tile_count(32, 32), 1u);
  EXPECT_EQ(cuda_lane::tile_count(33, 32), 2u);
  EXPECT_EQ(cuda_lane::tile_end(1, 32, 40), 40u);
  EXPECT_EQ(cuda_lane::tile_end(0, 32, 40), 32u);
  EXPECT_EQ(cuda_lane::single_tile_cols(0), 32u);
  EXPECT_EQ(cuda_lane::single_tile_cols(6144), 6144u);
  EXPECT_EQ(cuda_lane::single_tile_cols(2081), 2112u);
  for (uint32_t b = 1; b <= cuda_lane::kMaxBatch; ++b) {
    const uint32_t slots = cuda_lane::batch_slots_for(b);
    EXPECT_GE(slots, b);
    EXPECT_LT(slots, 2 * b);
    EXPECT_TRUE(std::has_single_bit(slots));
  }
}

// The symbols every lane multiplies, at the columns it multiplies them with,
// equal the reference decoder's output; tiles of 32 and 96 columns force rows to
// resume in later tiles with codewords straddling tile ends.
TEST(CudaEmulator, LaneDecodeEqualsReferenceDecoder) {
  uint64_t seed = 1;
  for (DictKind kind : kKinds) {
    for (double p0 : issue_p0s()) {
      for (Shape shape : edge_shapes()) {
        const auto m = make_matrix(shape, p0, kind, seed++);
        auto expect = ternary::decode_symbols(m.packed.view());
        ASSERT_TRUE(expect.is_ok()) << expect.status().to_string();
        ASSERT_EQ(expect.value(), m.symbols);
        for (uint32_t tile : {cuda_lane::single_tile_cols(shape.cols), 32u, 96u}) {
          auto got = emulate_lane_decode_symbols(m.packed.view(), tile);
          ASSERT_TRUE(got.is_ok()) << case_name(kind, p0, shape) << ": " << got.status().to_string();
          ASSERT_EQ(got.value(), expect.value()) << case_name(kind, p0, shape) << " tile " << tile;
        }
      }
    }
  }
}

TEST(CudaEmulator, GemmWithinFloatBoundOfFloat64Oracle) {
  uint64_t seed = 100;
  for (DictKind kind : kKinds) {
    for (double p0 : issue_p0s()) {
      for (Shape shape : edge_shapes()) {
        const auto m = make_matrix(shape, p0, kind, seed++);
        for (uint32_t batch : {1u, 3u, 8u}) {
          const auto x = make_activations(batch, shape.cols, seed++);
          for (uint32_t tile : {cuda_lane::single_tile_cols(shape.cols), 64u}) {
            std::vector<float> y(static_cast<size_t>(batch) * shape.rows, -1.0f);
            ASSERT_TRUE(emulate_gemm_f32_ternary_dict_cuda(m.packed.view(), x, batch, y, tile).is_ok());
            const auto oracle = testing::float64_oracle(m, x, batch, cuda_lane::tile_count(shape.cols, tile));
            ASSERT_EQ(testing::count_oracle_violations(oracle, y, shape.rows,
                                                       case_name(kind, p0, shape) + " batch " +
                                                           std::to_string(batch) + " tile " + std::to_string(tile)),
                      0);
          }
        }
      }
    }
  }
}

// Decoding a codeword once for all B tokens must give each token exactly what a
// batch-1 launch gives it: the per-token arithmetic is the same sequence.
TEST(CudaEmulator, EveryBatchSizeEqualsBatchOneBitForBit) {
  const Shape shape{19, 150};
  const auto m = make_matrix(shape, 0.885, DictKind::kTunstall, 4242);
  const auto x = make_activations(cuda_lane::kMaxBatch, shape.cols, 77);
  std::vector<std::vector<float>> single(cuda_lane::kMaxBatch);
  for (uint32_t t = 0; t < cuda_lane::kMaxBatch; ++t) {
    single[t].resize(shape.rows);
    ASSERT_TRUE(emulate_gemm_f32_ternary_dict_cuda(
                    m.packed.view(), std::span<const float>(x).subspan(static_cast<size_t>(t) * shape.cols, shape.cols),
                    1, single[t], 64)
                    .is_ok());
  }
  for (uint32_t batch = 1; batch <= cuda_lane::kMaxBatch; ++batch) {
    std::vector<float> y(static_cast<size_t>(batch) * shape.rows);
    ASSERT_TRUE(emulate_gemm_f32_ternary_dict_cuda(
                    m.packed.view(), std::span<const float>(x).first(static_cast<size_t>(batch) * shape.cols), batch,
                    y, 64)
                    .is_ok());
    for (uint32_t t = 0; t < batch; ++t) {
      const std::vector<float> token(y.begin() + static_cast<ptrdiff_t>(t) * shape.rows,
                                     y.begin() + static_cast<ptrdiff_t>(t + 1) * shape.rows);
      ASSERT_EQ(testing::count_bit_mismatches(token, single[t], shape.rows,
                                              "batch " + std::to_string(batch) + " token " + std::to_string(t)),
                0);
    }
  }
}

TEST(CudaEmulator, Bf16ActivationsAreTheirFloatValues) {
  uint64_t seed = 900;
  for (Shape shape : {Shape{33, 31}, Shape{13, 333}, Shape{4, 1000}}) {
    const auto m = make_matrix(shape, 0.8, DictKind::kQmoe, seed++);
    for (uint32_t batch : {1u, 5u}) {
      const auto xb = testing::to_bf16(make_activations(batch, shape.cols, seed++));
      const auto xf = testing::from_bf16(xb);
      std::vector<float> yb(static_cast<size_t>(batch) * shape.rows);
      std::vector<float> yf(yb.size());
      const uint32_t tile = 64;
      ASSERT_TRUE(emulate_gemm_bf16_ternary_dict_cuda(m.packed.view(), xb, batch, yb, tile).is_ok());
      ASSERT_TRUE(emulate_gemm_f32_ternary_dict_cuda(m.packed.view(), xf, batch, yf, tile).is_ok());
      EXPECT_EQ(testing::count_bit_mismatches(yb, yf, shape.rows, shape_name(shape)), 0);
      const auto oracle = testing::float64_oracle(m, xf, batch, cuda_lane::tile_count(shape.cols, tile));
      EXPECT_EQ(testing::count_oracle_violations(oracle, yb, shape.rows, shape_name(shape)), 0);
    }
  }
}

TEST(CudaEmulator, RejectsBadArguments) {
  const auto m = make_matrix({5, 40}, 0.885, DictKind::kQmoe, 3);
  std::vector<float> x(40 * 2);
  std::vector<float> y(5 * 2);
  const auto v = m.packed.view();
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, std::span(x).first(40), 0, std::span(y).first(0), 64).code(),
            ErrorCode::kInvalidArgument);
  std::vector<float> x65(40 * 65);
  std::vector<float> y65(5 * 65);
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, x65, 65, y65, 64).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, x, 2, y, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, x, 2, y, 48).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, std::span(x).first(79), 2, y, 64).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(emulate_gemm_f32_ternary_dict_cuda(v, x, 2, std::span(y).first(9), 64).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(emulate_lane_decode_symbols(v, 31).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(emulate_gemm_f32_ternary_dict_cuda(v, x, 2, y, 64).is_ok());
}

TEST(CudaEmulator, RejectsCorruptMatrices) {
  const auto m = make_matrix({6, 100}, 0.885, DictKind::kQmoe, 5);
  std::vector<float> x(100);
  std::vector<float> y(6);
  // Row offsets that go backwards.
  std::vector<int32_t> offsets(m.packed.row_offsets().begin(), m.packed.row_offsets().end());
  std::swap(offsets[2], offsets[3]);
  auto v = m.packed.view();
  v.row_offsets = offsets.data();
  EXPECT_FALSE(emulate_gemm_f32_ternary_dict_cuda(v, x, 1, y, 128).is_ok());
  EXPECT_FALSE(emulate_lane_decode_symbols(v, 128).is_ok());
  // A truncated code stream (the last row loses its codewords).
  v = m.packed.view();
  v.num_codes -= 1;
  EXPECT_FALSE(emulate_gemm_f32_ternary_dict_cuda(v, x, 1, y, 128).is_ok());
  // A dictionary entry with an impossible length.
  std::vector<ternary::DictEntry> dict(m.packed.dict(), m.packed.dict() + ternary::kDictEntries);
  dict[m.packed.codes()[0]].word[0] &= ~0xFu;
  v = m.packed.view();
  v.dict = dict.data();
  EXPECT_FALSE(emulate_gemm_f32_ternary_dict_cuda(v, x, 1, y, 128).is_ok());
  v.dict = nullptr;
  EXPECT_FALSE(emulate_lane_decode_symbols(v, 128).is_ok());
}

}  // namespace
}  // namespace submoe::kernels::cuda
