// Weighted k-means over 8-dimensional points (AQLM's phase-0 codebook
// initialization, aqlm_solver.h; VPTQ's Hessian-weighted centroids,
// seed 002 0x07D): k-means++ seeding from a SplitMix64 stream (probability
// proportional to weight x squared distance), then Lloyd iterations with
// weighted means; trains on a fixed-stride sample of at most max_points
// points. Empty clusters are re-seeded at the sample point with the largest
// weighted error. Deterministic for a given input and seed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::runtime::repr {

struct KMeansOptions {
  uint32_t max_iterations = 12;
  uint32_t max_points = 65536;  // raised to k when smaller
  uint64_t seed = 1;
};

// points: n x 8 floats, finite; 1 <= k <= n; weights: n positive finite
// values, or empty for uniform. Returns k x 8 centroids.
Result<std::vector<float>> kmeans8(std::span<const float> points, uint32_t k, const KMeansOptions& options,
                                   std::span<const float> weights = {});
// assign[i] = the index of the centroid nearest to point i (ties to the lower index).
void assign_nearest8(std::span<const float> points, std::span<const float> centroids, std::span<uint32_t> assign);

}  // namespace submoe::runtime::repr
