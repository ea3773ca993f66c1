#include "runtime/repr/kmeans8.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "submoe/codec/rvq.h"

namespace submoe::runtime::repr {
namespace {
constexpr uint32_t D = 8;

float dist2(const float* a, const float* b) {
  float s = 0;
  for (uint32_t j = 0; j < D; ++j) {
    const float d = a[j] - b[j];
    s += d * d;
  }
  return s;
}
}  // namespace

void assign_nearest8(std::span<const float> points, std::span<const float> centroids, std::span<uint32_t> assign) {
  const size_t n = points.size() / D, k = centroids.size() / D;
  // Scores ||c||^2 - 2 x . c over centroids stored coordinate-major (vectorizes over c).
  std::vector<float> t(k * D), norm(k), score(k);
  for (size_t c = 0; c < k; ++c) {
    float s = 0;
    for (uint32_t j = 0; j < D; ++j) {
      t[j * k + c] = centroids[c * D + j];
      s += centroids[c * D + j] * centroids[c * D + j];
    }
    norm[c] = s;
  }
  for (size_t i = 0; i < n; ++i) {
    const float* x = points.data() + i * D;
    std::copy(norm.begin(), norm.end(), score.begin());
    for (uint32_t j = 0; j < D; ++j) {
      const float xj = -2.0f * x[j];
      const float* tj = t.data() + j * k;
      for (size_t c = 0; c < k; ++c) score[c] += xj * tj[c];
    }
    assign[i] = static_cast<uint32_t>(std::min_element(score.begin(), score.end()) - score.begin());
  }
}

Result<std::vector<float>> kmeans8(std::span<const float> points, uint32_t k, const KMeansOptions& o,
                                   std::span<const float> weights) {
  const size_t total = points.size() / D;
  if (points.size() % D != 0 || k == 0 || k > total)
    return invalid_argument("kmeans8: " + std::to_string(total) + " points cannot make " + std::to_string(k) +
                            " clusters");
  if (!weights.empty() && weights.size() != total) return invalid_argument("kmeans8: one weight per point");
  for (float wt : weights)
    if (!(wt > 0) || !std::isfinite(wt)) return invalid_argument("kmeans8: weights must be positive and finite");
  // The fixed-stride sample.
  const size_t n = std::min<size_t>(total, std::max<size_t>(o.max_points, k));
  std::vector<float> x(n * D), wt(n, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    const size_t src = total == n ? i : i * total / n;
    std::copy(points.begin() + src * D, points.begin() + (src + 1) * D, x.begin() + i * D);
    if (!weights.empty()) wt[i] = weights[src];
  }
  rvq::SplitMix64 rng(o.seed);
  std::vector<float> c(size_t{k} * D);
  // k-means++: first centre uniform, then proportional to the squared distance.
  std::vector<float> d2(n, std::numeric_limits<float>::infinity());
  size_t pick = rng.next() % n;
  for (uint32_t m = 0; m < k; ++m) {
    std::copy(x.begin() + pick * D, x.begin() + (pick + 1) * D, c.begin() + size_t{m} * D);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      d2[i] = std::min(d2[i], wt[i] * dist2(x.data() + i * D, c.data() + size_t{m} * D));
      sum += d2[i];
    }
    if (m + 1 == k) break;
    if (!(sum > 0)) {  // every point is a centre already: duplicate the first
      pick = 0;
      continue;
    }
    double target = rng.uniform_open0() * sum, acc = 0;
    pick = n - 1;
    for (size_t i = 0; i < n; ++i) {
      acc += d2[i];
      if (acc >= target && d2[i] > 0) {
        pick = i;
        break;
      }
    }
  }
  std::vector<uint32_t> assign(n);
  std::vector<double> sums(size_t{k} * D);
  std::vector<double> counts(k);
  std::vector<float> err(n);
  for (uint32_t it = 0; it < o.max_iterations; ++it) {
    assign_nearest8(x, c, assign);
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(counts.begin(), counts.end(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      counts[assign[i]] += wt[i];
      for (uint32_t j = 0; j < D; ++j) sums[size_t{assign[i]} * D + j] += double{wt[i]} * x[i * D + j];
      err[i] = wt[i] * dist2(x.data() + i * D, c.data() + size_t{assign[i]} * D);
    }
    bool moved = false;
    for (uint32_t m = 0; m < k; ++m) {
      float* cm = c.data() + size_t{m} * D;
      if (counts[m] == 0.0) {
        // Re-seed at the point with the largest error; it then counts as error 0.
        const size_t far = static_cast<size_t>(std::max_element(err.begin(), err.end()) - err.begin());
        if (!(err[far] > 0)) continue;
        std::copy(x.begin() + far * D, x.begin() + (far + 1) * D, cm);
        err[far] = 0;
        moved = true;
        continue;
      }
      for (uint32_t j = 0; j < D; ++j) {
        const float v = static_cast<float>(sums[size_t{m} * D + j] / counts[m]);
        moved = moved || v != cm[j];
        cm[j] = v;
      }
    }
    if (!moved) break;
  }
  return c;
}

}  // namespace submoe::runtime::repr
