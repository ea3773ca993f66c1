// Warp-per-row fused decode + GEMV / small-batch GEMM for the ternary dictionary
// code. The arithmetic every lane performs is in ternary_dict_lane.h (shared with
// the host emulator, which reproduces these kernels bit for bit); this file adds
// the parallel plumbing: shared-memory tiles of x, the lane-parallel codeword
// fetch and scan, shuffles and the stores.
//
// One template serves batch 1 (QMoE's kernel) and batches up to 64: kSlots is the
// compile-time batch (a power of two), so accumulators are registers and each
// decoded codeword is applied to every activation vector before the next one.
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ternary_dict_launch.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda::detail {
namespace {

using cuda_lane::kCodesPerChunk;
using cuda_lane::kDeqWordsPerWarp;
using cuda_lane::kWarpSize;
using cuda_lane::LaneSlot;

constexpr unsigned kFullMask = 0xffffffffu;

struct KernelParams {
  const uint16_t* codes;
  const int32_t* row_offsets;
  const ternary::RowScales* scales;
  const uint2* dict;  // DictEntry as (word 0, word 1)
  const void* x;
  float* y;
  uint32_t rows;
  uint32_t cols;
  uint32_t batch;
  uint32_t rows_per_block;
  uint32_t tile_cols;
  uint32_t num_tiles;
};

__device__ __forceinline__ float load_activation(const float* x, size_t i) { return __ldg(x + i); }
__device__ __forceinline__ float load_activation(const bf16_t* x, size_t i) {
  return bf16_to_float(bf16_t{__ldg(reinterpret_cast<const unsigned short*>(x) + i)});
}

// acc[0..kGroup) += level * x of kGroup consecutive tokens at p (one vector load).
template <uint32_t kGroup>
__device__ __forceinline__ void group_fma(const float* p, float level, float* acc) {
  if constexpr (kGroup == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    acc[0] = cuda_lane::lane_fma(level, v.x, acc[0]);
    acc[1] = cuda_lane::lane_fma(level, v.y, acc[1]);
    acc[2] = cuda_lane::lane_fma(level, v.z, acc[2]);
    acc[3] = cuda_lane::lane_fma(level, v.w, acc[3]);
  } else if constexpr (kGroup == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    acc[0] = cuda_lane::lane_fma(level, v.x, acc[0]);
    acc[1] = cuda_lane::lane_fma(level, v.y, acc[1]);
  } else {
    static_assert(kGroup == 1);
    acc[0] = cuda_lane::lane_fma(level, p[0], acc[0]);
  }
}

// One row's codewords that start inside tile [t0, t1), accumulated into y.
template <uint32_t kSlots>
__device__ __forceinline__ void decode_row_tile(const KernelParams& p, uint32_t r, uint32_t local, uint32_t tile,
                                                uint32_t t0, uint32_t t1, const float* xs, uint32_t smem_cols,
                                                float* deq, uint32_t* state_code, uint32_t* state_col, LaneSlot slot,
                                                uint32_t lane) {
  constexpr uint32_t kGroup = cuda_lane::token_group_size(kSlots);
  constexpr uint32_t kGroups = kSlots / kGroup;

  const uint32_t code_end = static_cast<uint32_t>(p.row_offsets[r + 1]);
  uint32_t code = tile == 0 ? static_cast<uint32_t>(p.row_offsets[r]) : state_code[local];
  uint32_t col = tile == 0 ? 0u : state_col[local];

  // The lane's own column of the level table: written and read by this lane only.
  const ternary::RowScales scales = p.scales[r];
  deq[0 * kWarpSize + lane] = 0.0f;
  deq[1 * kWarpSize + lane] = bf16_to_float(scales.w_min);
  deq[2 * kWarpSize + lane] = bf16_to_float(scales.w_max);
  deq[3 * kWarpSize + lane] = 0.0f;

  float acc[kSlots];
#pragma unroll
  for (uint32_t k = 0; k < kSlots; ++k) acc[k] = 0.0f;

  for (;;) {
    // Lane-parallel fetch of up to 32 codewords, their entries and advances.
    const uint32_t remaining = code_end - code;
    const uint32_t avail = remaining < kCodesPerChunk ? remaining : kCodesPerChunk;
    uint2 entry = make_uint2(0u, 0u);
    uint32_t advance = 0;
    if (lane < avail) {
      const uint32_t codeword = __ldg(p.codes + static_cast<size_t>(code) + lane);
      entry = __ldg(p.dict + codeword);
      advance = cuda_lane::entry_advance(entry.x, entry.y);
    }
    uint32_t inclusive = advance;
#pragma unroll
    for (uint32_t offset = 1; offset < kWarpSize; offset *= 2) {
      const uint32_t below = __shfl_up_sync(kFullMask, inclusive, offset);
      if (lane >= offset) inclusive += below;
    }
    const uint32_t exclusive = inclusive - advance;
    // Start columns grow with the lane, so the codewords of this tile are a prefix.
    const bool in_tile = lane < avail && col + exclusive < t1;
    const uint32_t count = static_cast<uint32_t>(__popc(__ballot_sync(kFullMask, in_tile)));

    for (uint32_t j = 0; j < count; ++j) {
      const uint32_t w0 = __shfl_sync(kFullMask, entry.x, static_cast<int>(j));
      const uint32_t w1 = __shfl_sync(kFullMask, entry.y, static_cast<int>(j));
      const uint32_t start = col + __shfl_sync(kFullMask, exclusive, static_cast<int>(j)) - t0;
      const uint32_t symbol = cuda_lane::lane_symbol(w0, w1, slot);
      if (cuda_lane::symbol_contributes(symbol)) {
        const float level = deq[symbol * kWarpSize + lane];
        const float* xp = xs + static_cast<size_t>(start + lane) * kGroup;
#pragma unroll
        for (uint32_t g = 0; g < kGroups; ++g) {
          group_fma<kGroup>(xp + static_cast<size_t>(g) * smem_cols * kGroup, level, acc + g * kGroup);
        }
      }
    }
    if (count > 0) {
      col += __shfl_sync(kFullMask, inclusive, static_cast<int>(count - 1));
      code += count;
    }
    if (count < kCodesPerChunk) break;
  }

#pragma unroll
  for (uint32_t k = 0; k < kSlots; ++k) {
#pragma unroll
    for (uint32_t offset = cuda_lane::kButterflyFirstOffset; offset >= 1; offset /= 2) {
      acc[k] += __shfl_xor_sync(kFullMask, acc[k], static_cast<int>(offset));
    }
  }
  // Every lane holds every sum; lane k % 32 stores token k.
#pragma unroll
  for (uint32_t k = 0; k < kSlots; ++k) {
    if (k % kWarpSize == lane && k < p.batch) {
      float* out = p.y + static_cast<size_t>(k) * p.rows + r;
      *out = tile == 0 ? acc[k] : *out + acc[k];
    }
  }
  if (p.num_tiles > 1 && lane == 0) {
    state_code[local] = code;
    state_col[local] = col;
  }
}

template <uint32_t kSlots, typename Act>
__global__ void __launch_bounds__(cuda_lane::max_warps_per_block_for(kSlots) * kWarpSize)
    ternary_dict_gemm_kernel(const KernelParams p) {
  constexpr uint32_t kGroup = cuda_lane::token_group_size(kSlots);
  extern __shared__ float4 smem_vec[];  // float4: 16-byte alignment for the group loads
  float* const smem = reinterpret_cast<float*>(smem_vec);

  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint32_t warp = threadIdx.x / kWarpSize;
  const uint32_t warps = blockDim.x / kWarpSize;
  const uint32_t smem_cols = cuda_lane::tile_smem_cols(p.tile_cols);
  const uint32_t x_words = cuda_lane::smem_x_words(kSlots, p.tile_cols);
  float* const xs = smem;
  float* const deq = smem + x_words + warp * kDeqWordsPerWarp;
  uint32_t* const state_code = reinterpret_cast<uint32_t*>(smem + x_words + warps * kDeqWordsPerWarp);
  uint32_t* const state_col = state_code + p.rows_per_block;

  const LaneSlot slot = cuda_lane::lane_slot(lane);
  const uint32_t row_begin = blockIdx.x * p.rows_per_block;
  const uint64_t row_limit = static_cast<uint64_t>(row_begin) + p.rows_per_block;
  const uint32_t row_count = (row_limit < p.rows ? static_cast<uint32_t>(row_limit) : p.rows) - row_begin;
  const Act* x = static_cast<const Act*>(p.x);

  // Every thread of the block runs every tile, so both barriers below are
  // reached uniformly (QMoE's research kernel had one that was not).
  for (uint32_t tile = 0; tile < p.num_tiles; ++tile) {
    const uint32_t t0 = cuda_lane::tile_begin(tile, p.tile_cols);
    const uint32_t t1 = cuda_lane::tile_end(tile, p.tile_cols, p.cols);
    __syncthreads();  // the previous tile is no longer read
    for (uint32_t b = 0; b < kSlots; ++b) {
      float* dst = xs + static_cast<size_t>(b / kGroup) * smem_cols * kGroup + b % kGroup;
      const bool live = b < p.batch;
      for (uint32_t c = threadIdx.x; c < smem_cols; c += blockDim.x) {
        const uint32_t column = t0 + c;
        dst[static_cast<size_t>(c) * kGroup] =
            live && column < p.cols ? load_activation(x, static_cast<size_t>(b) * p.cols + column) : 0.0f;
      }
    }
    __syncthreads();
    for (uint32_t local = warp; local < row_count; local += warps) {
      decode_row_tile<kSlots>(p, row_begin + local, local, tile, t0, t1, xs, smem_cols, deq, state_code, state_col,
                              slot, lane);
    }
  }
}

// Dynamic shared memory above 48 KiB must be enabled per kernel and device; the
// setting is remembered so launches after the first make no extra driver call.
constexpr int kMaxTrackedDevices = 64;
constexpr size_t kDefaultDynamicSmem = 48 * 1024;

template <typename Kernel>
cudaError_t ensure_smem_limit(Kernel kernel, size_t smem_bytes, std::atomic<size_t>* configured) {
  if (smem_bytes <= kDefaultDynamicSmem) return cudaSuccess;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::atomic<size_t>* slot = device < kMaxTrackedDevices ? &configured[device] : nullptr;
  if (slot != nullptr && slot->load(std::memory_order_relaxed) >= smem_bytes) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes));
  if (err == cudaSuccess && slot != nullptr) {
    size_t seen = slot->load(std::memory_order_relaxed);
    while (seen < smem_bytes && !slot->compare_exchange_weak(seen, smem_bytes)) {
    }
  }
  return err;
}

