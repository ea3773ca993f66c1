// A CPU replay of the CUDA ternary dictionary kernels (ternary_dict_cuda.h): 32
// emulated lanes per row execute the kernels' lane logic (ternary_dict_lane.h):
// the lane-parallel codeword fetch, the scan of advances, per-lane slot
// extraction, the column tiling of x, the fused multiply-adds in the same order
// and the butterfly reduction. Its output therefore equals the device's bit for
// bit, and it runs on every machine, so the decode logic the GPU executes is
// tested against the codec's reference decoder even where no GPU exists.
// Slow (one emulated lane at a time): a test tool, not a kernel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/bf16.h"
#include "submoe/core/status.h"

namespace submoe::kernels::cuda {

// Y[b][r] = sum_c W[r][c] X[b][c] as the kernel computes it with tiles of
// tile_cols columns (a multiple of 32: LaunchPlan::tile_cols to match a launch,
// cuda_lane::single_tile_cols(cols) for x in one tile). x: batch x cols,
// y: batch x rows, row-major; batch 1..64. The view is validated
// (ternary::validate_packed).
Status emulate_gemm_f32_ternary_dict_cuda(const ternary::PackedTernaryView& w, std::span<const float> x,
                                          uint32_t batch, std::span<float> y, uint32_t tile_cols);
Status emulate_gemm_bf16_ternary_dict_cuda(const ternary::PackedTernaryView& w, std::span<const bf16_t> x,
                                           uint32_t batch, std::span<float> y, uint32_t tile_cols);

// The symbol matrix (rows x cols) as the kernels' lanes see it: each lane's
// symbol placed at the column it multiplies (start column of the codeword + lane),
// columns past cols dropped. Besides the placement it checks the lane contract
// the kernels rely on and returns an internal error when it is broken: lanes
// below the codeword's advance hold a weight (0..2), lanes at or past it
// contribute nothing (0, or 3 on the absent slot), so no lane ever writes into
// the next codeword's columns.
Result<std::vector<uint8_t>> emulate_lane_decode_symbols(const ternary::PackedTernaryView& w, uint32_t tile_cols);

}  // namespace submoe::kernels::cuda
