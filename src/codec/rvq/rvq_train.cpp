// Stage-by-stage RVQ codebook training (seed 001): stage s is k-means on the
// residuals that the encoder leaves with stages < s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"

namespace submoe::rvq {
namespace {

double sum_squares(std::span<const float> v, ThreadPool* pool) {
  const size_t n = v.size() / kRvqDim;
  std::vector<double> part(detail::num_chunks(n));
  detail::for_each_chunk(pool, part.size(), [&](size_t ch) {
    double s = 0;
    const size_t end = std::min(v.size(), (ch + 1) * detail::kChunkPoints * kRvqDim);
    for (size_t i = ch * detail::kChunkPoints * kRvqDim; i < end; ++i) s += static_cast<double>(v[i]) * v[i];
    part[ch] = s;
  });
  double s = 0;
  for (double p : part) s += p;
  return s;
}

}  // namespace

Result<RvqTrainResult> train_rvq_codebooks(std::span<const float> samples, uint32_t stages,
                                           const RvqTrainOptions& options) {
  if (stages < 1 || stages > kRvqMaxStages) {
    return invalid_argument("rvq train: stages " + std::to_string(stages) + " outside 1..8");
  }
  if (options.beam_width < 1 || options.beam_width > kRvqEntries) {
    return invalid_argument("rvq train: beam width " + std::to_string(options.beam_width) + " outside 1..256");
  }
  if (samples.size() % kRvqDim != 0) return invalid_argument("rvq train: samples size is not a multiple of 16");
  const size_t n = samples.size() / kRvqDim;
  if (n < kRvqEntries) {
    return invalid_argument("rvq train: " + std::to_string(n) + " samples, need at least 256");
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      return invalid_argument("rvq train: samples[" + std::to_string(i / kRvqDim) + "][" +
                              std::to_string(i % kRvqDim) + "] is not finite");
    }
  }
  const double weights = static_cast<double>(samples.size());
  RvqTrainResult result;
  result.codebooks.assign(size_t{stages} * kRvqCodebookFloats, 0.0f);
  // residual = samples - recon exactly, recon being the encoder's float32
  // ascending sum of the stages so far.
  std::vector<float> residual(samples.begin(), samples.end());
  std::vector<float> recon(samples.size(), 0.0f);
  for (uint32_t s = 0; s < stages; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    RvqStageStats st;
    st.mse_before = sum_squares(residual, options.pool) / weights;
    KMeansOptions ko;
    ko.centroids = kRvqEntries;
    ko.max_iterations = options.max_iterations;
    ko.tolerance = options.tolerance;
    ko.seed = detail::mix64(options.seed + 0x9e3779b97f4a7c15ULL * (s + 1));
    ko.pool = options.pool;
    SUBMOE_ASSIGN_OR_RETURN(KMeansResult km, kmeans16(residual, ko));
    std::copy(km.centroids.begin(), km.centroids.end(),
              result.codebooks.begin() + static_cast<std::ptrdiff_t>(size_t{s} * kRvqCodebookFloats));
    st.iterations = km.iterations;
    st.empty_reseeds = km.empty_reseeds;

    SUBMOE_ASSIGN_OR_RETURN(RvqEncoder encoder, RvqEncoder::create(result.codebooks, s + 1));
    if (options.beam_width == 1) {
      // Greedy: the encoder's stage step applied to the stored reconstruction
      // (RvqEncoder::encode with beam 1 computes exactly this).
      detail::for_each_chunk(options.pool, detail::num_chunks(n), [&](size_t ch) {
        alignas(64) float scores[kRvqEntries];
        const size_t end = std::min(n, (ch + 1) * detail::kChunkPoints);
        for (size_t i = ch * detail::kChunkPoints; i < end; ++i) {
          float* r = residual.data() + i * kRvqDim;
          float* rec = recon.data() + i * kRvqDim;
          const float* x = samples.data() + i * kRvqDim;
          detail::score_entries(r, encoder.transposed(s), encoder.norms(s), kRvqEntries, scores);
          const float* e = encoder.codebook(s) + size_t{detail::argmin(scores, kRvqEntries)} * kRvqDim;
          for (uint32_t j = 0; j < kRvqDim; ++j) {
            rec[j] += e[j];
            r[j] = x[j] - rec[j];
          }
        }
      });
    } else {
      SUBMOE_RETURN_IF_ERROR(
          encode_rvq_vectors(samples, encoder, s + 1, options.beam_width, {}, recon, options.pool).status());
      for (size_t i = 0; i < samples.size(); ++i) residual[i] = samples[i] - recon[i];
    }
    st.mse_after = sum_squares(residual, options.pool) / weights;
    result.stages.push_back(st);
    if (options.progress) {
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char line[200];
      std::snprintf(line, sizeof line, "rvq train: stage %u/%u, %u Lloyd iterations, mse %.5f -> %.5f, %.1f s", s + 1,
                    stages, st.iterations, st.mse_before, st.mse_after, sec);
      options.progress(line);
    }
  }
  return result;
}

}  // namespace submoe::rvq
