#include "submoe/kernels/spqr_gemv.h"

#include <algorithm>
#include <string>
#include <vector>

#include "row_dispatch.h"
#include "spqr_gemv_internal.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
constexpr size_t kRowGrain = 16;
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const SpqrGemvKernels kScalar{Isa::kScalar, &detail::spqr_rows_scalar, &detail::spqr_rows_i8_scalar};
// The int8 rows need AVX-512 VNNI (vpdpbusd); AVX2 hosts run the scalar ones.
const SpqrGemvKernels kAvx2{Isa::kAvx2, &detail::spqr_rows_avx2, &detail::spqr_rows_i8_scalar};
const SpqrGemvKernels kAvx512{Isa::kAvx512, &detail::spqr_rows_avx512, &detail::spqr_rows_i8_avx512};
}  // namespace

SpqrView SpqrView::of(const spqr::SpqrMatrix& m) {
  SpqrView v;
  v.codes = m.codes.data();
  v.stat_codes = m.stat_codes.data();
  v.stat_params = m.stat_params.data();
  v.rows = m.rows;
  v.cols = m.cols;
  v.bits = m.bits;
  v.row_ptr = m.sparse.row_ptr.data();
  v.col = m.sparse.col.data();
  v.value = m.sparse.value.data();
  return v;
}

const SpqrGemvKernels& spqr_gemv_kernels(Isa isa) {
  // The AVX-512 rows need VBMI (vpmultishiftqb) and VNNI; without them the AVX2 rows run.
  if (isa == Isa::kAvx512 && !(cpu_features().avx512_vbmi && cpu_features().avx512_vnni)) return kAvx2;
  return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512);
}

const SpqrGemvKernels& best_spqr_gemv_kernels() {
  static const SpqrGemvKernels& best = spqr_gemv_kernels(best_isa());
  return best;
}

Status gemm_spqr(const SpqrGemvKernels& k, const SpqrGemmArgs& a, ThreadPool* pool) {
  const SpqrView& w = a.w;
  if (!spqr::check_shape(w.rows, w.cols, w.bits).is_ok())
    return invalid_argument("gemm_spqr: a " + std::to_string(w.bits) + "-bit [" + std::to_string(w.rows) + ", " +
                            std::to_string(w.cols) + "] matrix (2 to 4 bits, columns a multiple of 16)");
  if (a.batch == 0 || a.batch > kMaxKernelBatch) return invalid_argument("gemm_spqr: batch out of range");
  if (w.codes == nullptr || w.stat_codes == nullptr || w.stat_params == nullptr || w.row_ptr == nullptr ||
      a.x == nullptr || a.y == nullptr)
    return invalid_argument("gemm_spqr: null pointer");
  if (a.batch > 1 && (a.x_stride < w.cols || a.y_stride < w.rows))
    return invalid_argument("gemm_spqr: stride smaller than the row");
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows, a, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

Status gemm_spqr_i8(const SpqrGemvKernels& k, const SpqrI8Args& a, ThreadPool* pool) {
  const SpqrView& w = a.w;
  if (!spqr::check_shape(w.rows, w.cols, w.bits).is_ok())
    return invalid_argument("gemm_spqr_i8: a " + std::to_string(w.bits) + "-bit [" + std::to_string(w.rows) + ", " +
                            std::to_string(w.cols) + "] matrix (2 to 4 bits, columns a multiple of 16)");
  if (a.batch == 0 || a.batch > kMaxKernelBatch) return invalid_argument("gemm_spqr_i8: batch out of range");
  if (w.codes == nullptr || w.stat_codes == nullptr || w.stat_params == nullptr || w.row_ptr == nullptr ||
      a.xq == nullptr || a.x_scales == nullptr || a.y == nullptr)
    return invalid_argument("gemm_spqr_i8: null pointer");
  if (a.batch > 1 && (a.xq_stride < w.cols || a.y_stride < w.rows))
    return invalid_argument("gemm_spqr_i8: stride smaller than the row");
  const uint32_t groups = w.cols / spqr::kGroup;
  thread_local std::vector<float> sums;
  thread_local std::vector<int8_t> padded;
  sums.resize(size_t{a.batch} * groups);
  padded.assign(size_t{a.batch} * (w.cols + 4), 0);
  for (uint32_t t = 0; t < a.batch; ++t) {
    const int8_t* xq = a.xq + t * a.xq_stride;
    for (uint32_t g = 0; g < groups; ++g) {
      int32_t s = 0;
      for (uint32_t c = 0; c < spqr::kGroup; ++c) s += xq[g * spqr::kGroup + c];
      sums[size_t{t} * groups + g] = static_cast<float>(s);
    }
    std::copy(xq, xq + w.cols, padded.begin() + static_cast<std::ptrdiff_t>(size_t{t} * (w.cols + 4)));
  }
  SpqrI8Args rows_args = a;
  rows_args.group_sums = sums.data();
  rows_args.xq_padded = padded.data();
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows_i8, rows_args, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
