#include "submoe/kernels/nf4_gemv.h"

#include <algorithm>
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
const Nf4GemvKernels kScalar{Isa::kScalar, &detail::nf4_rows_scalar, &detail::nf4_rows_i8_scalar};
const Nf4GemvKernels kAvx2{Isa::kAvx2, &detail::nf4_rows_avx2, &detail::nf4_rows_i8_avx2};

const Nf4GemvKernels& avx512_table() {
  static const Nf4GemvKernels table{Isa::kAvx512, &detail::nf4_rows_avx512,
                                    cpu_features().avx512_vnni ? &detail::nf4_rows_i8_avx512vnni
                                                               : &detail::nf4_rows_i8_avx2};
  return table;
}

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

const Nf4GemvKernels& nf4_gemv_kernels(Isa isa) {
  return isa == Isa::kAvx512 ? avx512_table() : detail::table_for_isa(isa, kScalar, kAvx2, kAvx2);
}

const Nf4GemvKernels& best_nf4_gemv_kernels() {
  static const Nf4GemvKernels& best = nf4_gemv_kernels(best_isa());
  return best;
}

// The checks both products share: shape, batch, the matrix's pointers, the
// inputs and output (x: x or xq, the caller's) and their strides.
static Status check_args(const char* fn, const Nf4View& w, uint32_t batch, bool inputs, size_t x_stride, const float* y,
                  size_t y_stride) {
  if (!nf4::check_shape(w.rows, w.cols, w.block).is_ok())
    return invalid_argument(std::string(fn) + ": a [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) +
                            "] matrix in blocks of " + std::to_string(w.block) +
                            " (a power-of-two block of 32..4096 dividing the columns)");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument(std::string(fn) + ": batch out of range");
  if (w.codes == nullptr || w.absmax == nullptr || (w.scales == nf4::Nf4Scales::kDq8 && w.absmax2 == nullptr) ||
      !inputs || y == nullptr)
    return invalid_argument(std::string(fn) + ": null pointer");
  if (batch > 1 && (x_stride < w.cols || y_stride < w.rows))
    return invalid_argument(std::string(fn) + ": stride smaller than the row");
  return Status::ok();
}

Status gemm_nf4(const Nf4GemvKernels& k, const Nf4GemmArgs& a, ThreadPool* pool) {
  const Nf4View& w = a.w;
  SUBMOE_RETURN_IF_ERROR(check_args("gemm_nf4", w, a.batch, a.x != nullptr, a.x_stride, a.y, a.y_stride));
  Nf4GemmArgs rows_args = a;
  rows_args.x = detail::deinterleave_activations(a.x, a.x_stride, a.batch, w.cols);
  rows_args.x_stride = w.cols;
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows, rows_args, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

Status gemm_nf4_i8(const Nf4GemvKernels& k, const Nf4I8Args& a, ThreadPool* pool) {
  const Nf4View& w = a.w;
  SUBMOE_RETURN_IF_ERROR(check_args("gemm_nf4_i8", w, a.batch, a.xq != nullptr && a.x_scales != nullptr, a.xq_stride,
                                    a.y, a.y_stride));
  // The activations in the kernels' layout (Nf4I8Rows), with the lane corrections.
  const uint32_t units = (w.cols + kNf4I8Unit - 1) / kNf4I8Unit;
  const size_t xl_stride = size_t{units} * kNf4I8Unit, nc_stride = size_t{units} * 16;
  thread_local std::vector<int8_t> xl;
  thread_local std::vector<int32_t> neg128;
  xl.assign(xl_stride * a.batch, 0);
  neg128.resize(nc_stride * a.batch);
  for (uint32_t t = 0; t < a.batch; ++t) {
    const int8_t* q = a.xq + t * a.xq_stride;
    int8_t* dst = xl.data() + t * xl_stride;
    int32_t* nc = neg128.data() + t * nc_stride;
    for (uint32_t u = 0; u < units; ++u) {
      const uint32_t pairs = std::min(kNf4I8Unit, w.cols - u * kNf4I8Unit) / 2;
      const int8_t* src = q + size_t{u} * kNf4I8Unit;
      int8_t* odd = dst + size_t{u} * kNf4I8Unit;  // slots as detail::nf4_i8_slot places them
      for (uint32_t j = 0; j < pairs; ++j) {
        odd[j] = src[2 * j + 1];
        odd[64 + j] = src[2 * j];
      }
      for (uint32_t i = 0; i < 16; ++i) {
        int32_t sum = 0;
        for (uint32_t j = 0; j < 4; ++j) sum += odd[4 * i + j] + odd[64 + 4 * i + j];
        nc[u * 16 + i] = -128 * sum;
      }
    }
  }
  Nf4I8Rows rows{w, xl.data(), neg128.data(), units, a.x_scales, a.batch, a.y, a.y_stride};
  const size_t macs = size_t{w.rows} * w.cols * a.batch;
  detail::run_rows(k.rows_i8, rows, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
