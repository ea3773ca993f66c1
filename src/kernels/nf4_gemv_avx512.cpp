// AVX-512 NF4 rows: the 16 code bytes of 32 columns widened to 16 dword lanes
// (one byte each); vpermps reads only an index's low 4 bits, so the lanes
// shifted right by 4 look up the even columns (high nibbles) and the lanes
// themselves the odd ones (low nibbles) in the 16-entry float table held in
// one register, scaled by the block's absmax once per block: 3 shuffles per 32
// weights. x arrives de-interleaved to match. Each token takes 2 FMAs per 32
// weights; tokens go 4 at a time so the decoded weights are reused from
// registers.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <vector>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "nf4_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

// The 32 weights of one chunk (codes at `bytes`) times each token's x (its
// token's base pointer plus `off`), into the accumulators `even` / `odd`.
template <int kTokens, int kEven, int kOdd>
inline void chunk_tokens(const float* const (&xb)[kTokens], size_t off, const uint8_t* bytes, __m512 table,
                         __m512 (&acc)[kTokens][4]) {
  const __m512i lanes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512 even = _mm512_permutexvar_ps(_mm512_srli_epi32(lanes, 4), table);
  const __m512 odd = _mm512_permutexvar_ps(lanes, table);
  for (int t = 0; t < kTokens; ++t) {
    acc[t][kEven] = _mm512_fmadd_ps(even, _mm512_loadu_ps(xb[t] + off), acc[t][kEven]);
    acc[t][kOdd] = _mm512_fmadd_ps(odd, _mm512_loadu_ps(xb[t] + off + 16), acc[t][kOdd]);
  }
}

// Row r's absmaxes. Double-quantized ones 16 blocks at a time: the 8-bit
// codes widened, kDynamic8 gathered, times absmax2 plus the offset with the
// explicitly rounded operations (never fused: the reference rounds the
// product, then the sum), bit for bit the scalar decode's floats.
const float* block_absmax(const Nf4View& w, uint32_t r) {
  if (w.scales != nf4::Nf4Scales::kDq8) return nf4_block_absmax(w, r);
  thread_local std::vector<float> out;
  const size_t nb = w.cols / w.block, b0 = size_t{r} * nb;
  out.resize(nb);
  const uint8_t* q = static_cast<const uint8_t*>(w.absmax) + b0;
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512 offset = _mm512_set1_ps(w.offset);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  size_t b = 0;
  for (; b + 16 <= nb; b += 16) {
    const __m512 dyn = _mm512_i32gather_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + b))),
                                           nf4::kDynamic8, 4);
    const size_t i0 = b0 + b;
    const __m512 a2 =
        i0 / nf4::kDq8Group == (i0 + 15) / nf4::kDq8Group
            ? _mm512_set1_ps(w.absmax2[i0 / nf4::kDq8Group])
            : _mm512_i32gather_ps(_mm512_srli_epi32(_mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i0)), iota), 8),
                                  w.absmax2, 4);
    _mm512_storeu_ps(out.data() + b, _mm512_add_round_ps(_mm512_mul_round_ps(dyn, a2, kRound), offset, kRound));
  }
  if (b < nb) {
    thread_local std::vector<float> row;
    row.resize(nb);
    nf4_row_absmax(w, r, row.data());
    for (; b < nb; ++b) out[b] = row[b];
  }
  return out.data();
}

template <int kTokens>
void row_tokens(const Nf4GemmArgs& a, uint32_t r, uint32_t t0) {
  const size_t cols = a.w.cols, blocks = cols / a.w.block, per_block = a.w.block / 32;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = block_absmax(a.w, r);
  const __m512 nf4_table = _mm512_loadu_ps(nf4::kNf4);
  // Token base pointers hoisted: the loop only adds offsets.
  const float* xb[kTokens];
  for (int t = 0; t < kTokens; ++t) xb[t] = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride;
  // Four independent accumulators per token (even / odd columns of even / odd
  // chunks): a single FMA chain would bound a token by the FMA latency.
  __m512 acc[kTokens][4];
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < 4; ++i) acc[t][i] = _mm512_setzero_ps();
  size_t k = 0;
  for (size_t b = 0; b < blocks; ++b) {
    // The block's 16 weight values NF4[q] x absmax (the reference decoder's
    // floats, bit for bit), so each token needs 2 FMAs per 32 weights.
    const __m512 table = _mm512_mul_ps(nf4_table, _mm512_set1_ps(s[b]));
    const size_t end = k + per_block;
    for (; k + 2 <= end; k += 2) {
      chunk_tokens<kTokens, 0, 1>(xb, k * 32, codes + k * 16, table, acc);
      chunk_tokens<kTokens, 2, 3>(xb, k * 32 + 32, codes + k * 16 + 16, table, acc);
    }
    if (k < end) chunk_tokens<kTokens, 0, 1>(xb, k * 32, codes + k * 16, table, acc), ++k;
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3])));
}

