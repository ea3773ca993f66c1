// Test support: random tiny checkpoints of each architecture written in the Hugging
// Face layout (config.json + model.safetensors), and a float64 reference forward
// pass written straight from the doc's formulas (no engine code), to check the
// engine on configurations the HF fixtures do not cover (sliding windows, bf16,
// fused expert tensors, dense layers, biases everywhere).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "submoe/core/status.h"
#include "submoe/io/safetensors.h"
#include "temp_dir.h"

namespace submoe::model::testing {

struct TinySpec {
  std::string model_type = "mixtral";
  int vocab = 61, hidden = 24, layers = 2, heads = 4, kv_heads = 2, head_dim = 6;
  int experts = 5, top_k = 2, expert_inner = 10, dense_inner = 14, shared_inner = 0;
  bool norm_topk_prob = true;
  bool attention_bias = false;  // qwen3/olmoe: q,k,v,o biases; qwen2: q,k,v biases always
  std::vector<int> mlp_only_layers;
  int sliding_window = 0;  // 0 = none
  int max_window_layers = 0;
  double clip_qkv = 0.0;  // olmoe; 0 = none
  bool tie_word_embeddings = false;
  bool bf16 = false;
  bool fused_experts = false;  // v5 experts.gate_up_proj / experts.down_proj
  double rope_theta = 10000.0;
  double rope_linear_factor = 0.0;  // 0 = default rope
  double rms_norm_eps = 1e-5;
  uint32_t seed = 1;
};

struct TinyCheckpoint {
  std::string dir;  // owned by `owner`: removed with the last copy of the checkpoint
  std::shared_ptr<const submoe::testing::TempDir> owner;
  nlohmann::json config;
  // Every tensor as float64 (bf16-rounded when spec.bf16), by hub name.
  std::map<std::string, std::vector<double>> tensors;
};

// Writes the checkpoint into a fresh temporary directory.
Result<TinyCheckpoint> write_tiny_checkpoint(const TinySpec& spec);

// Reference logits [T, V] of the whole sequence (no cache), and the experts chosen
// per sparse layer per token (layer -> [T][k]).
struct ReferenceOutput {
  std::vector<double> logits;
  std::map<int, std::vector<std::vector<int>>> experts;
};
ReferenceOutput reference_forward(const TinySpec& spec, const TinyCheckpoint& ckpt, const std::vector<int32_t>& ids);

}  // namespace submoe::model::testing
