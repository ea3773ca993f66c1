// AVX-512 ternary kernels. Design and measurements: docs/perf-notes.md.
//
// Batch 1 runs rows in lockstep groups (lockstep_rows) with a per-kernel step:
//
// perm, f32 activations (tables with <= 4 w_max and <= 4 w_min per entry): per
// codeword one qword broadcast of the entry's permute record, one variable shift
// to put each slot's offset into its own lane, two loads of the 28-float x window
// (the second zero-masked to 12 lanes, which gives the zero lane unused slots
// select), one two-source permute that gathers the <= 8 selected activations, one
// add. No mask-register writes per codeword (kmov throughput is 1/cycle here and
// the masked-add formulation needs four), no data-dependent branch.
//
// perm, bf16 activations (same tables, needs VBMI): the window is one 56-byte
// load and the gather a one-source word permute whose output is already f32;
// about 8 instead of 11 uops per codeword.
//
// masks (any table): four mask-register writes (GCC loads the 16-bit masks
// into GPRs and moves them; kmovw from memory measured the same, 1 per cycle) and
// four masked adds per codeword; ~6.6 cycles per codeword with four rows.
//
// gemm (B >= 2): the shared nonzero-slot kernel (ternary_slots_impl.h) with
// 128/256/512-bit vectors depending on the batch.
//
// GCC 12's AVX-512 intrinsics build "undefined" vectors by self-initialization
// (_mm512_undefined_*), which -O3 reports as maybe-uninitialized at every use
// (GCC bug 105593, fixed in GCC 13). The values are never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "kernels/ternary_gemv_internal.h"
#include "kernels/ternary_slots_impl.h"

namespace submoe::kernels::detail {
namespace {

// ---- batch-1 row groups ---------------------------------------------------

// Runs R rows in lockstep (so R independent accumulator chains keep the ports
// busy). Rows are addressed as (row end, shared negative index j), which keeps
// every per-row pointer in a register at R = 6 (R = 8 spilled the code pointers
// to the stack: one more load per codeword). Before a group starts, the codewords
// of the next group are prefetched into L2.
//
// Rows of a group differ in codeword count by a few percent. Instead of
// finishing the longer rows one at a time (one dependency chain: about 2.5x the
// cost per codeword), every row takes `steps` = up to kLockstepTail more than the
// shortest: a row that has run out steps over the codewords stored after it,
// while its window is already past its last column in the layout's zero
// padding (kTailPadCols), so it adds exact zeros. Only where those codewords
// exist (not past the end of the code array); what remains past `steps` runs
// row by row.
//
// K provides Cursor (per-row state), start(), step(Cursor&, code) and
// finish(const Cursor&, row).
template <int R, typename K>
void lockstep_rows(const TernaryGemmArgs& a, const K& k, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  using Cursor = typename K::Cursor;
  auto run_rest = [&](Cursor c, const uint16_t* code, uint32_t r) {
    for (const uint16_t* end = w.codes + w.row_offsets[r + 1]; code < end; ++code) k.step(c, *code);
    k.finish(c, r);
  };
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) {
    const char* next = reinterpret_cast<const char*>(w.codes + w.row_offsets[r + R]);
    const char* next_end = reinterpret_cast<const char*>(w.codes + w.row_offsets[std::min(r + 2 * R, row_end)]);
    for (; next < next_end; next += 64) _mm_prefetch(next, _MM_HINT_T1);
    [&]<size_t... I>(std::index_sequence<I...>) {
      int32_t n_min = INT32_MAX, n_max = 0;
      ((n_min = std::min(n_min, w.row_offsets[r + I + 1] - w.row_offsets[r + I]),
        n_max = std::max(n_max, w.row_offsets[r + I + 1] - w.row_offsets[r + I])),
       ...);
      int32_t steps = std::min<int32_t>(n_max, n_min + static_cast<int32_t>(kLockstepTail));
      if (static_cast<size_t>(w.row_offsets[r + R - 1]) + static_cast<size_t>(steps) > w.num_codes) steps = n_min;
      Cursor c[R];
      const uint16_t* code_end[R];
      ((c[I] = k.start(), code_end[I] = w.codes + w.row_offsets[r + I] + steps), ...);
      for (intptr_t j = -static_cast<intptr_t>(steps); j != 0; ++j) (k.step(c[I], code_end[I][j]), ...);
      ((code_end[I] < w.codes + w.row_offsets[r + I + 1] ? run_rest(c[I], code_end[I], r + static_cast<uint32_t>(I))
                                                          : k.finish(c[I], r + static_cast<uint32_t>(I))),
       ...);
    }(std::make_index_sequence<R>{});
  }
  for (; r < row_end; ++r) run_rest(k.start(), w.codes + w.row_offsets[r], r);
}

inline constexpr int kGemvRows = 6;

// y for one row from the permute accumulator: lanes 0-3 hold w_max partial sums,
// lanes 4-7 w_min partial sums.
inline void finish_perm_row(__m512 acc, const TernaryGemmArgs& a, uint32_t r) {
  alignas(64) float t[16];
  _mm512_store_ps(t, acc);
  a.y[r] = combine_row((t[0] + t[1]) + (t[2] + t[3]), (t[4] + t[5]) + (t[6] + t[7]), a.w.scales[r]);
}

// ---- permute kernel, f32 activations ---------------------------------------

struct PermF32 {
  struct Cursor {
    __m512 acc;
    const float* xp;
  };
  const TernaryGemmArgs& a;
  const uint64_t* perm;
  __m512i shifts;       // lane l: 8 * (l / 2) for l < 8; lanes 8-15 shift everything out
  __mmask16 window_hi;  // the x window's second half holds weights 16..27