// The int8 product (Nf4I8Rows) with VNNI: a unit of 128 columns is one load
// of 64 code bytes; the low and the high nibbles each index kNf4I8 + 128 (an
// unsigned byte) with one vpshufb, and vpdpbusd multiplies those by the signed
// activations, starting from the unit's lane corrections (-128 sum x), so each
// lane holds the exact signed sum of its 8 columns. One cvt and one FMA with
// the lanes' block absmaxes per unit and token: about 10 vector operations per
// 128 weights against 28 for the f32 table above.
constexpr size_t kI8PrefetchBytes = 2048;  // ahead in the row stream (bytes)

template <int kTokens>
void row_tokens_i8(const Nf4I8Rows& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, block = a.w.block, full = cols / kNf4I8Unit;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_block_absmax(a.w, r);
  alignas(16) static constexpr auto kLut = [] {
    std::array<uint8_t, 16> t{};
    for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(kNf4I8[i] + 128);
    return t;
  }();
  const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kLut.data())));
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Lane i covers columns 8i..8i+7 of its unit: block 8i / span past the unit's first.
  const int span = static_cast<int>(std::min(block, kNf4I8Unit));
  __m512i lane_block = _mm512_setzero_si512();
  {
    alignas(64) int32_t idx[16];
    for (int i = 0; i < 16; ++i) idx[i] = 8 * i / span;
    lane_block = _mm512_load_si512(idx);
  }
  const size_t xl_stride = size_t{a.units} * kNf4I8Unit, nc_stride = size_t{a.units} * 16;
  const int8_t* xl[kTokens];
  const int32_t* nc[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    xl[t] = a.xl + (t0 + static_cast<uint32_t>(t)) * xl_stride;
    nc[t] = a.neg128 + (t0 + static_cast<uint32_t>(t)) * nc_stride;
  }
  __m512 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  auto unit = [&](uint32_t u, __m512i v, int k) {
    const __m512i wl = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, nibble));
    const __m512i wh = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble));
    const __m512 scale = _mm512_permutexvar_ps(lane_block, _mm512_loadu_ps(s + size_t{u} * kNf4I8Unit / block));
    for (int t = 0; t < kTokens; ++t) {
      const int8_t* x = xl[t] + size_t{u} * kNf4I8Unit;
      __m512i sum = _mm512_dpbusd_epi32(_mm512_loadu_si512(nc[t] + size_t{u} * 16), wl, _mm512_loadu_si512(x));
      sum = _mm512_dpbusd_epi32(sum, wh, _mm512_loadu_si512(x + 64));
      acc[t][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[t][k]);
    }
  };
  uint32_t u = 0;
  for (; u + 2 <= full; u += 2) {
    const uint8_t* p = codes + size_t{u} * 64;
    _mm_prefetch(reinterpret_cast<const char*>(p + kI8PrefetchBytes), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + kI8PrefetchBytes + 64), _MM_HINT_T0);
    unit(u, _mm512_loadu_si512(p), 0);
    unit(u + 1, _mm512_loadu_si512(p + 64), 1);
  }
  if (u < full) unit(u, _mm512_loadu_si512(codes + size_t{u} * 64), 0), ++u;
  if (u < a.units) {  // 32, 64 or 96 columns: their bytes, zeros past them (which meet zero activations)
    const uint32_t tail_bytes = (cols - u * kNf4I8Unit) / 2;
    unit(u, _mm512_maskz_loadu_epi8((__mmask64{1} << tail_bytes) - 1, codes + size_t{u} * 64), 1);
  }
  for (int t = 0; t < kTokens; ++t) {
    const uint32_t tok = t0 + static_cast<uint32_t>(t);
    a.y[tok * a.y_stride + r] =
        _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1])) * (a.x_scales[tok] / 127.0f);
  }
}

}  // namespace

void nf4_rows_i8_avx512vnni(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens_i8<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens_i8<1>(a, r, t); });
}

void nf4_rows_avx512(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
