#include "submoe/kernels/squeezellm_gemv.h"

#include <string>
#include <vector>

#include "deinterleave.h"
#include "row_dispatch.h"
#include "squeezellm_gemv_internal.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
constexpr size_t kRowGrain = 16;
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const SqueezeGemvKernels kScalar{Isa::kScalar, &detail::squeezellm_rows_scalar, &detail::squeezellm_rows_i8_scalar};
const SqueezeGemvKernels kAvx2{Isa::kAvx2, &detail::squeezellm_rows_avx2, &detail::squeezellm_rows_i8_scalar};
const SqueezeGemvKernels& avx512_table() {
  static const SqueezeGemvKernels table{Isa::kAvx512, &detail::squeezellm_rows_avx512,
                                        cpu_features().avx512_vnni ? &detail::squeezellm_rows_i8_avx512vnni
                                                                   : &detail::squeezellm_rows_i8_scalar};
  return table;
}
}  // namespace

SqueezeView SqueezeView::of(const squeezellm::SqueezeMatrix& m) {
  SqueezeView v;
  v.codes = m.codes.data();
  v.lut = m.lut.data();
  v.rows = m.rows;
  v.cols = m.cols;
  v.bits = m.bits;
  if (m.sparse) {
    v.row_ptr = m.row_ptr.data();
    v.col = m.col.data();
    v.value = m.value.data();
  }
  return v;
}

const SqueezeGemvKernels& squeezellm_gemv_kernels(Isa isa) {
  // The 3-bit AVX-512 path needs VBMI (vpmultishiftqb); without it the AVX2 rows run.
  if (isa == Isa::kAvx512 && !cpu_features().avx512_vbmi) return kAvx2;
  return isa == Isa::kAvx512 ? avx512_table() : detail::table_for_isa(isa, kScalar, kAvx2, kAvx2);
}

const SqueezeGemvKernels& best_squeezellm_gemv_kernels() {
  static const SqueezeGemvKernels& best = squeezellm_gemv_kernels(best_isa());
  return best;
}

// The checks both products share: shape, batch, the matrix's pointers, the
// inputs and output (x: x or xq, the caller's) and their strides.
static Status check_args(const char* fn, const SqueezeView& w, uint32_t batch, bool inputs, size_t x_stride, const float* y,
                  size_t y_stride) {
  if (!squeezellm::check_shape(w.rows, w.cols, w.bits).is_ok())
    return invalid_argument(std::string(fn) + ": a " + std::to_string(w.bits) + "-bit [" + std::to_string(w.rows) +
                            ", " + std::to_string(w.cols) + "] matrix (3 or 4 bits, columns a multiple of 32)");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument(std::string(fn) + ": batch out of range");
  if (w.codes == nullptr || w.lut == nullptr || !inputs || y == nullptr ||
      (w.row_ptr != nullptr && (w.col == nullptr || w.value == nullptr)))
    return invalid_argument(std::string(fn) + ": null pointer");
  if (batch > 1 && (x_stride < w.cols || y_stride < w.rows))
    return invalid_argument(std::string(fn) + ": stride smaller than the row");
  return Status::ok();
}

Status gemm_squeezellm(const SqueezeGemvKernels& k, const SqueezeGemmArgs& a, ThreadPool* pool) {
  const SqueezeView& w = a.w;
  SUBMOE_RETURN_IF_ERROR(check_args("gemm_squeezellm", w, a.batch, a.x != nullptr, a.x_stride, a.y, a.y_stride));
  SqueezeGemmArgs rows_args = a;
  if (w.bits == 4) rows_args.x_split = detail::deinterleave_activations(a.x, a.x_stride, a.batch, w.cols);
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows, rows_args, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

Status gemm_squeezellm_i8(const SqueezeGemvKernels& k, const SqueezeI8Args& a, ThreadPool* pool) {
  const SqueezeView& w = a.w;
  SUBMOE_RETURN_IF_ERROR(check_args("gemm_squeezellm_i8", w, a.batch, a.xq != nullptr && a.x_scales != nullptr,
                                    a.xq_stride, a.y, a.y_stride));
  thread_local std::vector<int32_t> q_sums;
  thread_local std::vector<float> dequant;
  q_sums.assign(a.batch, 0);
  if (w.row_ptr != nullptr) dequant.resize(size_t{a.batch} * w.cols);
  for (uint32_t t = 0; t < a.batch; ++t) {
    const int8_t* q = a.xq + t * a.xq_stride;
    int32_t sum = 0;
    for (uint32_t c = 0; c < w.cols; ++c) sum += q[c];
    q_sums[t] = sum;
    if (w.row_ptr != nullptr)
      for (uint32_t c = 0; c < w.cols; ++c) dequant[size_t{t} * w.cols + c] = a.x_scales[t] * static_cast<float>(q[c]);
  }
  const SqueezeI8Rows rows{a, q_sums.data(), w.row_ptr != nullptr ? dequant.data() : nullptr};
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows_i8, rows, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