  explicit PermF32(const TernaryGemmArgs& args)
      : a(args),
        perm(args.table->perm.data()),
        shifts(_mm512_setr_epi32(0, 0, 8, 8, 16, 16, 24, 24, 32, 32, 32, 32, 32, 32, 32, 32)),
        window_hi(0x0FFF) {}
  Cursor start() const { return {_mm512_setzero_ps(), a.xs}; }
  __attribute__((always_inline)) void step(Cursor& c, uint32_t code) const {
    const __m512i rec = _mm512_set1_epi64(static_cast<long long>(perm[code]));
    const uint64_t lo = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm512_castsi512_si128(rec)));
    const __m512i idx = _mm512_srlv_epi32(rec, shifts);
    const __m512 x_lo = _mm512_loadu_ps(c.xp);
    const __m512 x_hi = _mm512_maskz_loadu_ps(window_hi, c.xp + 16);
    c.acc = _mm512_add_ps(c.acc, _mm512_permutex2var_ps(x_lo, idx, x_hi));
    // Entry length from bits 5-7 of record bytes 0 and 1 (ternary_kernel_table.h).
    c.xp += _pext_u64(lo, 0xE0E0u);
  }
  void finish(const Cursor& c, uint32_t r) const { finish_perm_row(c.acc, a, r); }
};

// ---- permute kernel, bf16 activations --------------------------------------

// The 28-weight window is 56 bytes of bf16: one load (masked to 28 words, so
// words 28-31 are the zeros that unused slots, kPermPad = 28, select). One
// vpmultishiftqb copies record byte perm_lane_byte(m) into the low byte of index
// word 2m + 1 (m = 0..7); vpermw (its index uses bits 0-4 only) gathers the
// selected bf16 values into those odd words with the even words zeroed, which is
// exactly each value widened to f32 in dword lane m. The length comes from the
// table's byte array, one load, instead of a vector-to-GPR move and pext.
struct PermBf16 {
  struct Cursor {
    __m512 acc;
    const uint16_t* xp;
  };
  const TernaryGemmArgs& a;
  const uint64_t* perm;
  const uint8_t* lengths;
  __m512i select;  // vpmultishiftqb control
  __mmask32 window;
  __mmask32 odd_words;

