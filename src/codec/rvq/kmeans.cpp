// k-means on 16-dimensional points: k-means++ seeding, Lloyd iterations, the
// empty-cluster policy of rvq.h. Deterministic whatever the thread count: each
// fixed chunk of points keeps its own double sums, reduced in chunk order.
#include <algorithm>
#include <cmath>
#include <string>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"

namespace submoe::rvq {
namespace {

using detail::kChunkPoints;

Status check_points(std::span<const float> points, const char* what) {
  if (points.empty()) return invalid_argument(std::string("kmeans: no ") + what);
  if (points.size() % kRvqDim != 0) {
    return invalid_argument(std::string("kmeans: ") + what + " size " + std::to_string(points.size()) +
                            " is not a multiple of 16");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i])) {
      return invalid_argument(std::string("kmeans: ") + what + "[" + std::to_string(i / kRvqDim) + "][" +
                              std::to_string(i % kRvqDim) + "] is not finite");
    }
  }
  return Status::ok();
}

// Per-chunk state of one assignment pass.
struct ChunkSums {
  std::vector<double> sums;     // k x 16
  std::vector<uint64_t> counts; // k
  double error = 0;
};

class Lloyd {
 public:
  Lloyd(std::span<const float> points, uint32_t k, ThreadPool* pool)
      : x_(points.data()),
        n_(points.size() / kRvqDim),
        k_(k),
        pool_(pool),
        assignment_(n_),
        error_(n_),
        transposed_(size_t{k} * kRvqDim),
        norms_(k),
        chunks_(detail::num_chunks(n_)) {}

  // Assigns every point to its nearest centroid and accumulates the chunk
  // sums; returns the total squared error.
  double assign(const std::vector<float>& centroids) {
    detail::prepare_entries(centroids.data(), k_, transposed_.data(), norms_.data());
    detail::for_each_chunk(pool_, chunks_.size(), [&](size_t ch) {
      ChunkSums& cs = chunks_[ch];
      cs.sums.assign(size_t{k_} * kRvqDim, 0.0);
      cs.counts.assign(k_, 0);
      cs.error = 0;
      std::vector<float> scores(k_);
      const size_t end = std::min(n_, (ch + 1) * kChunkPoints);
      for (size_t i = ch * kChunkPoints; i < end; ++i) {
        const float* p = x_ + i * kRvqDim;
        detail::score_entries(p, transposed_.data(), norms_.data(), k_, scores.data());
        const uint32_t a = detail::argmin(scores.data(), k_);
        const double d = detail::sq_dist(p, centroids.data() + size_t{a} * kRvqDim);
        assignment_[i] = a;
        error_[i] = d;
        cs.error += d;
        cs.counts[a]++;
        double* s = cs.sums.data() + size_t{a} * kRvqDim;
        for (uint32_t j = 0; j < kRvqDim; ++j) s[j] += p[j];
      }
    });
    double total = 0;
    for (const ChunkSums& cs : chunks_) total += cs.error;
    return total;
  }

  // Moves each centroid to the mean of its points (from the last assign);
  // re-seeds empty ones. Returns how many were re-seeded.
  uint32_t update(std::vector<float>& centroids) {
    std::vector<double> sums(size_t{k_} * kRvqDim, 0.0);
    std::vector<uint64_t> counts(k_, 0);
    for (const ChunkSums& cs : chunks_) {
      for (size_t i = 0; i < sums.size(); ++i) sums[i] += cs.sums[i];
      for (uint32_t c = 0; c < k_; ++c) counts[c] += cs.counts[c];
    }
    std::vector<uint32_t> empty;
    for (uint32_t c = 0; c < k_; ++c) {
      if (counts[c] == 0) {
        empty.push_back(c);
        continue;
      }
      const double inv = 1.0 / static_cast<double>(counts[c]);
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        centroids[size_t{c} * kRvqDim + j] = static_cast<float>(sums[size_t{c} * kRvqDim + j] * inv);
      }
    }
    if (empty.empty()) return 0;
    // The points of largest current error, largest first, ties to the lower
    // index (k <= n, so there are always enough points).
    std::vector<uint32_t> order(n_);
    for (size_t i = 0; i < n_; ++i) order[i] = static_cast<uint32_t>(i);
    auto worse = [this](uint32_t a, uint32_t b) { return error_[a] != error_[b] ? error_[a] > error_[b] : a < b; };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(empty.size()), order.end(), worse);
    for (size_t e = 0; e < empty.size(); ++e) {
      std::copy_n(x_ + size_t{order[e]} * kRvqDim, kRvqDim, centroids.begin() + size_t{empty[e]} * kRvqDim);
    }
    return static_cast<uint32_t>(empty.size());
  }

 private:
  const float* x_;
  size_t n_;
  uint32_t k_;
  ThreadPool* pool_;
  std::vector<uint32_t> assignment_;
  std::vector<double> error_;
  std::vector<float> transposed_;
  std::vector<float> norms_;
  std::vector<ChunkSums> chunks_;
};

