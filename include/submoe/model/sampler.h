// Next-token sampling from logits: greedy, temperature, top-k, top-p (nucleus),
// seeded and reproducible across platforms (own 64-bit generator and uniform
// mapping; std:: distributions differ between standard libraries).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::model {

struct SamplerOptions {
  // <= 0: greedy (argmax, lowest id on ties); otherwise logits are divided by it.
  float temperature = 0.0f;
  // Keep only the k most likely tokens; 0 = no limit.
  int top_k = 0;
  // Keep the smallest set of most likely tokens whose probability mass reaches
  // top_p (always at least one); 1 = no limit. Applied after top_k.
  float top_p = 1.0f;
  uint64_t seed = 0;
};

Status validate(const SamplerOptions& options);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // Picks a token id from one row of logits (size = vocabulary).
  int32_t sample(std::span<const float> logits);

  // The distribution sample() draws from (probability per token id, zeros for
  // filtered tokens); for tests and diagnostics. Greedy gives a one-hot vector.
  std::vector<float> distribution(std::span<const float> logits) const;

  // Uniform double in [0, 1) from the generator (53 random bits).
  double next_uniform();

 private:
  struct Candidate {
    int32_t id;
    float p;
  };
  // The kept candidates, sorted by descending probability (ties: lower id first),
  // probabilities renormalized to sum to 1.
  void candidates(std::span<const float> logits, std::vector<Candidate>* out) const;

  SamplerOptions options_;
  uint64_t state_;
  std::vector<Candidate> scratch_;
};

// Index of the largest value; the lowest index on ties; NaN never wins unless all are NaN.
int32_t argmax(std::span<const float> values);

}  // namespace submoe::model