  static __m512i make_select() {
    alignas(64) uint8_t ctrl[64] = {};
    for (uint32_t m = 0; m < 8; ++m) ctrl[4 * m + 2] = static_cast<uint8_t>(8 * perm_lane_byte(m));
    return _mm512_load_si512(ctrl);
  }
  explicit PermBf16(const TernaryGemmArgs& args)
      : a(args),
        perm(args.table->perm.data()),
        lengths(args.table->lengths.data()),
        select(make_select()),
        window(0x0FFFFFFFu),
        odd_words(0x0000AAAAu) {}
  Cursor start() const { return {_mm512_setzero_ps(), reinterpret_cast<const uint16_t*>(a.xs)}; }
  __attribute__((always_inline)) void step(Cursor& c, uint32_t code) const {
    const __m512i idx = _mm512_multishift_epi64_epi8(select, _mm512_set1_epi64(static_cast<long long>(perm[code])));
    const __m512i x = _mm512_maskz_loadu_epi16(window, c.xp);
    c.acc = _mm512_add_ps(c.acc, _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(odd_words, idx, x)));
    c.xp += lengths[code];
  }
  void finish(const Cursor& c, uint32_t r) const { finish_perm_row(c.acc, a, r); }
};

// ---- permute kernel, int8 activations ---------------------------------------

// Activations quantized to int8 (ActivationQuant::kInt8): the 28-weight window is
// 28 bytes, one zero-masked 32-byte load (bytes 28-31 are the zeros unused
// slots, kPermPad = 28, select). A 256-bit vpermb reads index bits 0-4 only, so
// the broadcast permute record is its index as stored (the length bits 5-7 of
// bytes 0 and 1 are ignored): every output qword is the 8 selected values in
// record byte order, w_max slots at bytes 0, 1, 4, 5 and w_min slots at 2, 3, 6,
// 7 (perm_lane_byte). One vpdpbusd with constant 0/1 byte weights sums them
// exactly into int32: dwords 0-1 take the w_max bytes of qword 0, dwords 2-3 the
// w_min bytes of qword 1. 7 uops per codeword, one on the shuffle port (the
// bf16 kernel: 9, three). R = 5 rows: at 6 GCC spills two code pointers.
struct PermI8 {
  struct Cursor {
    __m256i acc;
    const int8_t* xp;
  };
  const TernaryGemmArgs& a;
  const uint64_t* perm;
  const uint8_t* lengths;
  __m256i sign_weights;
  __mmask32 window;

  static __m256i make_sign_weights() {
    alignas(32) uint8_t wts[32] = {};
    for (uint32_t m = 0; m < 8; ++m) {
      const bool w_max = m < kPermSlotsPerSign;
      wts[(w_max ? 0 : 8) + perm_lane_byte(m)] = 1;
    }
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(wts));
  }
  explicit PermI8(const TernaryGemmArgs& args)
      : a(args),
        perm(args.table->perm.data()),
        lengths(args.table->lengths.data()),
        sign_weights(make_sign_weights()),
        window(0x0FFFFFFFu) {}
  Cursor start() const { return {_mm256_setzero_si256(), reinterpret_cast<const int8_t*>(a.xs)}; }
  __attribute__((always_inline)) void step(Cursor& c, uint32_t code) const {
    const __m256i idx = _mm256_set1_epi64x(static_cast<long long>(perm[code]));
    const __m256i x = _mm256_maskz_loadu_epi8(window, c.xp);
    c.acc = _mm256_dpbusd_epi32(c.acc, sign_weights, _mm256_permutexvar_epi8(idx, x));
    c.xp += lengths[code];
  }
  void finish(const Cursor& c, uint32_t r) const {
    alignas(32) int32_t t[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), c.acc);
    const float s = a.x_scale;
    a.y[r] = combine_row(s * static_cast<float>(t[0] + t[1]), s * static_cast<float>(t[2] + t[3]), a.w.scales[r]);
  }
};

// ---- masked-add kernel -----------------------------------------------------

struct Masks {
  struct Cursor {
    __m512 plus_lo, plus_hi, minus_lo, minus_hi;
    const float* xp;
  };
  const TernaryGemmArgs& a;
  const TernaryMaskRecord* masks;
  const uint8_t* lengths;

