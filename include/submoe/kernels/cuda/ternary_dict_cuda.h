// Fused decode + matrix-vector / small-batch matrix product on the GPU, straight
// from the ternary dictionary code (QMoE's warp-per-row kernel, any shape).
//
//   Y[b][r] = sum_c W[r][c] * X[b][c]      b < batch (1..64), r < rows, c < cols
//
// X is batch x cols row-major (f32 or bf16), Y batch x rows row-major f32, both in
// device memory owned by the caller. Batch 1 is the QMoE kernel; batches 2..64
// decode every codeword once and apply it to all activation vectors. Lane logic:
// ternary_dict_lane.h; a CPU replay of it: ternary_dict_emulator.h.
//
// Compiled with and without CUDA; without it every call returns "unsupported".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/bf16.h"
#include "submoe/core/status.h"
#include "submoe/kernels/cuda/cuda_device.h"

namespace submoe::kernels::cuda {

// A dictionary table on the device (512 KiB, shared by every matrix coded with
// it: on the GPU it is meant to stay in L2). Validated on upload.
class DeviceTernaryDictionary {
 public:
  DeviceTernaryDictionary() = default;
  static Result<DeviceTernaryDictionary> upload(const ternary::DictEntry* entries);

  const ternary::DictEntry* device_entries() const { return buffer_.as<const ternary::DictEntry>(); }
  // The host table it was uploaded from (kept to check that a matrix was coded
  // with this dictionary).
  const std::vector<ternary::DictEntry>& host_entries() const { return host_; }

 private:
  DeviceBuffer buffer_;
  std::vector<ternary::DictEntry> host_;
};

// A packed matrix in device memory: codes, row offsets, scales, and a pointer to
// a DeviceTernaryDictionary that must outlive it.
class DeviceTernaryMatrix {
 public:
  DeviceTernaryMatrix() = default;
  // Validates the view (ternary::validate_packed rules), checks that v.dict holds
  // the same entries as dict, and copies the arrays.
  static Result<DeviceTernaryMatrix> upload(const ternary::PackedTernaryView& v, const DeviceTernaryDictionary& dict);

  uint32_t rows() const { return view_.rows; }
  uint32_t cols() const { return view_.cols; }
  size_t num_codes() const { return view_.num_codes; }
  // Pointers into device memory (never dereference on the host).
  const ternary::PackedTernaryView& device_view() const { return view_; }
  // Bytes of codes + row offsets + scales (the dictionary not included).
  size_t device_bytes() const;

 private:
  DeviceBuffer codes_;
  DeviceBuffer row_offsets_;
  DeviceBuffer scales_;
  ternary::PackedTernaryView view_{};
};

enum class Activation : uint32_t { kF32 = 0, kBf16 = 1 };

struct LaunchOptions {
  // Columns of x per shared-memory tile, a multiple of 32. 0: one tile whenever
  // x fits the shared-memory budget, else the widest tile that does.
  uint32_t tile_cols = 0;
  // Warps (= rows in flight) per block, 1..max_warps_per_block. 0: automatic.
  uint32_t warps_per_block = 0;
};

// Everything a launch needs, computed once per (matrix shape, batch, options)
// so that repeated launches do no host-side planning.
struct LaunchPlan {
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t batch = 0;
  uint32_t batch_slots = 0;  // compile-time batch of the kernel (power of two >= batch)
  Activation activation = Activation::kF32;
  uint32_t warps_per_block = 0;
  uint32_t rows_per_block = 0;
  uint32_t grid_blocks = 0;
  uint32_t tile_cols = 0;
  uint32_t num_tiles = 0;
  size_t smem_bytes = 0;
};

// Most warps per block the kernel for a given batch_slots is compiled for
// (larger batches keep more accumulators in registers).
uint32_t max_warps_per_block(uint32_t batch_slots);
// Shared memory a launch uses (x tile, dequantization tables, row state).
size_t launch_smem_bytes(uint32_t batch_slots, uint32_t tile_cols, uint32_t warps_per_block, uint32_t rows_per_block);

// Largest x tile the automatic plan keeps in shared memory, in bytes. Up to this
// size x stays in one tile (batch 1 up to ~24k columns); beyond it tiles of this
// size leave room for two or more resident blocks per SM.
inline constexpr size_t kAutoTileBudgetBytes = 96 * 1024;
// Rows one block may carry between tiles (their state lives in shared memory).
inline constexpr uint32_t kMaxStateRows = 1024;

// What the planner needs to know about the device.
struct DeviceLimits {
  uint32_t sm_count = 0;
  size_t smem_per_block_optin = 0;
};
// Resident blocks per SM for a kernel configuration (the CUDA occupancy API on a
// device; a model of it in host tests).
using BlocksPerSm = std::function<Result<int>(uint32_t batch_slots, Activation activation, uint32_t threads,
                                              size_t smem_bytes)>;

// The planner itself, independent of any device. Errors: batch outside 1..64,
// tile_cols not a multiple of 32, warps_per_block above the kernel's maximum, a
// configuration that does not fit the device's shared memory.
Result<LaunchPlan> plan_ternary_dict_gemm_for(const DeviceLimits& limits, const BlocksPerSm& blocks_per_sm,
                                              uint32_t rows, uint32_t cols, uint32_t batch, Activation activation,
                                              const LaunchOptions& options = {});
// The same for the current device (unsupported without one).
Result<LaunchPlan> plan_ternary_dict_gemm(uint32_t rows, uint32_t cols, uint32_t batch, Activation activation,
                                          const LaunchOptions& options = {});
// Checks that a plan is internally consistent and made for this shape, batch and
// activation; the launches call it, so a hand-edited plan cannot overrun memory.
Status check_launch_plan(const LaunchPlan& plan, uint32_t rows, uint32_t cols, Activation activation);

// Launches on `stream` (asynchronous; errors of the launch itself are returned,
// errors during execution surface at the next synchronization). The plan must
// have been made for this matrix's shape, this batch and activation type.
Status gemm_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, float* y, const LaunchPlan& plan,
                                  Stream stream = nullptr);
Status gemm_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, float* y, const LaunchPlan& plan,
                                   Stream stream = nullptr);

// Plan + launch in one call.
Status gemv_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, float* y, Stream stream = nullptr,
                                  const LaunchOptions& options = {});
Status gemv_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, float* y, Stream stream = nullptr,
                                   const LaunchOptions& options = {});
Status gemm_f32_ternary_dict_cuda(const DeviceTernaryMatrix& w, const float* x, uint32_t batch, float* y,
                                  Stream stream = nullptr, const LaunchOptions& options = {});
Status gemm_bf16_ternary_dict_cuda(const DeviceTernaryMatrix& w, const bf16_t* x, uint32_t batch, float* y,
                                   Stream stream = nullptr, const LaunchOptions& options = {});

}  // namespace submoe::kernels::cuda
