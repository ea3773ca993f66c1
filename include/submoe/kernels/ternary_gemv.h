// Fused decode + matrix-vector / small-batch products straight from the ternary
// dictionary code: Y = W X for B = 1..64 tokens, W never materialized.
//
//   y[t][r] = w_max[r] * sum_{c: sym(r,c) = max} x[t][c]
//           + w_min[r] * sum_{c: sym(r,c) = min} x[t][c]
//
// Dispatch once, high up: pick a TernaryGemvKernels table (best_ternary_gemv_kernels()
// or ternary_gemv_kernels(isa) for a specific path) and pass it down; kernels never
// test CPU features. Each codeword is decoded once per call and applied to all B
// tokens. Kernels allocate nothing: the caller passes a workspace of
// ternary_gemm_workspace_floats(cols, batch) floats and, optionally, a thread pool
// (rows are split across its threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"
#include "submoe/kernels/ternary_kernel_table.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// How prepared activations sit in the workspace (the driver builds them once per
// call; every row then reads them).
//   kPadded:  batch 1, x[0..cols) then zeros, so a row's last codeword may read up
//             to 31 floats past cols.
//   kDoubled: column c at rows 2c (its B values, padded to batch_stride) and 2c+1
//             (zeros); see TernaryKernelTable::slots.
//   kPaddedBf16: batch 1, bf16 activations as given (bit copies), then zeros;
//             xs points at them (read as uint16_t).
//   kPaddedI8: batch 1, int8 activations (ActivationQuant::kInt8), then zeros;
//             xs points at them (read as int8_t), x_scale is their scale.
enum class XLayout : uint8_t { kPadded = 0, kDoubled = 1, kPaddedBf16 = 2, kPaddedI8 = 3 };


// What one kernel invocation sees. Rows [row_begin, row_end) are computed.
struct TernaryGemmArgs {
  ternary::PackedTernaryView w;
  const TernaryKernelTable* table = nullptr;
  const float* xs = nullptr;     // prepared activations (layout per kernel)
  uint32_t batch = 1;            // B
  uint32_t batch_stride = 1;     // floats per layout row (B padded up), doubled layout
  float* y = nullptr;            // y[t * y_stride + r]
  size_t y_stride = 0;
  float x_scale = 0.0f;          // kPaddedI8: activation = x_scale * xs[c]
};

using TernaryRowsFn = void (*)(const TernaryGemmArgs& args, uint32_t row_begin, uint32_t row_end);

struct TernaryGemvKernels {
  Isa isa = Isa::kScalar;
  // Batch 1. gemv_perm (may be null) is used when the table has permute records,
  // gemv_any otherwise.
  const char* gemv_perm_name = nullptr;
  TernaryRowsFn gemv_perm = nullptr;
  XLayout gemv_perm_layout = XLayout::kPadded;
  const char* gemv_any_name = nullptr;
  TernaryRowsFn gemv_any = nullptr;
  XLayout gemv_any_layout = XLayout::kPadded;
  // Batch 2..kMaxKernelBatch, doubled layout.
  const char* gemm_name = nullptr;
  TernaryRowsFn gemm = nullptr;
  // Batch 1 with bf16 activations and permute records (may be null: then bf16
  // activations are widened to f32 and take the gemv paths above). Layout kPaddedBf16.
  const char* gemv_bf16_name = nullptr;
  TernaryRowsFn gemv_bf16 = nullptr;
  // Batch 1 with ActivationQuant::kInt8 and permute records (may be null: then
  // the quantized activations s q take the f32 gemv paths). Layout kPaddedI8.
  const char* gemv_i8_name = nullptr;
  TernaryRowsFn gemv_i8 = nullptr;
  // The kInt8 quantization of one token of f32 activations, exactly as
  // quantize_activations_int8 (may be null: then that scalar definition runs).
  float (*quantize_i8)(const float* x, uint32_t n, int8_t* q) = nullptr;
};

// The table of one ISA. The caller must make sure the CPU supports it
// (cpu_features()); tests call every supported table directly.
const TernaryGemvKernels& ternary_gemv_kernels(Isa isa);
// ternary_gemv_kernels(best_isa()), decided once.
const TernaryGemvKernels& best_ternary_gemv_kernels();

// Name of the kernel gemm_ternary_dict runs for this table, batch size,
// activation type and quantization.
const char* ternary_kernel_name(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                                ActivationType type = ActivationType::kF32,
                                ActivationQuant quant = ActivationQuant::kExact);

// Floats of workspace gemm_ternary_dict needs (enough for every ISA).
size_t ternary_gemm_workspace_floats(uint32_t cols, uint32_t batch);
// Floats per doubled-layout row for a batch (4, 8, or a multiple of 16).
uint32_t ternary_batch_stride(uint32_t batch);

// Y = W X. Preconditions that are too costly to re-check per call: w passed
// ternary::validate_packed once (every codeword inside its row, at most 27
// weights past cols), and table was built from w.dict (checked by pointer). The
// call itself checks shapes, pointers, row offsets, batch (1..kMaxKernelBatch),
// strides and the workspace size, and returns kInvalidArgument on a mismatch.
// Non-finite activations give unspecified (but memory-safe) results.
Status gemm_ternary_dict(const TernaryGemvKernels& kernels, const TernaryKernelTable& table,
                         const ternary::PackedTernaryView& w, const ActivationsView& x, const OutputView& y,
                         std::span<float> workspace, ThreadPool* pool,
                         ActivationQuant quant = ActivationQuant::kExact);


}  // namespace submoe::kernels
