// Rotary position embedding, Hugging Face "rotate_half" (NeoX, non-interleaved)
// convention, with the static frequency-scaling types of modeling_rope_utils:
// default, linear, llama3 and yarn. Frequencies are computed in float32 exactly as
// transformers does, so angles agree bit for bit before cos/sin.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::model {

struct RopeParams {
  // "default", "linear", "llama3", "yarn" (other HF types are kUnsupported).
  std::string type = "default";
  double theta = 10000.0;
  int dim = 0;  // rotary dimension = head_dim (partial rotary is not used by these models)
  int max_position_embeddings = 0;
  // linear, llama3, yarn
  double factor = 1.0;
  // llama3, yarn; 0 = absent (yarn then uses max_position_embeddings)
  int original_max_position_embeddings = 0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
};

class Rope {
 public:
  // Validates the parameters (dim even and > 0, theta > 0, factor > 0, known type).
  static Result<Rope> create(const RopeParams& params);

  int dim() const { return dim_; }
  // inv_freq[i], i < dim/2, float32 as transformers computes it.
  std::span<const float> inv_freq() const { return inv_freq_; }
  // Multiplies cos and sin (1 except yarn).
  float attention_scaling() const { return attention_scaling_; }

  // cos/sin tables for one position: cos[i] = cos(float(pos) * inv_freq[i]) *
  // attention_scaling, length dim/2 (the two halves of HF's emb are equal).
  void angles(size_t position, float* cos_out, float* sin_out) const;

  // Rotates `num_heads` heads of dimension `head_stride` >= dim laid out
  // contiguously in `x` at one position, using precomputed cos/sin of length dim/2:
  // x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin for halves x1 = x[:d/2], x2 = x[d/2:d].
  static void rotate(float* x, size_t num_heads, size_t head_stride, int dim, const float* cos_half,
                     const float* sin_half);

  // The same rotation on interleaved pairs (GPT-J / complex form, DeepSeek's
  // rope_interleave): (x[2i], x[2i+1]) turns by angle i, i < dim/2. transformers
  // permutes the rope slice of q and k alike to [x0, x2, ..., x1, x3, ...] and
  // rotates halves; dot products of q and k agree exactly with this form.
  static void rotate_interleaved(float* x, size_t num_heads, size_t head_stride, int dim, const float* cos_half,
                                 const float* sin_half);

 private:
  int dim_ = 0;
  std::vector<float> inv_freq_;
  float attention_scaling_ = 1.0f;
};

}  // namespace submoe::model