  explicit Masks(const TernaryGemmArgs& args)
      : a(args), masks(args.table->masks.data()), lengths(args.table->lengths.data()) {}
  Cursor start() const {
    const __m512 z = _mm512_setzero_ps();
    return {z, z, z, z, a.xs};
  }
  __attribute__((always_inline)) void step(Cursor& c, uint32_t code) const {
    const TernaryMaskRecord m = masks[code];
    const __m512 x_lo = _mm512_loadu_ps(c.xp);
    const __m512 x_hi = _mm512_loadu_ps(c.xp + 16);
    c.plus_lo = _mm512_mask_add_ps(c.plus_lo, m.plus_lo, c.plus_lo, x_lo);
    c.plus_hi = _mm512_mask_add_ps(c.plus_hi, m.plus_hi, c.plus_hi, x_hi);
    c.minus_lo = _mm512_mask_add_ps(c.minus_lo, m.minus_lo, c.minus_lo, x_lo);
    c.minus_hi = _mm512_mask_add_ps(c.minus_hi, m.minus_hi, c.minus_hi, x_hi);
    c.xp += lengths[code];
  }
  void finish(const Cursor& c, uint32_t r) const {
    const float plus = _mm512_reduce_add_ps(_mm512_add_ps(c.plus_lo, c.plus_hi));
    const float minus = _mm512_reduce_add_ps(_mm512_add_ps(c.minus_lo, c.minus_hi));
    a.y[r] = combine_row(plus, minus, a.w.scales[r]);
  }
};

struct VecF32x16 {
  using T = __m512;
  static constexpr int kWidth = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
};

}  // namespace

void gemv_f32_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  lockstep_rows<kGemvRows>(a, PermF32(a), row_begin, row_end);
}

void gemv_bf16_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  lockstep_rows<kGemvRows>(a, PermBf16(a), row_begin, row_end);
}

void gemv_i8_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  lockstep_rows<5>(a, PermI8(a), row_begin, row_end);
}

float quantize_i8_f32_avx512(const float* x, uint32_t n, int8_t* q) {
  // Pass 1: m = max |x| (exact, order-independent). vmaxps returns its second
  // operand when either is NaN, so with the running maximum second a NaN
  // activation is skipped, as in the scalar definition.
  __m512 vm = _mm512_setzero_ps();
  uint32_t c = 0;
  for (; c + 16 <= n; c += 16) vm = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + c)), vm);
  if (c < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - c)) - 1);
    vm = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + c)), vm);
  }
  const float m = _mm512_reduce_max_ps(vm);
  float scale = 0.0f, inv = 0.0f;
  if (!int8_scale(m, &scale, &inv)) {
    std::fill(q, q + n, int8_t{0});
    return scale;
  }
  // Pass 2: q = nearest-even(x * inv) clamped to +-127; max/min with the
  // constant second turn a NaN into -127 as the scalar definition does.
  const __m512 vinv = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  auto quantize = [&](__m512 v) {
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, vinv), lo), hi)));
  };
  for (c = 0; c + 16 <= n; c += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(q + c), quantize(_mm512_loadu_ps(x + c)));
  if (c < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - c)) - 1);
    _mm_mask_storeu_epi8(q + c, tail, quantize(_mm512_maskz_loadu_ps(tail, x + c)));
  }
  return scale;
}

void gemv_f32_ternary_dict_masks_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  lockstep_rows<4>(a, Masks(a), row_begin, row_end);
}

void gemm_f32_ternary_dict_slots_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch_stride) {
    case 4:
      return slots_gemm_dispatch<VecF32x4, 1, 4>(a, row_begin, row_end);
    case 8:
      return slots_gemm_dispatch<VecF32x8, 1, 4>(a, row_begin, row_end);
    case 16:
      return slots_gemm_dispatch<VecF32x16, 1, 4>(a, row_begin, row_end);
    case 32:
      return slots_gemm_dispatch<VecF32x16, 2, 2>(a, row_begin, row_end);
    case 48:
      return slots_gemm_dispatch<VecF32x16, 3, 2>(a, row_begin, row_end);
    default:
      return slots_gemm_dispatch<VecF32x16, 4, 2>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
