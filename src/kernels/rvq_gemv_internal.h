// Residual-VQ LUT kernels: per-ISA declarations and the loops they share. Not a
// public header: callers use submoe/kernels/rvq_gemv.h.
//
// The shared loops are templates over a vector policy V (V::T a vector of
// V::kWidth floats: zero, load, store, add, fma, bcast); each ISA translation
// unit instantiates them with its own intrinsics. Everything in the anonymous
// namespace below has internal linkage on purpose: the per-ISA copies must
// never be merged by the linker, or an AVX-512 instantiation could end up on
// the AVX2 path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "submoe/core/bf16.h"
#include "submoe/kernels/rvq_gemv.h"

namespace submoe::kernels::detail {

inline constexpr uint32_t kRvqEntries = rvq::kRvqEntries;
inline constexpr uint32_t kRvqDim = rvq::kRvqDim;

// Scalar: readable reference loops of the same phases. Batch 1 builds plain
// int8 tables ([n][256]) and sums them row by row.
void rvq_build_i8_scalar(const RvqGemmArgs& a, uint32_t tile_begin, uint32_t tile_end);
void rvq_rows_i8_scalar(const RvqGemmArgs& a, uint32_t panel_begin, uint32_t panel_end);
void rvq_build_slab_scalar(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_slab_scalar(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX2: batch 1 builds the sliced int8 tables with 8-wide FMAs and looks up
// 32 codes (16 rows x 2 blocks) per vpshufb; slabs of up to kRvqDecodeSlab
// tokens decode each subvector once into registers (no table) and multiply it
// into every token. The AVX-512 table uses the same kernels (they run on every
// AVX-512 CPU; 512-bit versions would need a machine to test them).
inline constexpr uint32_t kRvqDecodeSlab = 8;
void rvq_build_i8_avx2(const RvqGemmArgs& a, uint32_t span_begin, uint32_t span_end);
void rvq_rows_i8_avx2(const RvqGemmArgs& a, uint32_t panel_begin, uint32_t panel_end);
void rvq_rows_decode_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// The codes of one row in the panel layout, indexed by block (the general
// accessor: the reference loops; fast paths walk a span's pairs directly).
struct PanelRow {
  const RvqPanelView* w;
  uint32_t r;
  uint8_t operator[](uint32_t i) const { return w->code(r, i); }
};
inline PanelRow panel_row(const RvqPanelView& w, uint32_t r) { return {&w, r}; }

// Row r's codes within span sp: block il of the span (il = local block).
struct SpanRow {
  const uint8_t* base;  // span_panel(sp, r / 16) + r % 16
  uint8_t operator[](uint32_t il) const { return base[(il >> 1) * kRvqPairBytes + (il & 1) * kRvqPanelRows]; }
};
inline SpanRow span_row(const RvqPanelView& w, uint32_t sp, uint32_t r) {
  return {w.span_panel(sp, r / kRvqPanelRows) + r % kRvqPanelRows};
}

// Blocks [b0, b1) of batch-1 tile t.
inline uint32_t i8_tile_begin(const RvqPanelView& w, uint32_t t) { return t * kRvqI8TileGroups * w.stages; }
inline uint32_t i8_tile_end(const RvqPanelView& w, uint32_t t) {
  return std::min(w.blocks(), (t + 1) * kRvqI8TileGroups * w.stages);
}

// The tile scale and its inverse from the tile's largest |entry| m: s = m / 127;
// m = 0 gives s = 0 and q = 0; a non-finite m (a NaN or infinite entry) gives
// s = NaN, so every row reading the tile reads NaN.
struct I8Scale {
  float s = 0, inv = 0;
  bool finite = true;
};
inline I8Scale i8_scale(float m) {
  I8Scale r;
  if (!(m <= 3.0e38f)) {  // NaN or infinite
    r.s = std::numeric_limits<float>::quiet_NaN();
    r.finite = false;
  } else if (m > 0.0f) {
    r.s = m / 127.0f;
    r.inv = 127.0f / m;
  }
  return r;
}

// Adds s_t * Q of one tile to the f32 partial sums of one panel's 16 rows as
// one correctly rounded fma (the same operation and order on every ISA, and
// one a compiler cannot contract differently per ISA: results are
// bit-identical).
inline void flush_i8_tile(float* part, const int32_t* q, float s) {
  for (uint32_t rr = 0; rr < kRvqPanelRows; ++rr) part[rr] = std::fma(s, static_cast<float>(q[rr]), part[rr]);
}

// y[r] = scale[r] * part for the real rows of panels [p0, p1).
inline void write_i8_rows(const RvqGemmArgs& a, uint32_t p0, uint32_t p1) {
  const uint32_t r1 = std::min(a.w.rows, p1 * kRvqPanelRows);
  for (uint32_t r = p0 * kRvqPanelRows; r < r1; ++r) a.y[r] = f16_bits_to_float(a.w.scales[r]) * a.part[r];
}

namespace {  // NOLINT: internal linkage per ISA translation unit, see above

// Scalar "vector" of one float (the scalar ISA's policy; no FMA instruction on
// baseline x86-64, so fma is a multiply and an add, within the same bound).
struct VecF32x1 {
  using T = float;
  static constexpr int kWidth = 1;
  static T zero() { return 0.0f; }
  static T load(const float* p) { return *p; }
  static void store(float* p, T v) { *p = v; }
  static T add(T a, T b) { return a + b; }
  static T fma(T a, T b, T c) { return a * b + c; }
  static T bcast(const float* p) { return *p; }
  static T absmax(T m, T v) { return std::max(m, std::fabs(v)); }
};

// The scalar policy of the batch-1 table build: correctly rounded fma, the
// operation the AVX2 kernel's FMAs perform, so the int8 tables are the same on
// every ISA.
struct VecF32x1Fma : VecF32x1 {
  static T fma(T a, T b, T c) { return std::fma(a, b, c); }
};

// Stage s's entries of G consecutive groups from g: T[g * S + s][c] =
// codebook[s][c] . x_g, each entry as 16 FMAs in ascending j from 0 (the same
// operations on every ISA); each codebook load feeds all G groups.
template <class V, int G>
inline void build_tp1_stage(const RvqGemmArgs& a, uint32_t s, uint32_t g) {
  constexpr int W = V::kWidth;
  constexpr int K = 4;  // vectors of entries per pass
  static_assert(kRvqEntries % (K * W) == 0);
  const uint32_t S = a.w.stages;
  const float* cbt = a.cbt + static_cast<size_t>(s) * rvq::kRvqCodebookFloats;
  for (uint32_t q = 0; q < kRvqEntries; q += K * W) {
    typename V::T acc[G][K];
    for (int n = 0; n < G; ++n)
      for (int k = 0; k < K; ++k) acc[n][k] = V::zero();
    for (uint32_t j = 0; j < kRvqDim; ++j) {
      typename V::T b[G];
      for (int n = 0; n < G; ++n) b[n] = V::bcast(a.xs + static_cast<size_t>(g + n) * kRvqDim + j);
      const float* row = cbt + j * kRvqEntries + q;
      for (int k = 0; k < K; ++k) {
        const typename V::T c = V::load(row + k * W);
        for (int n = 0; n < G; ++n) acc[n][k] = V::fma(b[n], c, acc[n][k]);
      }
    }
    for (int n = 0; n < G; ++n)
      for (int k = 0; k < K; ++k)
        V::store(a.table + static_cast<size_t>((g + n) * S + s) * kRvqEntries + q + k * W, acc[n][k]);
  }
}

// The one-token f32 entries of groups [g0, g1), every stage. Stage by stage,
// so the stage's transposed codebook (cbt[s][j][c], 16 KiB) stays in L1 while
// every group of the range reads it; two groups share each codebook load.
template <class V>
inline void build_tp1_groups(const RvqGemmArgs& a, uint32_t g0, uint32_t g1) {
  for (uint32_t s = 0; s < a.w.stages; ++s) {
    uint32_t g = g0;
    for (; g + 2 <= g1; g += 2) build_tp1_stage<V, 2>(a, s, g);
    if (g < g1) build_tp1_stage<V, 1>(a, s, g);
  }
}

// The largest |t[k]| of count floats (count a multiple of V::kWidth); NaN
// when one is not finite.
template <class V>
inline float absmax_entries(const float* t, size_t count) {
  constexpr int W = V::kWidth;
  typename V::T mx = V::zero(), bad = V::zero();
  for (size_t k = 0; k < count; k += W) {
    const typename V::T v = V::load(t + k);
    mx = V::absmax(mx, v);
    bad = V::fma(v, V::zero(), bad);  // NaN once any entry is NaN or infinite
  }
  alignas(64) float m[W], b[W];
  V::store(m, mx);
  V::store(b, bad);
  float r = 0.0f;
  for (int k = 0; k < W; ++k) {
    if (b[k] != 0.0f) return std::numeric_limits<float>::quiet_NaN();
    r = std::max(r, m[k]);
  }
  return r;
}

// Batch-1 tables of spans [sp0, sp1): the f32 entries of each span, then per
// tile its scale and store(block, f32 entries, inv or -1 when the tile's
// entries are not finite) for each of its blocks.
template <class V, typename Store>
inline void build_i8_spans(const RvqGemmArgs& a, uint32_t sp0, uint32_t sp1, const Store& store) {
  for (uint32_t sp = sp0; sp < sp1; ++sp) {
    const uint32_t g0 = sp * kRvqI8SpanGroups, g1 = std::min(a.w.groups(), g0 + kRvqI8SpanGroups);
    build_tp1_groups<V>(a, g0, g1);
    for (uint32_t t = g0 / kRvqI8TileGroups; t * kRvqI8TileGroups < g1; ++t) {
      const uint32_t b0 = i8_tile_begin(a.w, t), b1 = i8_tile_end(a.w, t);
      const I8Scale sc = i8_scale(absmax_entries<V>(a.table + size_t{b0} * kRvqEntries, size_t{b1 - b0} * kRvqEntries));
      a.tile_scale[t] = sc.s;
      for (uint32_t i = b0; i < b1; ++i) store(i, a.table + size_t{i} * kRvqEntries, sc.finite ? sc.inv : -1.0f);
    }
  }
}

// q = round-to-nearest-even(entry * inv) of one block's 256 f32 entries
// (|q| <= 127 by the choice of inv; the scalar and AVX2 conversions round the
// same way).
inline void quantize_i8_block(const float* t, float inv, int8_t* q) {
  for (uint32_t c = 0; c < kRvqEntries; ++c) {
    const float v = std::nearbyint(t[c] * inv);
    q[c] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
}

// Block i of a slab table: T[i][c][t] = codebook[s][c] . x_t,g for the slab's
// tokens (zero for the padding tokens). The 16 x TP activations of the block are
// gathered first; then 4 entries at a time, each of the 16 (token-vector) loads
// feeds 4 broadcast-FMAs.
template <class V, int TP>
inline void build_slab_blocks(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  constexpr int W = V::kWidth;
  static_assert(TP % W == 0);
  constexpr int NV = TP / W;
  constexpr int C = 4;
  const uint32_t S = a.w.stages;
  alignas(64) float xt[kRvqDim][TP];
  uint32_t cur_g = ~0u;
  for (uint32_t i = block_begin; i < block_end; ++i) {
    const uint32_t g = i / S, s = i % S;
    if (g != cur_g) {
      cur_g = g;
      for (uint32_t j = 0; j < kRvqDim; ++j)
        for (int t = 0; t < TP; ++t)
          xt[j][t] = static_cast<uint32_t>(t) < a.tokens ? a.xs[t * a.x_stride + g * kRvqDim + j] : 0.0f;
    }
    const float* cb = a.w.codebook(s);
    float* tab = a.table + static_cast<size_t>(i) * kRvqEntries * TP;
    for (uint32_t c = 0; c < kRvqEntries; c += C) {
      typename V::T acc[C][NV];
      for (int k = 0; k < C; ++k)
        for (int v = 0; v < NV; ++v) acc[k][v] = V::zero();
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        typename V::T xv[NV];
        for (int v = 0; v < NV; ++v) xv[v] = V::load(&xt[j][v * W]);
        for (int k = 0; k < C; ++k) {
          const typename V::T b = V::bcast(cb + (c + k) * kRvqDim + j);
          for (int v = 0; v < NV; ++v) acc[k][v] = V::fma(b, xv[v], acc[k][v]);
        }
      }
      for (int k = 0; k < C; ++k)
        for (int v = 0; v < NV; ++v) V::store(tab + (c + k) * TP + v * W, acc[k][v]);
    }
  }
}

// The row pass, tiled over table blocks so each tile of the table stays in
// cache while every row of [row_begin, row_end) reads it; a row's running sums
// live in part[r] between tiles. step(codes, b0, b1, acc) adds the row's
// entries of blocks [b0, b1) to acc (V::T[TP / W]).
template <class V, int TP, typename Step>
inline void rows_tiled(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end, const Step& step) {
  constexpr int W = V::kWidth;
  constexpr int NV = TP / W;
  const uint32_t n = a.w.groups() * a.w.stages;
  const uint32_t tile = a.tile_blocks > 0 ? a.tile_blocks : n;
  for (uint32_t b0 = 0; b0 < n; b0 += tile) {
    const uint32_t b1 = std::min(n, b0 + tile);
    for (uint32_t r = row_begin; r < row_end; ++r) {
      typename V::T acc[NV];
      float* pr = a.part + static_cast<size_t>(r) * TP;
      for (int v = 0; v < NV; ++v) acc[v] = b0 == 0 ? V::zero() : V::load(pr + v * W);
      step(panel_row(a.w, r), b0, b1, acc);
      if (b1 < n) {
        for (int v = 0; v < NV; ++v) V::store(pr + v * W, acc[v]);
        continue;
      }
      alignas(64) float out[TP];
      for (int v = 0; v < NV; ++v) V::store(out + v * W, acc[v]);
      const float scale = f16_bits_to_float(a.w.scales[r]);
      for (uint32_t t = 0; t < a.tokens; ++t) a.y[t * a.y_stride + r] = scale * out[t];
    }
  }
}

// Slab lookups: one load of TP floats per code byte, 4 independent chains.
template <class V, int TP>
inline void rows_slab(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  constexpr int W = V::kWidth;
  constexpr int NV = TP / W;
  constexpr size_t kBlock = size_t{kRvqEntries} * TP;
  rows_tiled<V, TP>(a, row_begin, row_end, [&](PanelRow codes, uint32_t b0, uint32_t b1, typename V::T* acc) {
    typename V::T ch[4][NV];
    for (int k = 0; k < 4; ++k)
      for (int v = 0; v < NV; ++v) ch[k][v] = V::zero();
    uint32_t i = b0;
    for (; i + 4 <= b1; i += 4) {
      for (int k = 0; k < 4; ++k) {
        const float* e = a.table + (i + k) * kBlock + static_cast<size_t>(codes[i + k]) * TP;
        for (int v = 0; v < NV; ++v) ch[k][v] = V::add(ch[k][v], V::load(e + v * W));
      }
    }
    for (; i < b1; ++i) {
      const float* e = a.table + i * kBlock + static_cast<size_t>(codes[i]) * TP;
      for (int v = 0; v < NV; ++v) ch[0][v] = V::add(ch[0][v], V::load(e + v * W));
    }
    for (int v = 0; v < NV; ++v) acc[v] = V::add(acc[v], V::add(V::add(ch[0][v], ch[1][v]), V::add(ch[2][v], ch[3][v])));
  });
}

}  // namespace
}  // namespace submoe::kernels::detail
