// Warp-per-row fused decode + GEMV / small-batch GEMM for E8P matrices. The
// arithmetic every lane performs is in e8p_lane.h (shared with the host
// emulator, which reproduces these kernels bit for bit); this file adds the
// plumbing: the decode tables staged in shared memory, the shuffles and the
// stores. kSlots is the compile-time batch (a power of two >= the runtime
// batch), so the accumulators are registers.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/e8p_launch.h"
#include "submoe/kernels/cuda/e8p_lane.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda::detail {
namespace {

namespace lane = e8p_lane;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr uint32_t kWarp = cuda_lane::kWarpSize;

template <uint32_t kSlots>
__global__ void __launch_bounds__(kWarp* lane::kWarpsPerBlock) e8p_gemm_kernel(E8pLaunch p) {
  __shared__ uint32_t packed[lane::kEntries];
  __shared__ int8_t one_bit[lane::kEntries * lane::kDim];
  for (uint32_t i = threadIdx.x; i < lane::kEntries; i += blockDim.x) packed[i] = __ldg(p.packed + i);
  if (p.stage2 == lane::kStage2OneBit)
    for (uint32_t i = threadIdx.x; i < lane::kEntries * lane::kDim; i += blockDim.x) one_bit[i] = p.one_bit[i];
  __syncthreads();
  const uint32_t l = threadIdx.x % kWarp;
  const uint32_t r = blockIdx.x * lane::kWarpsPerBlock + threadIdx.x / kWarp;
  if (r >= p.rows) return;  // after the only barrier
  const uint32_t per_row = p.cols / lane::kDim;
  float acc[kSlots];
#pragma unroll
  for (uint32_t t = 0; t < kSlots; ++t) acc[t] = 0.0f;
  for (uint32_t k = l; k < per_row; k += kWarp) {
    const size_t i = size_t{r} * per_row + k;
    float w[lane::kDim];
    lane::weights(packed, one_bit, p.stage2, p.rho, __ldg(p.codes + i),
                  p.stage2 == lane::kStage2None ? 0u : __ldg(p.residual + i), w);
#pragma unroll
    for (uint32_t t = 0; t < kSlots; ++t) {
      if (t >= p.batch) break;
      const float* xt = p.x + size_t{t} * p.cols + size_t{k} * lane::kDim;
      float a = acc[t];
#pragma unroll
      for (uint32_t j = 0; j < lane::kDim; ++j) a = cuda_lane::lane_fma(w[j], __ldg(xt + j), a);
      acc[t] = a;
    }
  }
  const float scale = __ldg(p.scales + r);
#pragma unroll
  for (uint32_t t = 0; t < kSlots; ++t) {
    float v = acc[t];
    for (uint32_t offset = cuda_lane::kButterflyFirstOffset; offset >= 1; offset /= 2)
      v = v + __shfl_xor_sync(kFullMask, v, offset);
    if (l == 0 && t < p.batch) p.y[size_t{t} * p.rows + r] = scale * v;
  }
}

template <uint32_t kSlots>
cudaError_t launch_slots(const E8pLaunch& p, cudaStream_t stream) {
  e8p_gemm_kernel<kSlots><<<lane::grid_blocks(p.rows), kWarp * lane::kWarpsPerBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_e8p_gemm(const E8pLaunch& p, cudaStream_t stream) {
  if (p.batch <= 1) return launch_slots<1>(p, stream);
  if (p.batch <= 2) return launch_slots<2>(p, stream);
  if (p.batch <= 4) return launch_slots<4>(p, stream);
  if (p.batch <= 8) return launch_slots<8>(p, stream);
  if (p.batch <= 16) return launch_slots<16>(p, stream);
  if (p.batch <= 32) return launch_slots<32>(p, stream);
  return launch_slots<64>(p, stream);
}

}  // namespace submoe::kernels::cuda::detail
