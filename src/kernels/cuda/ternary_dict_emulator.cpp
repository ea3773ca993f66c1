// Mirrors ternary_dict_kernels.cu statement by statement where the result
// depends on it; comments name the kernel step each block replays.
#include "submoe/kernels/cuda/ternary_dict_emulator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <string>

#include "submoe/codec/ternary_packed.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda {

namespace lane = cuda_lane;

namespace {

constexpr uint32_t kWarp = lane::kWarpSize;

struct LaneTable {
  std::array<lane::LaneSlot, kWarp> slot;
  LaneTable() {
    for (uint32_t l = 0; l < kWarp; ++l) slot[l] = lane::lane_slot(l);
  }
};

// Where a row stands between tiles (the kernel keeps this in shared memory).
struct RowState {
  uint32_t code = 0;
  uint32_t col = 0;
};

// Replays the kernel's codeword loop for one row and one tile [t0, t1): the
// lane-parallel fetch of up to 32 codewords, the inclusive scan of their
// advances, the in-tile ballot, then the codewords in order. Calls
// visit(w0, w1, start_column, advance) per codeword; returns the new state.
template <typename Visit>
RowState walk_row_tile(const ternary::PackedTernaryView& w, uint32_t r, RowState s, uint32_t t1, Visit&& visit) {
  const auto code_end = static_cast<uint32_t>(w.row_offsets[r + 1]);
  for (;;) {
    const uint32_t remaining = code_end - s.code;
    const uint32_t avail = remaining < lane::kCodesPerChunk ? remaining : lane::kCodesPerChunk;
    std::array<uint32_t, kWarp> w0{};
    std::array<uint32_t, kWarp> w1{};
    std::array<uint32_t, kWarp> advance{};
    for (uint32_t l = 0; l < avail; ++l) {
      const ternary::DictEntry& e = w.dict[w.codes[static_cast<size_t>(s.code) + l]];
      w0[l] = e.word[0];
      w1[l] = e.word[1];
      advance[l] = lane::entry_advance(w0[l], w1[l]);
    }
    std::array<uint32_t, kWarp> inclusive{};
    uint32_t running = 0;
    for (uint32_t l = 0; l < kWarp; ++l) inclusive[l] = running += advance[l];
    uint32_t ballot = 0;
    for (uint32_t l = 0; l < kWarp; ++l) {
      const uint32_t exclusive = inclusive[l] - advance[l];
      if (l < avail && s.col + exclusive < t1) ballot |= 1u << l;
    }
    const auto count = static_cast<uint32_t>(std::popcount(ballot));
    for (uint32_t j = 0; j < count; ++j) {
      visit(w0[j], w1[j], s.col + inclusive[j] - advance[j], advance[j]);
    }
    if (count > 0) {
      s.col += inclusive[count - 1];
      s.code += count;
    }
    if (count < lane::kCodesPerChunk) break;
  }
  return s;
}

Status check_tile_cols(uint32_t tile_cols) {
  if (tile_cols == 0 || tile_cols % lane::kTileAlign != 0) {
    return invalid_argument("tile_cols must be a positive multiple of " + std::to_string(lane::kTileAlign) +
                            ", got " + std::to_string(tile_cols));
  }
  return Status::ok();
}

float activation_to_float(float v) { return v; }
float activation_to_float(bf16_t v) { return bf16_to_float(v); }

template <typename Act>
Status emulate_gemm(const ternary::PackedTernaryView& w, std::span<const Act> x, uint32_t batch, std::span<float> y,
                    uint32_t tile_cols) {
  SUBMOE_RETURN_IF_ERROR(check_tile_cols(tile_cols));
  if (batch < 1 || batch > lane::kMaxBatch) {
    return invalid_argument("batch must be 1.." + std::to_string(lane::kMaxBatch) + ", got " + std::to_string(batch));
  }
  SUBMOE_RETURN_IF_ERROR(ternary::validate_packed(w));
  if (x.size() != static_cast<size_t>(batch) * w.cols) {
    return invalid_argument("x has " + std::to_string(x.size()) + " values, expected batch x cols = " +
                            std::to_string(static_cast<size_t>(batch) * w.cols));
  }
  if (y.size() != static_cast<size_t>(batch) * w.rows) {
    return invalid_argument("y has " + std::to_string(y.size()) + " values, expected batch x rows = " +
                            std::to_string(static_cast<size_t>(batch) * w.rows));
  }

  static const LaneTable lanes;
  const uint32_t slots = lane::batch_slots_for(batch);
  const uint32_t group = lane::token_group_size(slots);
  const uint32_t smem_cols = lane::tile_smem_cols(tile_cols);
  const uint32_t num_tiles = lane::tile_count(w.cols, tile_cols);
  std::vector<float> xs(lane::smem_x_words(slots, tile_cols));
  std::vector<RowState> state(w.rows);
  // acc[lane * slots + token]
  std::vector<float> acc(static_cast<size_t>(kWarp) * slots);

  for (uint32_t tile = 0; tile < num_tiles; ++tile) {
    const uint32_t t0 = lane::tile_begin(tile, tile_cols);
    const uint32_t t1 = lane::tile_end(tile, tile_cols, w.cols);
    // Tile load: [group][column][token in group], zeros past cols and past batch.
    for (uint32_t b = 0; b < slots; ++b) {
      float* dst = xs.data() + static_cast<size_t>(b / group) * smem_cols * group + b % group;
      for (uint32_t c = 0; c < smem_cols; ++c) {
        const uint32_t column = t0 + c;
        dst[static_cast<size_t>(c) * group] =
            b < batch && column < w.cols ? activation_to_float(x[static_cast<size_t>(b) * w.cols + column]) : 0.0f;
      }
    }
    for (uint32_t r = 0; r < w.rows; ++r) {
      const ternary::RowScales scales = w.scales[r];
      const std::array<float, 4> deq = {0.0f, bf16_to_float(scales.w_min), bf16_to_float(scales.w_max), 0.0f};
      std::fill(acc.begin(), acc.end(), 0.0f);
      RowState s = tile == 0 ? RowState{static_cast<uint32_t>(w.row_offsets[r]), 0} : state[r];
      s = walk_row_tile(w, r, s, t1, [&](uint32_t w0, uint32_t w1, uint32_t start, uint32_t /*advance*/) {
        const uint32_t rel = start - t0;
        for (uint32_t l = 0; l < kWarp; ++l) {
          const uint32_t symbol = lane::lane_symbol(w0, w1, lanes.slot[l]);
          if (!lane::symbol_contributes(symbol)) continue;
          const float level = deq[symbol];
          const float* xp = xs.data() + static_cast<size_t>(rel + l) * group;
          float* a = acc.data() + static_cast<size_t>(l) * slots;
          for (uint32_t g = 0; g < slots / group; ++g) {
            for (uint32_t k = 0; k < group; ++k) {
              a[g * group + k] = lane::lane_fma(level, xp[static_cast<size_t>(g) * smem_cols * group + k],
                                                a[g * group + k]);
            }
          }
        }
      });
      state[r] = s;
      // Butterfly per token, then the store of tile 0 or the accumulation of later tiles.
      for (uint32_t k = 0; k < batch; ++k) {
        float v[kWarp];
        for (uint32_t l = 0; l < kWarp; ++l) v[l] = acc[static_cast<size_t>(l) * slots + k];
        const float sum = lane::butterfly_sum_emulated(v);
        float& out = y[static_cast<size_t>(k) * w.rows + r];
        out = tile == 0 ? sum : out + sum;
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status emulate_gemm_f32_ternary_dict_cuda(const ternary::PackedTernaryView& w, std::span<const float> x,
                                          uint32_t batch, std::span<float> y, uint32_t tile_cols) {
  return emulate_gemm<float>(w, x, batch, y, tile_cols);
}

Status emulate_gemm_bf16_ternary_dict_cuda(const ternary::PackedTernaryView& w, std::span<const bf16_t> x,
                                           uint32_t batch, std::span<float> y, uint32_t tile_cols) {
  return emulate_gemm<bf16_t>(w, x, batch, y, tile_cols);
}

Result<std::vector<uint8_t>> emulate_lane_decode_symbols(const ternary::PackedTernaryView& w, uint32_t tile_cols) {
  SUBMOE_RETURN_IF_ERROR(check_tile_cols(tile_cols));
  SUBMOE_RETURN_IF_ERROR(ternary::validate_packed(w));
  static const LaneTable lanes;
  std::vector<uint8_t> out(static_cast<size_t>(w.rows) * w.cols, 0);
  const uint32_t num_tiles = lane::tile_count(w.cols, tile_cols);
  Status broken = Status::ok();
  for (uint32_t r = 0; r < w.rows && broken.is_ok(); ++r) {
    RowState s{static_cast<uint32_t>(w.row_offsets[r]), 0};
    for (uint32_t tile = 0; tile < num_tiles; ++tile) {
      const uint32_t t0 = lane::tile_begin(tile, tile_cols);
      const uint32_t t1 = lane::tile_end(tile, tile_cols, w.cols);
      s = walk_row_tile(w, r, s, t1, [&](uint32_t w0, uint32_t w1, uint32_t start, uint32_t advance) {
        if (start < t0 || start >= t1) {
          broken = internal_error("row " + std::to_string(r) + ": codeword at column " + std::to_string(start) +
                                  " decoded in tile [" + std::to_string(t0) + ", " + std::to_string(t1) + ")");
        }
        for (uint32_t l = 0; l < kWarp; ++l) {
          const uint32_t symbol = lane::lane_symbol(w0, w1, lanes.slot[l]);
          const bool inside = l < advance;
          if (inside ? symbol > ternary::kSymbolMax : lane::symbol_contributes(symbol)) {
            broken = internal_error("row " + std::to_string(r) + ": lane " + std::to_string(l) +
                                    " holds symbol " + std::to_string(symbol) + " for a codeword of length " +
                                    std::to_string(advance));
          }
          const size_t column = static_cast<size_t>(start) + l;
          if (lane::symbol_contributes(symbol) && column < w.cols) {
            out[static_cast<size_t>(r) * w.cols + column] = static_cast<uint8_t>(symbol);
          }
        }
      });
    }
  }
  if (!broken.is_ok()) return broken;
  return out;
}

}  // namespace submoe::kernels::cuda
