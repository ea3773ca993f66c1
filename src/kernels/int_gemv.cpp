// Driver of the fused int kernels: argument checks, activation preparation
// (conversion to f32 and the layout the chosen kernel reads), row split across
// the thread pool, dispatch to the ISA table chosen by the caller.
#include "submoe/kernels/int_gemv.h"

#include <algorithm>
#include <cstring>
#include <string>

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
};

const IntGemvKernels kAvx2Kernels = {
    Isa::kAvx2,
    "gemv_f32_int_packed_avx2", detail::gemv_f32_int_packed_avx2,
    "gemm_f32_int_packed_small_avx2", detail::gemm_f32_int_packed_small_avx2, detail::kIntSmallBatchAvx2,
    "gemm_f32_int_packed_wide_avx2", detail::gemm_f32_int_packed_wide_avx2,
};

const IntGemvKernels kAvx512Kernels = {
    Isa::kAvx512,
    "gemv_f32_int_packed_avx512", detail::gemv_f32_int_packed_avx512,
    "gemm_f32_int_packed_small_avx512", detail::gemm_f32_int_packed_small_avx512, detail::kIntSmallBatchAvx512,
    "gemm_f32_int_packed_wide_avx512", detail::gemm_f32_int_packed_wide_avx512,
};

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

size_t int_gemm_workspace_floats(uint32_t cols, uint32_t batch) {
  // The transposed layout (padded columns x batch stride) is the larger of the two.
  const size_t padded = detail::int_padded_cols(cols);
  return kAlignFloats + padded * std::max<size_t>(batch, detail::int_batch_stride(batch));
}

Status gemm_int(const IntGemvKernels& kernels, const intn::PackedIntView& w, const ActivationsView& x,
                const OutputView& y, std::span<float> workspace, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_args(kernels, w, x, y, workspace));
  IntGemmArgs args;
  args.w = w;
  args.batch = x.batch;
  args.y = y.data;
  args.y_stride = y.stride;
  float* xs = align_up(workspace.data());
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

  // Rows are independent and cost the same; the grain keeps chunks a multiple
  // of the kernels' row tiles.
  constexpr size_t kGrain = 16;
  detail::run_rows(fn, args, w.rows, kGrain, pool);
  return Status::ok();
}

}  // namespace submoe::kernels
