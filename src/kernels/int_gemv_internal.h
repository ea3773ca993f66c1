// Declarations of the per-ISA int kernels (one translation unit per ISA) and
// helpers they share. Not a public header: callers use submoe/kernels/int_gemv.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/int8_activations.h"
#include "submoe/kernels/int_gemv.h"

namespace submoe::kernels::detail {

// kRows: token stride = cols rounded up to this (zeros past cols), so a row's
// last run of 8 or 16 weights multiplies zeros.
inline constexpr uint32_t kIntColPad = 16;
constexpr size_t int_padded_cols(uint32_t cols) { return (static_cast<size_t>(cols) + kIntColPad - 1) / kIntColPad * kIntColPad; }

// kTransposed: floats per column for a batch (8, or a multiple of 16).
constexpr uint32_t int_batch_stride(uint32_t batch) { return batch <= 8 ? 8u : (batch + 15) / 16 * 16; }

// Columns [begin, end) of group g (a per-row grid is one group of all columns).
// Group starts are multiples of 32, so runs of 8 or 16 never straddle groups.
struct ColumnRange {
  uint32_t begin, end;
};
inline ColumnRange group_columns(const intn::PackedIntView& w, uint32_t g) {
  if (w.group_size == 0) return {0, w.cols};
  const uint32_t begin = g * w.group_size;
  const uint32_t end = begin + w.group_size < w.cols ? begin + w.group_size : w.cols;
  return {begin, end};
}

// The `n` bytes (n <= 8) of codes starting at byte `p`, little-endian. A run of
// 8 codes at a column that is a multiple of 8 is exactly `bits` bytes; the last
// run of a row may hold fewer bytes before the row ends (its codes past cols
// decode from the zero padding or from nothing, and meet zero activations).
inline uint64_t load_code_bytes(const uint8_t* p, size_t n) {
  uint64_t u = 0;
  std::memcpy(&u, p, n);
  return u;
}

// The same for a whole run of N = 2, 3, 4, 6 or 8 bytes, as loads of exact
// integer widths: a memcpy of 3 or 6 bytes into a zeroed uint64 compiles to
// narrow stores plus a wide reload, a store-forwarding stall that made the
// 3-bit kernels 8x slower than the 2- and 4-bit ones.
template <int N>
inline uint64_t load_run(const uint8_t* p) {
  if constexpr (N == 3) {
    return load_run<2>(p) | (static_cast<uint64_t>(p[2]) << 16);
  } else if constexpr (N == 6) {
    return load_run<4>(p) | (load_run<2>(p + 4) << 32);
  } else {
    static_assert(N == 2 || N == 4 || N == 8);
    using T = std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>;
    T v;
    std::memcpy(&v, p, N);
    return v;
  }
}

// Scalar: any batch, kRows; a plain loop per weight, the readable reference of
// the fast paths.
void gemm_f32_int_packed_scalar(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// Scalar with int8 activations (IntI8Layout::kNatural): the integer sums per
// group, then scale and zero point, the readable reference of the int8 paths.
void gemm_i8_int_packed_scalar(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX2 with int8 activations (IntI8Layout::kUnits64), 2 and 4 bits, B <= 4:
// vpmaddubsw over units of 64 columns.
void gemm_i8_int_packed_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX2: runs of 8 weights expanded with one variable shift; batch 1 and small
// batches keep per-token accumulators in registers (kRows), larger batches
// broadcast each weight into all tokens (kTransposed).
void gemv_f32_int_packed_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_int_packed_small_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_int_packed_wide_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
inline constexpr uint32_t kIntSmallBatchAvx2 = 4;

// AVX-512: the same with runs of 16 weights.
void gemv_f32_int_packed_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_int_packed_small_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_int_packed_wide_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end);
inline constexpr uint32_t kIntSmallBatchAvx512 = 4;

}  // namespace submoe::kernels::detail
