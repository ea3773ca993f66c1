// `submoe compress`: a Hugging Face MoE checkpoint -> a compressed artifact
// (docs/compress.md, docs/format.md section 9), the way QMoE does it:
//
//   calibration tokens -> embeddings (the list buffer: every sample's hidden
//   states in one flat buffer, sample-major)
//   for each layer l (sequential, on the outputs of the compressed layers < l):
//     attention, norms, router in original precision, per sample;
//     routed experts in groups of `expert_group`: gather each expert's tokens,
//     H = X^T X, batched GPTQ (or RTN) of gate/up, H of the activations,
//     GPTQ of down, run the COMPRESSED expert on all its tokens, scatter back;
//     pack the layer (the chosen representation) into a checkpoint file;
//     save the hidden states (atomic) -> a kill -9 loses at most one layer.
//   assemble the artifact: shared tensors (e.g. the ternary dictionary), dense
//   tensors, packed experts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "submoe/calib/rate_allocation.h"
#include "submoe/core/status.h"
#include "submoe/quant/gptq.h"
#include "submoe/quant/grid.h"
#include "submoe/model/model_weights.h"
#include "submoe/runtime/representation.h"

namespace submoe::calib {

enum class QuantMethod { kGptq, kRtn };

// compress --dense-repr CLASS=SPEC: one dense weight class in a registry
// representation (the rest stay in their source dtype).
struct DenseReprChoice {
  model::DenseClass cls = model::DenseClass::kAttention;
  runtime::ReprOptions repr;
  bool if_present = false;  // ("all") a class the model does not have is skipped, not an error
};

struct CompressOptions {
  std::string model_dir;
  std::string calib_path;
  std::string out_dir;
  QuantMethod method = QuantMethod::kGptq;
  // The representation of the routed experts (runtime/representation.h):
  // a registry name plus its options (--bits, --group-size, --code, --dict-p0).
  runtime::ReprOptions repr{"ternary_dict"};
  // Per-expert rates on the representation's ladder (calib/rate_allocation.h)
  // from routing counts: of the source model on the calibration windows, or of
  // the routing trace at `popularity_path` when set.
  RateAlloc alloc = RateAlloc::kUniform;
  // Dense weight classes stored packed (calib/dense_packing.h); empty: all dense
  // weights keep their source dtype, as QMoE does.
  std::vector<DenseReprChoice> dense_reprs;
  std::string popularity_path;
  size_t samples = 128;
  bool require_samples = false;  // fewer windows than `samples` in the text is an error (--samples given)
  size_t seq_len = 256;
  double damp = 0.1;
  size_t expert_group = 16;
  bool act_order = false;
  bool true_sequential = false;  // down's Hessian from the compressed gate/up
  double token_cap_factor = 4.0; // Hessian tokens per expert <= factor x mean
  // Token ids kept out of every Hessian (still run through the model). When
  // `default_mask` is set, the tokenizer's BOS/EOS/PAD ids are added.
  std::vector<int32_t> mask_token_ids;
  bool default_mask = true;
  bool resume = false;
  // Compress although the source holds tensors the model does not read (they
  // are copied into the artifact like every dense tensor).
  bool allow_unused_tensors = false;
  // Read a calibration file that is not valid UTF-8 with U+FFFD replacements.
  bool lossy_text = false;
  bool overwrite = false;        // replace an existing artifact in out_dir
  int threads = 0;               // 0 = all hardware threads
  // Test hook: called at every progress point with a running step number; a
  // test can kill the process there. Not part of the artifact.
  std::function<void(uint64_t step)> step_hook;
};

struct Progress {
  size_t layer = 0, layers = 0;
  size_t experts_done = 0, experts = 0;  // of this layer
  double elapsed_s = 0, eta_s = -1;       // eta < 0: unknown yet
  std::string stage;                      // "dense", "experts", "pack", "assemble"
};
using ProgressFn = std::function<void(const Progress&)>;

struct LayerReport {
  size_t layer = 0;
  bool sparse = true;
  double seconds = 0;            // run-dependent: in compress_report.json only
  double gptq_seconds = 0;       // of which quantizing (GPTQ/RTN of the expert groups)
  double hessian_seconds = 0;    // of which accumulating Hessians
  size_t tokens_min = 0, tokens_max = 0;
  double tokens_mean = 0;        // routed (unmasked) tokens per expert
  size_t capped_experts = 0;     // experts whose Hessian used the token cap
  size_t experts_without_tokens = 0;  // no calibration tokens: RTN
  size_t rtn_fallbacks = 0;
  std::vector<std::string> fallback_matrices;
  double sparsity_mean = 0, sparsity_std = 0;  // fraction of zero weights per row
  // Relative errors of the compressed experts, [0] gate and up, [1] down:
  // sum (W - W_hat)^2 / sum W^2, and in output space on the calibration
  // inputs, tr(E H E^T) / tr(W H W^T) with E = W - W_hat (-1: no Hessians, RTN).
  double weight_rel_error[2] = {0, 0};
  double output_rel_error[2] = {-1, -1};
  uint64_t packed_bytes = 0;     // this layer's expert tensors in the artifact
  uint64_t weights = 0;          // expert weights of this layer
};

struct CompressSummary {
  std::string out_dir;
  uint64_t expert_weights = 0, expert_bytes = 0;
  uint64_t dense_weights = 0, dense_bytes = 0;  // everything else, in source dtype
  double expert_bits_per_weight = 0, model_bits_per_weight = 0;
  double compression_vs_bf16_experts = 0, compression_vs_bf16_model = 0;
  double natural_sparsity = 0;
  size_t rtn_fallbacks = 0;
  size_t calibration_tokens = 0, masked_tokens = 0;
  size_t resumed_layers = 0;     // layers taken from checkpoints (--resume)
  double seconds = 0;
  double peak_rss_mb = 0;
  std::vector<LayerReport> layers;
};

Result<CompressSummary> compress_model(const CompressOptions& options, const ProgressFn& progress);

}  // namespace submoe::calib
