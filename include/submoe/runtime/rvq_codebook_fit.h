// Global against per-layer RVQ codebooks (issue: "measure the claim"): the
// rvq representation stores one codebook set per artifact, trained on N(0, 1)
// data, on the argument that the rotation makes every layer's weights close to
// i.i.d. Gaussian. This experiment measures what that costs on a real
// checkpoint: for each MoE layer, the experts' matrices are rotated as the
// encoder rotates them (randomized Hadamard on both sides, the encoder's seed
// per width) and their rows scaled to RMS 1; the even-numbered experts train
// that layer's own codebooks (k-means stage by stage, the same trainer and
// options as the global set), the odd-numbered experts are the held-out test
// set, and both codebook sets code the test subvectors with the same beam
// search. Reported per layer and weighted over layers: the relative mse
// ||x - x_hat||^2 / ||x||^2 of the held-out subvectors under each set, and the
// per-layer set's error on its own training subvectors (its overfitting).
// `submoe codec rvq-fit` prints it (docs/rvq.md, "Global or per-layer
// codebooks").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::runtime {

struct RvqCodebookFitOptions {
  double bits = 2.0;               // 0.5 .. 4 in steps of 0.5
  uint32_t train_vectors = 65536;  // per codebook set (layer sets: evenly spaced subvectors of the training half)
  uint32_t test_vectors = 65536;   // held-out subvectors per layer (evenly spaced), at most
  uint32_t iters = 20;
  uint32_t beam = 8;
  uint64_t seed = 1;
  bool rotate = true;              // false: rows scaled but not rotated (the --no-rht ablation)
  ThreadPool* pool = nullptr;
  std::function<void(const std::string&)> progress;
};

struct RvqCodebookFitLayer {
  size_t layer = 0;
  uint64_t train_vectors = 0, test_vectors = 0;
  double mse_global = 0;      // held-out, global Gaussian-trained codebooks
  double mse_layer = 0;       // held-out, this layer's codebooks
  double mse_layer_train = 0; // this layer's codebooks on their training subvectors
};

struct RvqCodebookFitReport {
  uint32_t stages = 0;
  std::vector<RvqCodebookFitLayer> layers;
  double mse_global = 0, mse_layer = 0;  // over all layers' held-out subvectors
  double seconds = 0;
};

// Errors: a directory that is not a MoE checkpoint, bits off the ladder, an
// expert width that is not a multiple of 16, a layer with fewer than 2 experts.
Result<RvqCodebookFitReport> fit_rvq_codebooks(const std::string& model_dir, const RvqCodebookFitOptions& options);

}  // namespace submoe::runtime
