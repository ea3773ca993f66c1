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
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "submoe/core/bf16.h"
#include "submoe/kernels/rvq_gemv.h"

namespace submoe::kernels::detail {

inline constexpr uint32_t kRvqEntries = rvq::kRvqEntries;
inline constexpr uint32_t kRvqDim = rvq::kRvqDim;

// Scalar: readable reference loops of the same two phases.
void rvq_build_tp1_scalar(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_tp1_scalar(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void rvq_build_slab_scalar(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_slab_scalar(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX2: tables built with 8-wide FMAs; batch 1 gathers 8 entries per
// vpgatherdd, slabs of up to 8 tokens read 4 or 8 floats per lookup.
void rvq_build_tp1_avx2(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_tp1_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void rvq_build_slab_avx2(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_slab_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX-512: batch 1 gathers 16 entries per vpgatherdd (indices: 16 consecutive
// code bytes zero-extended plus lane * 256); slabs of up to 16 tokens.
void rvq_build_tp1_avx512(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_tp1_avx512(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void rvq_build_slab_avx512(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end);
void rvq_rows_slab_avx512(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end);

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
};

// Block i = g * S + s of a one-token table: T[i][c] = codebook[s][c] . x_g, as
// 16 broadcast-FMAs over the transposed codebook (cbt[s][j][c]), 8 vectors of
// entries per pass (one broadcast of x_j feeds 8 FMAs).
template <class V>
inline void build_tp1_blocks(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  constexpr int W = V::kWidth;
  constexpr int K = 8;
  static_assert(kRvqEntries % (K * W) == 0);
  const uint32_t S = a.w.stages;
  for (uint32_t i = block_begin; i < block_end; ++i) {
    const uint32_t g = i / S, s = i % S;
    const float* cbt = a.cbt + static_cast<size_t>(s) * rvq::kRvqCodebookFloats;
    const float* x = a.xs + static_cast<size_t>(g) * kRvqDim;
    float* t = a.table + static_cast<size_t>(i) * kRvqEntries;
    for (uint32_t q = 0; q < kRvqEntries; q += K * W) {
      typename V::T acc[K];
      for (int k = 0; k < K; ++k) acc[k] = V::zero();
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        const typename V::T xb = V::bcast(x + j);
        const float* row = cbt + j * kRvqEntries + q;
        for (int k = 0; k < K; ++k) acc[k] = V::fma(xb, V::load(row + k * W), acc[k]);
      }
      for (int k = 0; k < K; ++k) V::store(t + q + k * W, acc[k]);
    }
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
      step(a.w.row_codes(r), b0, b1, acc);
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
  rows_tiled<V, TP>(a, row_begin, row_end, [&](const uint8_t* codes, uint32_t b0, uint32_t b1, typename V::T* acc) {
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

// One-token lookups with scalar loads: 8 code bytes per 64-bit load, 8 chains
// (an f32 add has a latency of 3-4 cycles and two issue per cycle).
inline void rows_tp1_scalar_loads(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  rows_tiled<VecF32x1, 1>(a, row_begin, row_end, [&](const uint8_t* codes, uint32_t b0, uint32_t b1, float* acc) {
    float ch[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const float* tab = a.table;
    uint32_t i = b0;
    for (; i + 8 <= b1; i += 8) {
      uint64_t u;
      std::memcpy(&u, codes + i, 8);
      const float* t = tab + static_cast<size_t>(i) * kRvqEntries;
      for (int k = 0; k < 8; ++k) ch[k] += t[k * kRvqEntries + ((u >> (8 * k)) & 0xff)];
    }
    for (; i < b1; ++i) ch[0] += tab[static_cast<size_t>(i) * kRvqEntries + codes[i]];
    acc[0] += ((ch[0] + ch[1]) + (ch[2] + ch[3])) + ((ch[4] + ch[5]) + (ch[6] + ch[7]));
  });
}

}  // namespace
}  // namespace submoe::kernels::detail
