#include "submoe/kernels/mxfp4_gemv.h"

#include <array>
#include <cmath>
#include <string>

#include "mxfp4_gemv_internal.h"
#include "row_dispatch.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace detail {

const float* e8m0_half_table() {
  static const auto table = [] {
    std::array<float, 256> t{};
    for (int s = 0; s < 256; ++s) t[static_cast<size_t>(s)] = std::ldexp(1.0f, s - 128);
    return t;
  }();
  return table.data();
}

}  // namespace detail

namespace {
// Rows per block a pool thread takes.
constexpr size_t kRowGrain = 16;
// Below this many multiply-adds the call stays on one thread.
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const Mxfp4GemvKernels kScalar{Isa::kScalar, &detail::mxfp4_rows_scalar, &detail::mxfp4_rows_i8_scalar};
const Mxfp4GemvKernels kAvx2{Isa::kAvx2, &detail::mxfp4_rows_avx2, &detail::mxfp4_rows_i8_avx2};
const Mxfp4GemvKernels kAvx512{Isa::kAvx512, &detail::mxfp4_rows_avx512, &detail::mxfp4_rows_i8_avx2};

Status check_shape(const Mxfp4View& w, uint32_t batch) {
  if (w.cols % kMxfp4Block != 0 || w.rows == 0 || w.cols == 0)
    return invalid_argument("gemm_mxfp4: a [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) +
                            "] matrix (columns must be a positive multiple of 32)");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument("gemm_mxfp4: batch out of range");
  if (w.blocks == nullptr || w.scales == nullptr) return invalid_argument("gemm_mxfp4: null matrix");
  return Status::ok();
}
}  // namespace

const Mxfp4GemvKernels& mxfp4_gemv_kernels(Isa isa) { return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512); }

const Mxfp4GemvKernels& best_mxfp4_gemv_kernels() {
  static const Mxfp4GemvKernels& best = mxfp4_gemv_kernels(best_isa());
  return best;
}

Status gemm_mxfp4(const Mxfp4GemvKernels& k, const Mxfp4GemmArgs& a, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_shape(a.w, a.batch));
  if (a.x == nullptr || a.y == nullptr) return invalid_argument("gemm_mxfp4: null pointer");
  if (a.batch > 1 && (a.x_stride < a.w.cols || a.y_stride < a.w.rows))
    return invalid_argument("gemm_mxfp4: stride smaller than the row");
  const size_t macs = size_t{a.w.rows} * a.w.cols * a.batch;
  detail::run_rows(k.rows, a, a.w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

Status gemm_mxfp4_i8(const Mxfp4GemvKernels& k, const Mxfp4I8Args& a, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_shape(a.w, a.batch));
  if (a.xq == nullptr || a.x_scales == nullptr || a.y == nullptr) return invalid_argument("gemm_mxfp4_i8: null pointer");
  if (a.batch > 1 && (a.xq_stride < a.w.cols || a.y_stride < a.w.rows))
    return invalid_argument("gemm_mxfp4_i8: stride smaller than the row");
  const size_t macs = size_t{a.w.rows} * a.w.cols * a.batch;
  detail::run_rows(k.rows_i8, a, a.w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
