// Private helpers of the RVQ codec shared by k-means, the trainer and the
// encoder, so that all of them score candidates with the same arithmetic (and
// hence pick the same entries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "submoe/codec/rvq_format.h"
#include "submoe/core/thread_pool.h"

namespace submoe::rvq::detail {

// Points per work chunk: partial sums are kept per chunk and reduced in chunk
// order, which makes every result independent of the thread count.
inline constexpr size_t kChunkPoints = 2048;

inline size_t num_chunks(size_t n) { return (n + kChunkPoints - 1) / kChunkPoints; }

// scores[c] = norms[c] - 2 x . entry_c for c < k, with the entries transposed
// ([kRvqDim][k], entry c's component j at transposed[j * k + c]): 16 passes
// over k contiguous floats that the compiler vectorizes across c. The order
// of operations is fixed (j ascending), so a score is the same wherever it is
// computed. ||x||^2 - the distance up to a constant - is left out.
inline constexpr uint32_t kScoreBlock = 32;  // entries scored per register block

inline void score_entries(const float* x, const float* transposed, const float* norms, uint32_t k, float* scores) {
  float m[kRvqDim];
  for (uint32_t j = 0; j < kRvqDim; ++j) m[j] = -2.0f * x[j];
  uint32_t c0 = 0;
  // Blocks of 32 accumulators stay in registers across the 16 passes; the
  // per-entry order of operations is the same as in the tail loop below.
  for (; c0 + kScoreBlock <= k; c0 += kScoreBlock) {
    float acc[kScoreBlock];
    for (uint32_t c = 0; c < kScoreBlock; ++c) acc[c] = norms[c0 + c];
    for (uint32_t j = 0; j < kRvqDim; ++j) {
      const float* t = transposed + size_t{j} * k + c0;
      for (uint32_t c = 0; c < kScoreBlock; ++c) acc[c] += m[j] * t[c];
    }
    for (uint32_t c = 0; c < kScoreBlock; ++c) scores[c0 + c] = acc[c];
  }
  for (uint32_t c = c0; c < k; ++c) {
    float acc = norms[c];
    for (uint32_t j = 0; j < kRvqDim; ++j) acc += m[j] * transposed[size_t{j} * k + c];
    scores[c] = acc;
  }
}

// Lowest index of the smallest score. One pass that keeps, per SSE lane, the
// smallest score and its first index (a strict < keeps the earlier one), then
// the lanes are merged the same way: the same answer as the scalar loop, about
// 4x faster (this was 40% of k-means time as a scalar loop).
inline uint32_t argmin(const float* scores, uint32_t k) {
  uint32_t c = 0;
  uint32_t best = 0;
  float best_score = scores[0];
#if defined(__SSE2__)
  if (k >= 4) {
    __m128 vbest = _mm_loadu_ps(scores);
    __m128i vidx = _mm_setr_epi32(0, 1, 2, 3);
    __m128i vbest_idx = vidx;
    const __m128i four = _mm_set1_epi32(4);
    for (c = 4; c + 4 <= k; c += 4) {
      vidx = _mm_add_epi32(vidx, four);
      const __m128 v = _mm_loadu_ps(scores + c);
      const __m128 lt = _mm_cmplt_ps(v, vbest);
      vbest = _mm_or_ps(_mm_and_ps(lt, v), _mm_andnot_ps(lt, vbest));
      const __m128i lti = _mm_castps_si128(lt);
      vbest_idx = _mm_or_si128(_mm_and_si128(lti, vidx), _mm_andnot_si128(lti, vbest_idx));
    }
    alignas(16) float lane_score[4];
    alignas(16) uint32_t lane_idx[4];
    _mm_store_ps(lane_score, vbest);
    _mm_store_si128(reinterpret_cast<__m128i*>(lane_idx), vbest_idx);
    best_score = lane_score[0];
    best = lane_idx[0];
    for (int l = 1; l < 4; ++l) {
      if (lane_score[l] < best_score || (lane_score[l] == best_score && lane_idx[l] < best)) {
        best_score = lane_score[l];
        best = lane_idx[l];
      }
    }
  }
#endif
  for (; c < k; ++c) {
    if (scores[c] < best_score) {
      best_score = scores[c];
      best = c;
    }
  }
  return best;
}

// Exact squared distance accumulated in double.
inline double sq_dist(const float* a, const float* b) {
  double s = 0;
  for (uint32_t j = 0; j < kRvqDim; ++j) {
    const double d = static_cast<double>(a[j]) - static_cast<double>(b[j]);
    s += d * d;
  }
  return s;
}

// entries k x kRvqDim -> transposed kRvqDim x k, norms k (float, j ascending).
inline void prepare_entries(const float* entries, uint32_t k, float* transposed, float* norms) {
  for (uint32_t c = 0; c < k; ++c) {
    float n = 0;
    for (uint32_t j = 0; j < kRvqDim; ++j) {
      const float v = entries[size_t{c} * kRvqDim + j];
      transposed[size_t{j} * k + c] = v;
      n += v * v;
    }
    norms[c] = n;
  }
}

// splitmix64's finalizer, also used to derive per-stage seeds.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Runs fn(chunk) for chunk in [0, chunks): on the pool when there is one (each
// chunk writes only its own outputs), else in order on the calling thread.
template <typename Fn>
void for_each_chunk(ThreadPool* pool, size_t chunks, const Fn& fn) {
  if (pool == nullptr || pool->num_threads() <= 1 || chunks <= 1) {
    for (size_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  pool->parallel_for(chunks, 1, [&fn](size_t begin, size_t end, int) {
    for (size_t c = begin; c < end; ++c) fn(c);
  });
}

// "<field>[stage s][entry c][j]" for the first non-finite or out-of-range
// float of stages [0, stages), or an empty string.
std::string find_bad_codebook_float(const float* codebooks, uint32_t stages);

}  // namespace submoe::rvq::detail
