#include "submoe/kernels/e8p_gemv.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "e8p_gemv_internal.h"
#include "row_dispatch.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
constexpr size_t kRowGrain = 16;
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const E8pGemvKernels kScalar{Isa::kScalar, &detail::e8p_rows_scalar, &detail::e8p_rows_i8_scalar, true};
// The AVX2 rows decode 4 codes at a time in column order; the AVX-512 ones
// need VBMI (vpermi2b), VNNI and BF16 (vdpbf16ps), else the AVX2 rows run.
const E8pGemvKernels kAvx2{Isa::kAvx2, &detail::e8p_rows_avx2, &detail::e8p_rows_i8_avx2, false};
const E8pGemvKernels kAvx512{Isa::kAvx512, &detail::e8p_rows_avx512, &detail::e8p_rows_i8_avx512, true, true};

// Token t's activations in the table's layout (planar or column order), zero-padded.
template <typename T>
void to_layout(bool planar, const T* x, uint32_t cols, uint32_t chunks, T* out) {
  std::fill(out, out + size_t{chunks} * kE8pChunkCols, T{});
  if (!planar) {
    std::copy(x, x + cols, out);
    return;
  }
  for (uint32_t c = 0; c < cols; ++c) {
    const uint32_t j = c / kE8pChunkCols, rest = c % kE8pChunkCols;
    out[size_t{j} * kE8pChunkCols + (rest % e8p::kDim) * kE8pChunkCodes + rest / e8p::kDim] = x[c];
  }
}

Status check(const E8pPanels& w, uint32_t batch, const void* x, const float* y, const char* what) {
  if (w.rows == 0 || w.chunks == 0 || w.data.size() != size_t{w.rows} * w.chunks * w.chunk_bytes)
    return invalid_argument(std::string(what) + ": empty or unpacked matrix");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument(std::string(what) + ": batch out of range");
  if (x == nullptr || y == nullptr) return invalid_argument(std::string(what) + ": null pointer");
  return Status::ok();
}
}  // namespace

namespace detail {
const E8pTables& e8p_tables() {
  static const E8pTables t = [] {
    E8pTables out{};
    for (uint32_t a = 0; a < e8p::kAbsEntries; ++a) {
      // The stored pattern: quarters of code (a << 8) (signs 0, parity 0) less the +1/4 shift.
      int8_t q[e8p::kDim];
      e8p::quarters(static_cast<uint16_t>(a << 8), q);
      for (uint32_t c = 0; c < e8p::kDim; ++c) {
        out.abs[c][a] = static_cast<int8_t>(q[c] - 1);
        out.one_bit[c][a] = e8p::one_bit_halves()[a][c];
        out.abs_rows[a] |= uint64_t{static_cast<uint8_t>(out.abs[c][a])} << (8 * c);
        out.one_bit_rows[a] |= uint64_t{static_cast<uint8_t>(out.one_bit[c][a])} << (8 * c);
      }
    }
    return out;
  }();
  return t;
}
}  // namespace detail

Result<E8pPanels> E8pPanels::pack(const e8p::E8pMatrix& m) {
  SUBMOE_RETURN_IF_ERROR(e8p::check_bits(m.bits));
  SUBMOE_RETURN_IF_ERROR(e8p::check_shape(m.rows, m.cols));
  const uint32_t per_row = m.cols / e8p::kDim;
  const size_t n = size_t{m.rows} * per_row;
  if (m.codes.size() != n || m.scales.size() != m.rows ||
      m.residual.size() != (m.stage2() == e8p::Stage2::kNone ? 0 : n))
    return invalid_argument("E8pPanels::pack: field sizes do not match the shape");
  E8pPanels p;
  p.rows = m.rows;
  p.cols = m.cols;
  p.bits = m.bits;
  p.stage2 = m.stage2();
  p.chunks = (per_row + kE8pChunkCodes - 1) / kE8pChunkCodes;
  p.chunk_bytes = 2 * kE8pChunkCodes + (p.stage2 == e8p::Stage2::kE8p     ? 2 * kE8pChunkCodes
                                         : p.stage2 == e8p::Stage2::kOneBit ? kE8pChunkCodes
                                                                            : 0);
  p.data = AlignedBuffer<uint8_t>(size_t{m.rows} * p.chunks * p.chunk_bytes);
  p.scales = AlignedBuffer<float>(m.rows);
  for (uint32_t r = 0; r < m.rows; ++r) {
    p.scales.data()[r] = f16_bits_to_float(m.scales[r]);
    for (uint32_t k = 0; k < per_row; ++k) {
      uint8_t* ch = p.data.data() + (size_t{r} * p.chunks + k / kE8pChunkCodes) * p.chunk_bytes;
      const uint32_t lane = k % kE8pChunkCodes;
      const size_t i = size_t{r} * per_row + k;
      ch[lane] = static_cast<uint8_t>(m.codes[i] >> 8);
      ch[kE8pChunkCodes + lane] = static_cast<uint8_t>(m.codes[i]);
      if (p.stage2 == e8p::Stage2::kE8p) {
        ch[2 * kE8pChunkCodes + lane] = static_cast<uint8_t>(m.residual[i] >> 8);
        ch[3 * kE8pChunkCodes + lane] = static_cast<uint8_t>(m.residual[i]);
      } else if (p.stage2 == e8p::Stage2::kOneBit) {
        ch[2 * kE8pChunkCodes + lane] = static_cast<uint8_t>(m.residual[i]);
      }
    }
  }
  return p;
}

