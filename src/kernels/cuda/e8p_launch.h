// The boundary between the E8P host glue (e8p_cuda.cpp) and its kernels
// (e8p_kernels.cu, built by nvcc). Plain data and cudaError_t only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace submoe::kernels::cuda::detail {

struct E8pLaunch {
  // Device pointers.
  const uint16_t* codes = nullptr;
  const uint16_t* residual = nullptr;  // null without a stage 2
  const float* scales = nullptr;
  const uint32_t* packed = nullptr;   // 256 packed abs entries
  const int8_t* one_bit = nullptr;    // 256 x 8 halves
  const float* x = nullptr;           // batch x cols
  float* y = nullptr;                 // batch x rows
  uint32_t rows = 0, cols = 0, batch = 0;
  uint32_t stage2 = 0;  // e8p_lane::kStage2*
  float rho = 0.0f;
};

// Validates nothing: the host glue has.
cudaError_t launch_e8p_gemm(const E8pLaunch& launch, cudaStream_t stream);

}  // namespace submoe::kernels::cuda::detail
