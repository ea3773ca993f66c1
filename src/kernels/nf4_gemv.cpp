#include "submoe/kernels/nf4_gemv.h"

#include <cstring>
#include <string>
#include <vector>

#include "deinterleave.h"
#include "finite_half.h"
#include "nf4_gemv_internal.h"
#include "row_dispatch.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
// Rows per block a pool thread takes.
constexpr size_t kRowGrain = 16;
// Below this many multiply-adds the call stays on one thread.
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const Nf4GemvKernels kScalar{Isa::kScalar, &detail::nf4_rows_scalar};
const Nf4GemvKernels kAvx2{Isa::kAvx2, &detail::nf4_rows_avx2};
const Nf4GemvKernels kAvx512{Isa::kAvx512, &detail::nf4_rows_avx512};

}  // namespace

Nf4View Nf4View::of(const nf4::Nf4Matrix& m) {
  Nf4View v;
  v.codes = m.codes.data();
  v.rows = m.rows;
  v.cols = m.cols;
  v.block = m.block;
  v.scales = m.scales;
  switch (m.scales) {
    case nf4::Nf4Scales::kF32: v.absmax = m.absmax_f32.data(); break;
    case nf4::Nf4Scales::kF16: v.absmax = m.absmax_f16.data(); break;
    case nf4::Nf4Scales::kDq8: v.absmax = m.absmax_codes.data(); break;
  }
  v.absmax2 = m.absmax2.data();
  v.offset = m.offset;
  return v;
}

void nf4_row_absmax(const Nf4View& w, uint32_t r, float* out) {
  const uint32_t nb = w.cols / w.block;
  const size_t b0 = size_t{r} * nb;
  switch (w.scales) {
    case nf4::Nf4Scales::kF32:
      for (uint32_t b = 0; b < nb; ++b) out[b] = static_cast<const float*>(w.absmax)[b0 + b];
      break;
    case nf4::Nf4Scales::kF16:
      for (uint32_t b = 0; b < nb; ++b) out[b] = detail::finite_half_to_float(static_cast<const uint16_t*>(w.absmax)[b0 + b]);
      break;
    case nf4::Nf4Scales::kDq8:
      for (uint32_t b = 0; b < nb; ++b) {
        const size_t i = b0 + b;
        const float a = nf4::kDynamic8[static_cast<const uint8_t*>(w.absmax)[i]] * w.absmax2[i / nf4::kDq8Group];
        out[b] = a + w.offset;
      }
      break;
  }
}

const Nf4GemvKernels& nf4_gemv_kernels(Isa isa) { return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512); }

const Nf4GemvKernels& best_nf4_gemv_kernels() {
  static const Nf4GemvKernels& best = nf4_gemv_kernels(best_isa());
  return best;
}

Status gemm_nf4(const Nf4GemvKernels& k, const Nf4GemmArgs& a, ThreadPool* pool) {
  const Nf4View& w = a.w;
  if (!nf4::check_shape(w.rows, w.cols, w.block).is_ok())
    return invalid_argument("gemm_nf4: a [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) +
                            "] matrix in blocks of " + std::to_string(w.block) +
                            " (a power-of-two block of 32..4096 dividing the columns)");
  if (a.batch == 0 || a.batch > kMaxKernelBatch) return invalid_argument("gemm_nf4: batch out of range");
  if (w.codes == nullptr || w.absmax == nullptr || (w.scales == nf4::Nf4Scales::kDq8 && w.absmax2 == nullptr) ||
      a.x == nullptr || a.y == nullptr)
    return invalid_argument("gemm_nf4: null pointer");
  if (a.batch > 1 && (a.x_stride < w.cols || a.y_stride < w.rows))
    return invalid_argument("gemm_nf4: stride smaller than the row");
  Nf4GemmArgs rows_args = a;
  rows_args.x = detail::deinterleave_activations(a.x, a.x_stride, a.batch, w.cols);
  rows_args.x_stride = w.cols;
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows, rows_args, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