const E8pGemvKernels& e8p_gemv_kernels(Isa isa) {
  if (isa == Isa::kAvx512 &&
      !(cpu_features().avx512_vbmi && cpu_features().avx512_vnni && cpu_features().avx512_bf16))
    return kAvx2;
  return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512);
}

const E8pGemvKernels& best_e8p_gemv_kernels() {
  static const E8pGemvKernels& best = e8p_gemv_kernels(best_isa());
  return best;
}

Status gemm_e8p(const E8pGemvKernels& k, const E8pPanels& w, const float* x, uint32_t batch, float* y,
                ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check(w, batch, x, y, "gemm_e8p"));
  const uint32_t pc = w.padded_cols();
  thread_local AlignedBuffer<float> prepared;
  if (prepared.size() < size_t{batch} * pc) prepared = AlignedBuffer<float>(size_t{batch} * pc);
  for (uint32_t t = 0; t < batch; ++t) to_layout(k.planar, x + size_t{t} * w.cols, w.cols, w.chunks, prepared.data() + size_t{t} * pc);
  E8pArgs a;
  if (k.split_bf16) {
    thread_local AlignedBuffer<uint16_t> hi, lo;
    if (hi.size() < size_t{batch} * pc) {
      hi = AlignedBuffer<uint16_t>(size_t{batch} * pc);
      lo = AlignedBuffer<uint16_t>(size_t{batch} * pc);
    }
    for (size_t i = 0; i < size_t{batch} * pc; ++i) {
      const bf16_t h = float_to_bf16(prepared.data()[i]);
      hi.data()[i] = h.bits;
      lo.data()[i] = float_to_bf16(prepared.data()[i] - bf16_to_float(h)).bits;
    }
    a.x_hi = hi.data();
    a.x_lo = lo.data();
  }
  a.w = &w;
  a.batch = batch;
  a.x = prepared.data();
  a.y = y;
  a.y_stride = w.rows;
  const size_t macs = size_t{w.rows} * w.cols * batch;
  detail::run_rows(k.rows, a, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

Status gemm_e8p_i8(const E8pGemvKernels& k, const E8pPanels& w, const int8_t* xq, const float* scales,
                   uint32_t batch, float* y, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check(w, batch, xq, y, "gemm_e8p_i8"));
  if (scales == nullptr) return invalid_argument("gemm_e8p_i8: null pointer");
  const uint32_t pc = w.padded_cols();
  thread_local AlignedBuffer<int8_t> prepared;
  thread_local std::vector<int32_t> sums;
  if (prepared.size() < size_t{batch} * pc) prepared = AlignedBuffer<int8_t>(size_t{batch} * pc);
  sums.assign(batch, 0);
  for (uint32_t t = 0; t < batch; ++t) {
    const int8_t* src = xq + size_t{t} * w.cols;
    to_layout(k.planar, src, w.cols, w.chunks, prepared.data() + size_t{t} * pc);
    for (uint32_t c = 0; c < w.cols; ++c) sums[t] += src[c];
  }
  E8pArgs a;
  a.w = &w;
  a.batch = batch;
  a.xq = prepared.data();
  a.xq_sums = sums.data();
  a.xq_scales = scales;
  a.y = y;
  a.y_stride = w.rows;
  const size_t macs = size_t{w.rows} * w.cols * batch;
  detail::run_rows(k.rows_i8, a, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
