// A CPU replay of the E8P CUDA kernels (e8p_cuda.h): 32 emulated lanes per row
// run e8p_lane.h's arithmetic in the kernel's order, so on a device the two
// agree bit for bit. Slow (one lane at a time): a test tool, not a kernel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/e8p.h"
#include "submoe/core/status.h"

namespace submoe::kernels::cuda {

// Y [batch, rows] = W X for X [batch, cols]; errors: batch outside 1..64, x of
// the wrong size, a malformed matrix.
Result<std::vector<float>> emulate_gemm_e8p_cuda(const e8p::E8pMatrix& m, std::span<const float> x, uint32_t batch);

}  // namespace submoe::kernels::cuda