KMeansResult run_lloyd(std::span<const float> points, std::vector<float> centroids, const KMeansOptions& o) {
  const uint32_t k = static_cast<uint32_t>(centroids.size() / kRvqDim);
  Lloyd lloyd(points, k, o.pool);
  KMeansResult r;
  double prev = lloyd.assign(centroids);
  r.error_history.push_back(prev);
  for (uint32_t it = 1; it <= o.max_iterations; ++it) {
    r.empty_reseeds += lloyd.update(centroids);
    const double e = lloyd.assign(centroids);
    r.error_history.push_back(e);
    r.iterations = it;
    if (prev <= 0 || (prev - e) / prev < o.tolerance) {
      r.converged = true;
      break;
    }
    prev = e;
  }
  r.centroids = std::move(centroids);
  return r;
}

// k-means++: D^2 sampling with the chunk totals summed in chunk order.
std::vector<float> kmeanspp_seed(std::span<const float> points, uint32_t k, uint64_t seed, ThreadPool* pool) {
  const size_t n = points.size() / kRvqDim;
  const float* x = points.data();
  SplitMix64 rng(seed);
  auto pick_uniform = [&] {
    return std::min<size_t>(n - 1, static_cast<size_t>(rng.uniform_open0() * static_cast<double>(n)));
  };
  std::vector<float> centroids(size_t{k} * kRvqDim);
  std::vector<double> d2(n);
  std::vector<double> chunk_total(detail::num_chunks(n));
  size_t chosen = pick_uniform();
  for (uint32_t t = 0;; ++t) {
    const float* c = x + chosen * kRvqDim;
    std::copy_n(c, kRvqDim, centroids.begin() + size_t{t} * kRvqDim);
    if (t + 1 == k) break;
    detail::for_each_chunk(pool, chunk_total.size(), [&](size_t ch) {
      double total = 0;
      const size_t end = std::min(n, (ch + 1) * kChunkPoints);
      for (size_t i = ch * kChunkPoints; i < end; ++i) {
        const double d = detail::sq_dist(x + i * kRvqDim, c);
        d2[i] = t == 0 ? d : std::min(d2[i], d);
        total += d2[i];
      }
      chunk_total[ch] = total;
    });
    double total = 0;
    for (double v : chunk_total) total += v;
    if (!(total > 0)) {  // every point coincides with a centre already
      chosen = pick_uniform();
      continue;
    }
    // uniform_open0 is in (0, 1]: the target lies in (0, total].
    const double target = rng.uniform_open0() * total;
    double cum = 0;
    size_t ch = 0;
    while (ch + 1 < chunk_total.size() && cum + chunk_total[ch] < target) cum += chunk_total[ch++];
    const size_t end = std::min(n, (ch + 1) * kChunkPoints);
    chosen = end - 1;
    size_t last_positive = n;
    for (size_t i = ch * kChunkPoints; i < end; ++i) {
      if (d2[i] > 0) last_positive = i;
      cum += d2[i];
      if (cum >= target && d2[i] > 0) {
        chosen = i;
        last_positive = n;
        break;
      }
    }
    // Rounding ran past the chunk's end: take its last point with weight.
    if (last_positive != n) chosen = last_positive;
  }
  return centroids;
}

}  // namespace

Result<KMeansResult> kmeans16(std::span<const float> points, const KMeansOptions& options) {
  SUBMOE_RETURN_IF_ERROR(check_points(points, "points"));
  const size_t n = points.size() / kRvqDim;
  if (options.centroids == 0 || options.centroids > n) {
    return invalid_argument("kmeans: centroids " + std::to_string(options.centroids) + " must be in 1.." +
                            std::to_string(n) + " (the number of points)");
  }
  std::vector<float> init = kmeanspp_seed(points, options.centroids, options.seed, options.pool);
  return run_lloyd(points, std::move(init), options);
}

Result<KMeansResult> kmeans16_from(std::span<const float> points, std::span<const float> initial_centroids,
                                   const KMeansOptions& options) {
  SUBMOE_RETURN_IF_ERROR(check_points(points, "points"));
  SUBMOE_RETURN_IF_ERROR(check_points(initial_centroids, "initial centroids"));
  const size_t n = points.size() / kRvqDim;
  const size_t k = initial_centroids.size() / kRvqDim;
  if (k > n) {
    return invalid_argument("kmeans: " + std::to_string(k) + " initial centroids for " + std::to_string(n) + " points");
  }
  return run_lloyd(points, std::vector<float>(initial_centroids.begin(), initial_centroids.end()), options);
}

}  // namespace submoe::rvq