template <uint32_t kSlots, typename Act>
struct KernelInstance {
  static std::atomic<size_t> configured[kMaxTrackedDevices];
  static constexpr auto kernel = ternary_dict_gemm_kernel<kSlots, Act>;

  static cudaError_t launch(const TernaryDictLaunch& l, cudaStream_t stream) {
    cudaError_t err = ensure_smem_limit(kernel, l.smem_bytes, configured);
    if (err != cudaSuccess) return err;
    const KernelParams params{l.codes,
                              l.row_offsets,
                              l.scales,
                              reinterpret_cast<const uint2*>(l.dict),
                              l.x,
                              l.y,
                              l.rows,
                              l.cols,
                              l.batch,
                              l.rows_per_block,
                              l.tile_cols,
                              l.num_tiles};
    (void)cudaGetLastError();  // a stale error of an earlier call is not this launch's
    kernel<<<l.grid_blocks, l.warps_per_block * kWarpSize, l.smem_bytes, stream>>>(params);
    return cudaGetLastError();
  }

  static cudaError_t occupancy(uint32_t threads, size_t smem_bytes, int* blocks) {
    cudaError_t err = ensure_smem_limit(kernel, smem_bytes, configured);
    if (err != cudaSuccess) return err;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, static_cast<int>(threads), smem_bytes);
  }
};

