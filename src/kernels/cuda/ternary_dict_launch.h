// The boundary between the host glue (ternary_dict_cuda.cpp, built by the C++
// compiler with the project's warnings) and the kernels (ternary_dict_kernels.cu,
// built by nvcc). Plain data and cudaError_t only: Status stays on the host side.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "submoe/codec/ternary_dict_format.h"

namespace submoe::kernels::cuda::detail {

struct TernaryDictLaunch {
  // Device pointers.
  const uint16_t* codes = nullptr;
  const int32_t* row_offsets = nullptr;
  const ternary::RowScales* scales = nullptr;
  const ternary::DictEntry* dict = nullptr;
  const void* x = nullptr;  // float or bf16_t, batch x cols
  float* y = nullptr;       // batch x rows
  // Shape and geometry (see LaunchPlan).
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t batch = 0;
  uint32_t batch_slots = 0;
  bool bf16 = false;
  uint32_t warps_per_block = 0;
  uint32_t rows_per_block = 0;
  uint32_t grid_blocks = 0;
  uint32_t tile_cols = 0;
  uint32_t num_tiles = 0;
  size_t smem_bytes = 0;
};

// Validates nothing: the host glue has.
cudaError_t launch_ternary_dict_gemm(const TernaryDictLaunch& launch, cudaStream_t stream);

// Resident blocks per SM of the kernel for (batch_slots, activation type) with
// this block size and dynamic shared memory (raises the kernel's dynamic shared
// memory limit first when needed).
cudaError_t ternary_dict_gemm_blocks_per_sm(uint32_t batch_slots, bool bf16, uint32_t threads, size_t smem_bytes,
                                            int* blocks_per_sm);

}  // namespace submoe::kernels::cuda::detail
