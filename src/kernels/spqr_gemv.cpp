#include "submoe/kernels/spqr_gemv.h"

#include <string>

#include "row_dispatch.h"
#include "spqr_gemv_internal.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
constexpr size_t kRowGrain = 16;
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const SpqrGemvKernels kScalar{Isa::kScalar, &detail::spqr_rows_scalar};
const SpqrGemvKernels kAvx2{Isa::kAvx2, &detail::spqr_rows_avx2};
const SpqrGemvKernels kAvx512{Isa::kAvx512, &detail::spqr_rows_avx512};
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
  // The AVX-512 rows need VBMI (vpmultishiftqb); without it the AVX2 rows run.
  if (isa == Isa::kAvx512 && !cpu_features().avx512_vbmi) return kAvx2;
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

}  // namespace submoe::kernels
