// Fused decode + matrix-vector / small-batch products straight from n-bit
// integer codes (codec/int_packed.h): Y = W X for B = 1..64 tokens with
//
//   W[r][c] = scale[r][g] * (code[r][c] - zero[r][g]),  g = c / group_size,
//
// W never materialized. Every weight is expanded in registers as
// fma(code, scale, -scale * zero), which is exactly the reference decoder's
// float (scale has 11 significant bits, code - zero at most 4, so both
// products and their difference are exact in float); the only roundings are
// those of the dot product itself, which is what the tests bound.
//
// With ActivationQuant::kInt8 each token is first quantized to int8 with one
// symmetric scale s_t (quantize_activations_int8), and
//
//   y[t][r] = s_t * sum_g scale[r][g] * (sum_{c in g} code[r][c] q_t[c]
//                                        - zero[r][g] * sum_{c in g} q_t[c]),
//
// the integer sums exact in int32 (2 and 4 bits, batch <= kIntI8MaxBatch, on
// tables with an int8 kernel); other cases multiply the float kernels by s_t q_t.
//
// Dispatch once, high up: pick an IntGemvKernels table (best_int_gemv_kernels()
// or int_gemv_kernels(isa)) and pass it down; kernels never test CPU features.
// Each weight is decoded once per call and applied to all B tokens. Kernels
// allocate nothing: the caller passes a workspace of
// int_gemm_workspace_floats(cols, batch) floats and, optionally, a thread pool
// (rows are split across its threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "submoe/codec/int_packed.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// How prepared activations sit in the workspace (built once per call).
//   kRows:       token t's values at xs[t * x_stride + c], zero for
//                cols <= c < x_stride (x_stride = cols rounded up to 16), so a
//                row's last run of 8 or 16 weights reads zeros past cols.
//   kTransposed: column c's B values at xs[c * batch_stride + t], zero for
//                t >= B and for c >= cols; the weight of column c is broadcast
//                and multiplied into all tokens at once.
enum class IntXLayout : uint8_t { kRows = 0, kTransposed = 1 };

// How the int8 kernels' activations sit (ActivationQuant::kInt8): token t's
// codes at xq[t * xq_stride + i], zero past cols, with
//   kNatural: i = c;
//   kUnits64: in units of 64 columns, each two vectors of 32 codes in the byte
//             order the kernel decodes weights into (int_i8_unit_column).
enum class IntI8Layout : uint8_t { kNatural = 0, kUnits64 = 1 };

// The column at byte i of a unit of 64 (kUnits64) for `bits` = 2 or 4: vector
// v = i / 32, lane l = (i % 32) / 16 (the unit's first or second 32 columns),
//   4 bits: 32 l + 2 (i % 16) + v      (v = 0 low, v = 1 high nibbles);
//   2 bits: 32 l + 4 (i % 8) + 2 v + (i % 16) / 8   (shifts 0, 2 | 4, 6).
uint32_t int_i8_unit_column(uint32_t bits, uint32_t i);

// Largest batch the int8 kernels take (larger batches use the float kernels).
inline constexpr uint32_t kIntI8MaxBatch = 4;

// What one kernel invocation sees. Rows [row_begin, row_end) are computed.
struct IntGemmArgs {
  intn::PackedIntView w;
  const float* xs = nullptr;  // prepared activations, 64-byte aligned
  size_t x_stride = 0;        // kRows: floats between tokens
  uint32_t batch = 1;         // B
  uint32_t batch_stride = 1;  // kTransposed: floats per column (B padded up)
  float* y = nullptr;         // y[t * y_stride + r]
  size_t y_stride = 0;
  // Int8 kernels: token t's codes at xq + t * xq_stride per IntI8Layout,
  // 32-byte aligned; with kUnits64, the sums of each byte pair of the unit's A
  // and B vectors (int16 j of unit u: bytes 2j, 2j + 1, 32 + 2j, 33 + 2j) at
  // xq_pair_sums + t * xq_sums_stride + 16 u; s_t at xq_scales[t].
  const int8_t* xq = nullptr;
  size_t xq_stride = 0;
  const int16_t* xq_pair_sums = nullptr;
  size_t xq_sums_stride = 0;
  const float* xq_scales = nullptr;
};

using IntRowsFn = void (*)(const IntGemmArgs& args, uint32_t row_begin, uint32_t row_end);

struct IntGemvKernels {
  Isa isa = Isa::kScalar;
  // B = 1, kRows.
  const char* gemv_name = nullptr;
  IntRowsFn gemv = nullptr;
  // 2 <= B <= small_max_batch, kRows: a few tokens' accumulators stay in
  // registers next to each decoded weight vector.
  const char* gemm_small_name = nullptr;
  IntRowsFn gemm_small = nullptr;
  uint32_t small_max_batch = kMaxKernelBatch;
  // B > small_max_batch, kTransposed (null: gemm_small takes every batch).
  const char* gemm_wide_name = nullptr;
  IntRowsFn gemm_wide = nullptr;
  // ActivationQuant::kInt8, 2 and 4 bits, B <= kIntI8MaxBatch (null: the
  // float kernels over s q).
  const char* gemm_i8_name = nullptr;
  IntRowsFn gemm_i8 = nullptr;
  IntI8Layout i8_layout = IntI8Layout::kNatural;
  // The kInt8 quantization of one token of f32 activations, exactly as
  // quantize_activations_int8 (null: that scalar definition runs).
  float (*quantize_i8)(const float* x, uint32_t n, int8_t* q) = nullptr;
};

// The table of one ISA. The caller must make sure the CPU supports it
// (cpu_features()); tests call every supported table directly.
const IntGemvKernels& int_gemv_kernels(Isa isa);
// int_gemv_kernels(best_isa()), decided once.
const IntGemvKernels& best_int_gemv_kernels();

// Name of the kernel gemm_int runs for this table, bits, batch size and
// activation quantization.
const char* int_kernel_name(const IntGemvKernels& k, uint32_t batch);
const char* int_kernel_name(const IntGemvKernels& k, uint32_t bits, uint32_t batch, ActivationQuant quant);

// Floats of workspace gemm_int needs for any table.
size_t int_gemm_workspace_floats(uint32_t cols, uint32_t batch);

// Y = W X. Precondition too costly to re-check per call: w passed
// intn::validate_packed_int once (finite scales, zero padding bits). The call
// checks the kernel table, shapes, pointers, bits / group_size / row_bytes,
// batch (1..kMaxKernelBatch), strides and the workspace size, and returns
// kInvalidArgument on a mismatch. Non-finite activations give unspecified (but
// memory-safe) results.
Status gemm_int(const IntGemvKernels& kernels, const intn::PackedIntView& w, const ActivationsView& x,
                const OutputView& y, std::span<float> workspace, ThreadPool* pool,
                ActivationQuant quant = ActivationQuant::kExact);

}  // namespace submoe::kernels
