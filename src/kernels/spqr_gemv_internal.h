// The per-ISA SpQR row kernels (kernels/spqr_gemv.h) and what they share: a
// group's decoded statistics and the code-spreading masks.
#pragma once

#include <cstring>

#include "csr_pass.h"
#include "finite_half.h"
#include "submoe/kernels/spqr_gemv.h"

namespace submoe::kernels::detail {

void spqr_rows_scalar(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void spqr_rows_avx2(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void spqr_rows_avx512(const SpqrGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void spqr_rows_i8_scalar(const SpqrI8Args& a, uint32_t row_begin, uint32_t row_end);
void spqr_rows_i8_avx512(const SpqrI8Args& a, uint32_t row_begin, uint32_t row_end);  // VNNI + VBMI

inline CsrRows spqr_csr(const SpqrView& w) { return {w.row_ptr, w.col, w.value}; }

// Row r's exceptions added to every token's y[r]: s_t sum value q_t[col].
inline void spqr_row_exceptions_i8(const SpqrI8Args& a, uint32_t r) {
  const int32_t begin = a.w.row_ptr[r], end = a.w.row_ptr[r + 1];
  if (begin == end) return;
  for (uint32_t t = 0; t < a.batch; ++t) {
    const int8_t* xq = a.xq + t * a.xq_stride;
    float acc0 = 0.0f, acc1 = 0.0f;
    int32_t i = begin;
    for (; i + 1 < end; i += 2) {
      acc0 += finite_half_to_float(a.w.value[i]) * static_cast<float>(xq[a.w.col[i]]);
      acc1 += finite_half_to_float(a.w.value[i + 1]) * static_cast<float>(xq[a.w.col[i + 1]]);
    }
    if (i < end) acc0 += finite_half_to_float(a.w.value[i]) * static_cast<float>(xq[a.w.col[i]]);
    a.y[t * a.y_stride + r] += a.x_scales[t] * (acc0 + acc1);
  }
}

// Group (r, g)'s scale and zero, by codec/spqr.h's formula (the same float
// operations as spqr::group_stats, so the weights match the decoder's bits).
inline spqr::GroupStats spqr_group_stats(const SpqrView& w, uint32_t r, uint32_t g) {
  const uint32_t groups = w.cols / spqr::kGroup;
  const uint32_t e = spqr::stat_entry(w.stat_codes, size_t{r} * groups + g);
  const uint16_t* par = w.stat_params + ((size_t{r} / spqr::kStatRows) * groups + g) * 4;
  return {finite_half_to_float(par[0]) * (static_cast<float>(e & 7) - finite_half_to_float(par[1])),
          finite_half_to_float(par[2]) * (static_cast<float>(e >> 3) - finite_half_to_float(par[3]))};
}

// One group's 16 codes (2 kBits bytes) as a little-endian word, read without
// touching the bytes after them, in registers (a 6-byte copy into a zeroed
// stack word would stall on store forwarding).
template <uint32_t kBits>
inline uint64_t spqr_group_word(const uint8_t* row_codes, uint32_t g) {
  const uint8_t* p = row_codes + size_t{g} * 2 * kBits;
  if constexpr (kBits == 4) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  } else if constexpr (kBits == 3) {
    uint32_t lo;
    uint16_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 2);
    return lo | (static_cast<uint64_t>(hi) << 32);
  } else {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
}

}  // namespace submoe::kernels::detail
