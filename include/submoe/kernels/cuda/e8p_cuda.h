// Fused decode + matrix-vector / small-batch product on the GPU straight from
// E8P matrices (codec/e8p.h; QuIP#'s structured decoder, the GPU-friendly one):
//
//   Y[t][r] = sum_c W[r][c] X[t][c]     t < batch (1..64)
//
// in the matrix's own (rotated) coordinates: the caller applies the RHT to x
// and y, as the CPU op does. X is batch x cols f32, Y batch x rows f32, both
// in device memory owned by the caller. Lane logic: e8p_lane.h; a CPU replay:
// e8p_emulator.h. Compiled with and without CUDA; without it every call
// returns "unsupported".
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/e8p.h"
#include "submoe/core/status.h"
#include "submoe/kernels/cuda/cuda_device.h"

namespace submoe::kernels::cuda {

// One E8P matrix in device memory: codes, residual codes (widened to u16),
// f32 scales, and the decode tables (packed abs table, 1-bit table).
class DeviceE8pMatrix {
 public:
  DeviceE8pMatrix() = default;
  // Checks the matrix's shape, rate and field sizes, then copies.
  static Result<DeviceE8pMatrix> upload(const e8p::E8pMatrix& m);

  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  uint32_t bits() const { return bits_; }
  const uint16_t* codes() const { return codes_.as<const uint16_t>(); }
  const uint16_t* residual() const { return residual_.as<const uint16_t>(); }  // null at 2 bits
  const float* scales() const { return scales_.as<const float>(); }
  const void* tables() const { return tables_.data(); }
  size_t device_bytes() const { return codes_.bytes() + residual_.bytes() + scales_.bytes() + tables_.bytes(); }

 private:
  uint32_t rows_ = 0, cols_ = 0, bits_ = 2;
  DeviceBuffer codes_, residual_, scales_, tables_;
};

// Launches on `stream` (asynchronous; errors of the launch itself are
// returned). Errors: batch outside 1..64, null pointers, unsupported without
// CUDA or a device.
Status gemm_e8p_cuda(const DeviceE8pMatrix& w, const float* x, uint32_t batch, float* y, Stream stream = nullptr);

}  // namespace submoe::kernels::cuda
