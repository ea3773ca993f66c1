// Synthetic checkpoints: random weights in the real Hugging Face layout of a
// supported MoE architecture (config.json with the architecture's own field
// names, hub tensor names, safetensors shards + index), for benchmarks, offload
// experiments and tests at sizes no fixture has.
//
// Values (a documented init, close to HF's _init_weights with
// initializer_range 0.02):
//   linear weights, lm_head              N(0, 0.02)
//   token embedding                      N(0, 1): each token's own embedding then
//       dominates the residual stream at every depth. With 0.02 the
//       context-averaged attention outputs take over after a layer or two and
//       deeper routers see nearly the same input for neighbouring tokens
//       (measured, 8 layers x 32 experts top-4: layer 7 reused 87% of the
//       previous token's experts and a 64-token batch touched 7 of 32 experts).
//   router (gate) weights                N(0, max(0.02, 1/sqrt(H))): a unit-RMS
//       input then gives router logits of std >= 1, so the softmax is decisive and
//       routing spreads over the experts (0.02 alone gives logit std 0.16 at
//       H = 64, i.e. near-uniform weights)
//   RMSNorm weights (incl. q/k norms)    1
//   biases (Qwen2-MoE q/k/v)             0
//
// Deterministic: element i of tensor `name` is a pure function of (seed, name,
// i) — a counter-based generator (splitmix64 of a per-tensor key plus the
// element index, mapped through the inverse normal CDF) — so the bytes do not
// depend on threads, chunking or shard boundaries. Memory is bounded: tensors are
// generated chunk by chunk inside io::SafetensorsWriter fill callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "submoe/io/tokenizer.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::model {

struct SynthSpec {
  io::Architecture architecture = io::Architecture::kMixtral;
  int64_t layers = 0;
  int64_t experts = 0;
  int64_t hidden = 0;
  int64_t ffn = 0;    // routed expert intermediate size
  int64_t top_k = 2;  // num_experts_per_tok
  // 0 = max(1, hidden / 128).
  int64_t heads = 0;
  // 0 = heads / 4 when heads is a multiple of 4, else heads.
  int64_t kv_heads = 0;
  // 0 = hidden / heads. Only mixtral and qwen3_moe may set another value (the
  // others always derive it, as HF does).
  int64_t head_dim = 0;
  // 0 = the tokenizer's size (tokenizer given) or 32000.
  int64_t vocab = 0;
  // Qwen2-MoE shared expert width; 0 = 4 * ffn.
  int64_t shared_ffn = 0;
  // Qwen dense-layer MLP width (config intermediate_size); 0 = 4 * ffn.
  int64_t dense_ffn = 0;
  // Qwen only: decoder layers with a dense MLP instead of experts.
  std::vector<int64_t> mlp_only_layers;
  int64_t max_position_embeddings = 4096;
  io::DType dtype = io::DType::kBF16;  // BF16 or F32
  uint64_t seed = 0;
};

// Checks `spec`, fills in its defaults and returns the model config it describes.
// With a tokenizer, the vocabulary must cover its ids and bos/eos_token_id are
// taken from it (else they are null). Errors (kInvalidArgument) name the option.
Result<io::MoeModelConfig> resolve_synth_config(const SynthSpec& spec, const io::Tokenizer* tokenizer = nullptr);

// config.json text for `config` in its architecture's own field names, as
// transformers 4.57 writes them (mixtral: intermediate_size + num_local_experts;
// qwen*_moe: moe_intermediate_size, num_experts, decoder_sparse_step,
// mlp_only_layers; qwen2_moe: shared_expert_intermediate_size; ...).
std::string synth_config_json(const io::MoeModelConfig& config);

// How a checkpoint tensor is initialised (see the file comment).
enum class SynthInit { kNormal, kEmbedding, kRouter, kOnes, kZeros };

struct CheckpointTensor {
  std::string name;              // hub name
  std::vector<int64_t> shape;    // [out, in] for linear weights
  SynthInit init = SynthInit::kNormal;
  int64_t numel() const;
};

// Every tensor a hub checkpoint of `config` holds, in write order: embedding;
// per layer norms, attention, then the dense MLP or the router, shared expert
// and routed experts (each expert's gate, up, down contiguous, experts in
// order); final norm; lm_head unless tied. Names come from the architecture
// adapter (model/architecture.h).
std::vector<CheckpointTensor> checkpoint_layout(const io::MoeModelConfig& config);

// Sum of numel over the layout (tied weights once).
int64_t layout_parameters(std::span<const CheckpointTensor> layout);

// Writes elements [first, first + count) of `tensor` as `dtype` (BF16 or F32,
// little-endian) into out (count * dtype size bytes). `pool` may be null.
Status fill_synth_tensor(uint64_t seed, const CheckpointTensor& tensor, io::DType dtype, uint64_t first,
                         std::span<uint8_t> out, ThreadPool* pool);

// One standard normal from a uniform in (0, 1) (inverse CDF, |rel. error| < 1.2e-9).
double inverse_normal_cdf(double p);

struct SynthWriteOptions {
  // Shards hold at most this many bytes of tensor data (a single larger tensor
  // gets a shard of its own), as transformers' max_shard_size. One shard is
  // written as model.safetensors, several as model-0000i-of-0000n.safetensors
  // plus model.safetensors.index.json.
  uint64_t shard_bytes = uint64_t{2048} << 20;
  // Directory with tokenizer.json (and its companions, copied when present);
  // empty = no tokenizer files.
  std::string tokenizer_from;
  // Replace an existing checkpoint in the output directory (its stale weight
  // files are removed); otherwise a directory holding one is an error.
  bool overwrite = false;
  ThreadPool* pool = nullptr;
  // Called after every generated chunk with (tensor bytes done, total).
  std::function<void(uint64_t done, uint64_t total)> progress;
  bool fsync = true;
};

struct SynthResult {
  io::MoeModelConfig config;
  int64_t parameters = 0;
  uint64_t tensor_bytes = 0;       // data bytes of all tensors
  uint64_t bytes_written = 0;      // sizes of all files written
  std::vector<std::string> files;  // names relative to the output directory
};

// Writes config.json, the safetensors shard(s) (+ index) and, with a tokenizer,
// its files and a generation_config.json (bos/eos ids) into `out_dir` (created if
// missing). Every file is written atomically.
Result<SynthResult> write_synth_checkpoint(const SynthSpec& spec, const std::string& out_dir,
                                           const SynthWriteOptions& options);

}  // namespace submoe::model
