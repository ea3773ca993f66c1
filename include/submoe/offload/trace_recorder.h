// Recording routing traces (docs/trace-format.md) by running text through a
// model: every token's chosen experts and routing weights in every MoE layer,
// observed through Session::set_routing_observer.
//
// The token stream is cut into windows of `context` tokens; each window starts
// from an empty KV cache (as an evaluation with that context length would see
// it) and is prefilled in chunks of `prefill_chunk` tokens. Routing does not
// depend on the chunk size (each token's routing depends only on its causal
// prefix inside the window), only on the window length.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::offload {

struct TraceRecordOptions {
  size_t context = 512;        // tokens per window (fresh KV cache each)
  size_t prefill_chunk = 128;  // tokens per forward call inside a window
  uint64_t max_tokens = 0;     // record at most this many tokens; 0 = all
  bool lossy_text = false;     // read invalid UTF-8 as U+FFFD (io::read_text_file)
  // Called after every forward call with (tokens done, tokens to record).
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Non-null: also record pre-gating's predictions (Session::set_prediction_observer)
  // into this trace, of the same layout and tokens: MoE layer m > 0 holds the
  // choices that layer m's router made on the hidden state of layer m - 1 (after
  // its attention), per token; MoE layer 0, which nothing predicts, holds its
  // actual routing. `trace replay --prefetch-from pregate` prefetches from it.
  RoutingTrace* predictions = nullptr;
  // record_trace_file: where to save the predictions (empty: not recorded).
  std::string predictions_out;
};

// The routing of `tokens` (after the max_tokens cap) through `model`. The trace's
// layers are the model's MoE layers in model order (dense layers are skipped).
// Errors: no MoE layer, more than 65536 experts, zero context or chunk, token
// ids outside the vocabulary (from Session::forward).
Result<RoutingTrace> record_routing_trace(const model::MoeModel& model, std::span<const int32_t> tokens,
                                          const TraceRecordOptions& options, ThreadPool* pool);

struct TraceRecordSummary {
  uint64_t text_tokens = 0;  // tokens of the whole text
  uint64_t tokens = 0;       // tokens recorded (text_tokens capped by max_tokens)
  uint32_t layers = 0;       // MoE layers recorded
  uint32_t experts = 0;
  uint32_t top_k = 0;
  uint64_t windows = 0;
  bool artifact = false;      // the model was a compressed artifact
  double load_seconds = 0;    // model + tokenizer
  double record_seconds = 0;  // forward passes
};

// Loads the model at `model_path` (a Hugging Face checkpoint or a compressed
// artifact, runtime::load_model_or_artifact; `load` applies to artifacts) and
// its tokenizer.json, tokenizes the UTF-8 text file `text_path` (special tokens
// added as the tokenizer's post-processor says, once at the start of the text),
// records the routing and saves the trace atomically to `out_path`.
Result<TraceRecordSummary> record_trace_file(const std::string& model_path, const std::string& text_path,
                                             const std::string& out_path, const TraceRecordOptions& options,
                                             ThreadPool* pool, const runtime::ArtifactModelOptions& load = {});

}  // namespace submoe::offload