template <uint32_t kSlots, typename Act>
std::atomic<size_t> KernelInstance<kSlots, Act>::configured[kMaxTrackedDevices] = {};

// Calls F::template run<KernelInstance<slots, Act>>() for the runtime choice.
template <typename Act, typename F>
cudaError_t with_instance(uint32_t batch_slots, F&& f) {
  switch (batch_slots) {
    case 1: return f(KernelInstance<1, Act>{});
    case 2: return f(KernelInstance<2, Act>{});
    case 4: return f(KernelInstance<4, Act>{});
    case 8: return f(KernelInstance<8, Act>{});
    case 16: return f(KernelInstance<16, Act>{});
    case 32: return f(KernelInstance<32, Act>{});
    case 64: return f(KernelInstance<64, Act>{});
    default: return cudaErrorInvalidValue;
  }
}

template <typename F>
cudaError_t with_instance(uint32_t batch_slots, bool bf16, F&& f) {
  return bf16 ? with_instance<bf16_t>(batch_slots, f) : with_instance<float>(batch_slots, f);
}

}  // namespace

cudaError_t launch_ternary_dict_gemm(const TernaryDictLaunch& launch, cudaStream_t stream) {
  if (launch.grid_blocks == 0) return cudaSuccess;
  return with_instance(launch.batch_slots, launch.bf16,
                       [&](auto instance) { return decltype(instance)::launch(launch, stream); });
}

cudaError_t ternary_dict_gemm_blocks_per_sm(uint32_t batch_slots, bool bf16, uint32_t threads, size_t smem_bytes,
                                            int* blocks_per_sm) {
  return with_instance(batch_slots, bf16, [&](auto instance) {
    return decltype(instance)::occupancy(threads, smem_bytes, blocks_per_sm);
  });
}

}  // namespace submoe::kernels::cuda::detail
