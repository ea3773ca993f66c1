// Driver of the fused int kernels: argument checks, activation preparation
// (conversion to f32 and the layout the chosen kernel reads), row split across
// the thread pool, dispatch to the ISA table chosen by the caller.
#include "submoe/kernels/int_gemv.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/int_gemv_internal.h"
#include "submoe/core/thread_pool.h"
#include "row_dispatch.h"
#include "workspace_layout.h"

namespace submoe::kernels {

namespace {

using detail::activation;
using detail::align_up;
using detail::kAlignFloats;

const IntGemvKernels kScalarKernels = {
    Isa::kScalar,
    "gemm_f32_int_packed_scalar", detail::gemm_f32_int_packed_scalar,
    "gemm_f32_int_packed_scalar", detail::gemm_f32_int_packed_scalar, kMaxKernelBatch,
    nullptr, nullptr,
    "gemm_i8_int_packed_scalar", detail::gemm_i8_int_packed_scalar, IntI8Layout::kNatural,
    nullptr,
};

const IntGemvKernels kAvx2Kernels = {
    Isa::kAvx2,
    "gemv_f32_int_packed_avx2", detail::gemv_f32_int_packed_avx2,
    "gemm_f32_int_packed_small_avx2", detail::gemm_f32_int_packed_small_avx2, detail::kIntSmallBatchAvx2,
    "gemm_f32_int_packed_wide_avx2", detail::gemm_f32_int_packed_wide_avx2,
    "gemm_i8_int_packed_avx2", detail::gemm_i8_int_packed_avx2, IntI8Layout::kUnits64,
    detail::quantize_i8_f32_avx2,
};

// The int8 kernels are AVX2's (AVX-512 machines run them too).
const IntGemvKernels kAvx512Kernels = {
    Isa::kAvx512,
    "gemv_f32_int_packed_avx512", detail::gemv_f32_int_packed_avx512,
    "gemm_f32_int_packed_small_avx512", detail::gemm_f32_int_packed_small_avx512, detail::kIntSmallBatchAvx512,
    "gemm_f32_int_packed_wide_avx512", detail::gemm_f32_int_packed_wide_avx512,
    "gemm_i8_int_packed_avx2", detail::gemm_i8_int_packed_avx2, IntI8Layout::kUnits64,
    detail::quantize_i8_f32_avx512,
};

constexpr uint32_t kI8UnitCols = 64;
constexpr size_t i8_padded_cols(uint32_t cols) { return (static_cast<size_t>(cols) + kI8UnitCols - 1) / kI8UnitCols * kI8UnitCols; }

bool uses_i8(const IntGemvKernels& k, uint32_t bits, uint32_t batch) {
  return k.gemm_i8 != nullptr && (bits == 2 || bits == 4) && batch <= kIntI8MaxBatch;
}

// Floats of the int8 kernels' activations: codes, pair sums, scales, each aligned.
size_t i8_workspace_floats(uint32_t cols, uint32_t batch) {
  const size_t padded = i8_padded_cols(cols);
  return 3 * kAlignFloats + batch * (padded / sizeof(float) + padded / 4 * sizeof(int16_t) / sizeof(float) + 1);
}


// int_i8_unit_column for every byte of a unit, computed once per bit width.
const std::array<uint8_t, kI8UnitCols>& unit_order(uint32_t bits) {
  static const auto table = [](uint32_t b) {
    std::array<uint8_t, kI8UnitCols> t{};
    for (uint32_t i = 0; i < kI8UnitCols; ++i) t[i] = static_cast<uint8_t>(int_i8_unit_column(b, i));
    return t;
  };
  static const std::array<uint8_t, kI8UnitCols> two = table(2), four = table(4);
  return bits == 2 ? two : four;
}

// The int8 kernels' activations in the workspace: each token quantized and laid
// out per k.i8_layout (zeros to the unit boundary), its pair sums (kUnits64)
// and its scale.
void prepare_i8(const IntGemvKernels& k, const intn::PackedIntView& w, const ActivationsView& x, float* ws,
                IntGemmArgs* args) {
  const size_t padded = i8_padded_cols(w.cols), sums_per_token = padded / 4;
  auto* xq = reinterpret_cast<int8_t*>(ws);
  auto* sums = reinterpret_cast<int16_t*>(align_up(ws + x.batch * padded / sizeof(float)));
  float* scales = align_up(reinterpret_cast<float*>(sums + x.batch * sums_per_token));
  thread_local std::vector<int8_t> natural;
  natural.assign(padded, 0);
  for (uint32_t t = 0; t < x.batch; ++t) {
    scales[t] = detail::quantize_token_i8(k.quantize_i8, x, t, w.cols, natural.data());
    int8_t* dst = xq + t * padded;
    if (k.i8_layout == IntI8Layout::kNatural) {
      std::memcpy(dst, natural.data(), padded);
      continue;
    }
    const std::array<uint8_t, kI8UnitCols>& order = unit_order(w.bits);
    for (size_t u = 0; u < padded; u += kI8UnitCols) {
      int8_t* unit = dst + u;
      for (uint32_t i = 0; i < kI8UnitCols; ++i) unit[i] = natural[u + order[i]];
      int16_t* s = sums + t * sums_per_token + u / 4;
      for (uint32_t j = 0; j < 16; ++j)
        s[j] = static_cast<int16_t>(unit[2 * j] + unit[2 * j + 1] + unit[32 + 2 * j] + unit[33 + 2 * j]);
    }
  }
  args->xq = xq;
  args->xq_stride = padded;
  args->xq_pair_sums = sums;
  args->xq_sums_stride = sums_per_token;
  args->xq_scales = scales;
}

void prepare_rows(const ActivationsView& x, uint32_t cols, size_t stride, float* xs) {
  for (uint32_t t = 0; t < x.batch; ++t) {
    float* dst = xs + static_cast<size_t>(t) * stride;
    if (x.type == ActivationType::kF32) {
      std::memcpy(dst, static_cast<const float*>(x.data) + static_cast<size_t>(t) * x.stride, sizeof(float) * cols);
    } else {
      for (uint32_t c = 0; c < cols; ++c) dst[c] = activation(x, t, c);
    }
    std::fill(dst + cols, dst + stride, 0.0f);
  }
}

void prepare_transposed(const ActivationsView& x, uint32_t cols, uint32_t batch_stride, float* xs) {
  const size_t padded = detail::int_padded_cols(cols);
  std::fill(xs, xs + padded * batch_stride, 0.0f);
  for (uint32_t t = 0; t < x.batch; ++t)
    for (uint32_t c = 0; c < cols; ++c) xs[static_cast<size_t>(c) * batch_stride + t] = activation(x, t, c);
}

bool uses_wide(const IntGemvKernels& k, uint32_t batch) {
  return batch > 1 && k.gemm_wide != nullptr && batch > k.small_max_batch;
}

Status check_args(const IntGemvKernels& k, const intn::PackedIntView& w, const ActivationsView& x,
                  const OutputView& y, std::span<float> workspace) {
  if (k.gemv == nullptr || k.gemm_small == nullptr) return invalid_argument("gemm_int: empty kernel table");
  if (x.batch < 1 || x.batch > kMaxKernelBatch)
    return invalid_argument("gemm_int: batch " + std::to_string(x.batch) + " outside 1.." +
                            std::to_string(kMaxKernelBatch));
  SUBMOE_RETURN_IF_ERROR(intn::check_int_params(w.bits, w.group_size));
  if (w.rows == 0 || w.cols == 0) return invalid_argument("gemm_int: empty matrix");
  if (w.row_bytes != intn::int_row_bytes(w.cols, w.bits))
    return invalid_argument("gemm_int: row_bytes " + std::to_string(w.row_bytes) + " does not match " +
                            std::to_string(w.cols) + " columns of " + std::to_string(w.bits) + " bits");
  if (w.qweight == nullptr || w.scales == nullptr || w.zeros == nullptr)
    return invalid_argument("gemm_int: packed matrix has null arrays");
  if (y.data == nullptr) return invalid_argument("gemm_int: null output");
  if (x.batch > 1 && y.stride < w.rows) return invalid_argument("gemm_int: output stride < rows");
  if (x.data == nullptr) return invalid_argument("gemm_int: null activations");
  if (x.type != ActivationType::kF32 && x.type != ActivationType::kBF16)
    return invalid_argument("gemm_int: unknown activation type");
  if (x.batch > 1 && x.stride < w.cols) return invalid_argument("gemm_int: activation stride < cols");
  if (workspace.size() < int_gemm_workspace_floats(w.cols, x.batch))
    return invalid_argument("gemm_int: workspace of " + std::to_string(workspace.size()) + " floats, need " +
                            std::to_string(int_gemm_workspace_floats(w.cols, x.batch)));
  return Status::ok();
}

}  // namespace

const IntGemvKernels& int_gemv_kernels(Isa isa) {
  return detail::table_for_isa(isa, kScalarKernels, kAvx2Kernels, kAvx512Kernels);
}

const IntGemvKernels& best_int_gemv_kernels() {
  static const IntGemvKernels& best = int_gemv_kernels(best_isa());
  return best;
}

const char* int_kernel_name(const IntGemvKernels& k, uint32_t batch) {
  if (batch <= 1) return k.gemv_name;
  return uses_wide(k, batch) ? k.gemm_wide_name : k.gemm_small_name;
}

uint32_t int_i8_unit_column(uint32_t bits, uint32_t i) {
  const uint32_t v = i / 32, lane = (i % 32) / 16;
  if (bits == 4) return 32 * lane + 2 * (i % 16) + v;
  return 32 * lane + 4 * (i % 8) + 2 * v + (i % 16) / 8;
}

const char* int_kernel_name(const IntGemvKernels& k, uint32_t bits, uint32_t batch, ActivationQuant quant) {
  if (quant == ActivationQuant::kInt8 && uses_i8(k, bits, batch)) return k.gemm_i8_name;
  return int_kernel_name(k, batch);
}

size_t int_gemm_workspace_floats(uint32_t cols, uint32_t batch) {
  // Float kernels: the transposed layout (padded columns x batch stride) is the
  // larger of the two; with kInt8 the tokens' s q are staged before it.
  const size_t padded = detail::int_padded_cols(cols);
  const size_t float_layout = kAlignFloats + padded * std::max<size_t>(batch, detail::int_batch_stride(batch));
  const size_t staged = kAlignFloats + static_cast<size_t>(batch) * cols;
  return std::max(staged + float_layout, i8_workspace_floats(cols, batch));
}

Status gemm_int(const IntGemvKernels& kernels, const intn::PackedIntView& w, const ActivationsView& x_in,
                const OutputView& y, std::span<float> workspace, ThreadPool* pool, ActivationQuant quant) {
  SUBMOE_RETURN_IF_ERROR(check_args(kernels, w, x_in, y, workspace));
  if (quant != ActivationQuant::kExact && quant != ActivationQuant::kInt8)
    return invalid_argument("gemm_int: unknown activation quantization");
  IntGemmArgs args;
  args.w = w;
  args.batch = x_in.batch;
  args.y = y.data;
  args.y_stride = y.stride;
  float* xs = align_up(workspace.data());
  constexpr size_t kGrain = 16;  // a multiple of every kernel's row tile
  if (quant == ActivationQuant::kInt8 && uses_i8(kernels, w.bits, x_in.batch)) {
    prepare_i8(kernels, w, x_in, xs, &args);
    detail::run_rows(kernels.gemm_i8, args, w.rows, kGrain, pool);
    return Status::ok();
  }
  ActivationsView x = x_in;
  if (quant == ActivationQuant::kInt8) {  // the float kernels over each token's s q
    thread_local std::vector<int8_t> q;
    q.resize(w.cols);
    for (uint32_t t = 0; t < x.batch; ++t) {
      const float s = detail::quantize_token_i8(kernels.quantize_i8, x_in, t, w.cols, q.data());
      for (uint32_t c = 0; c < w.cols; ++c) xs[static_cast<size_t>(t) * w.cols + c] = s * static_cast<float>(q[c]);
    }
    x = ActivationsView::f32(xs, x.batch, w.cols);
    xs = align_up(xs + static_cast<size_t>(x.batch) * w.cols);
  }
  IntRowsFn fn;
  if (uses_wide(kernels, x.batch)) {
    fn = kernels.gemm_wide;
    args.batch_stride = detail::int_batch_stride(x.batch);
    prepare_transposed(x, w.cols, args.batch_stride, xs);
  } else {
    fn = x.batch == 1 ? kernels.gemv : kernels.gemm_small;
    args.x_stride = detail::int_padded_cols(w.cols);
    prepare_rows(x, w.cols, args.x_stride, xs);
  }
  args.xs = xs;
  // Rows are independent and cost the same.
  detail::run_rows(fn, args, w.rows, kGrain, pool);
  return Status::ok();
}

}  // namespace submoe::kernels
