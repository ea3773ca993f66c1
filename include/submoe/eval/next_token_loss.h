// Next-token loss (mean negative log-likelihood, nats) and perplexity of a model
// over a token sequence, in non-overlapping windows of `context` tokens.
//
// Each window starts from an empty KV cache. Within a window of n tokens the
// targets are tokens 1 .. n-1, each predicted from the tokens before it in the
// same window; the first token of every window is NOT scored (it has no
// context), so a sequence of L tokens in windows of N scores
// L - ceil(L / N) tokens. A trailing window of a single token scores nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::eval {

struct LossOptions {
  size_t context = 512;  // window length N (>= 2)
  size_t max_tokens = 0;  // use only the first max_tokens tokens; 0 = all
  // Tokens per forward call inside a window: bounds the logits buffer to
  // chunk x vocab floats; the KV cache carries the context between chunks.
  size_t chunk = 256;
  // Times every forward by op class (eval --profile); null: off.
  model::OpProfile* profile = nullptr;
};

struct LossResult {
  size_t tokens_scored = 0;
  size_t tokens_processed = 0;  // tokens run through the model
  size_t windows = 0;
  double nll = 0.0;  // mean over scored tokens, nats
  double ppl = 0.0;  // exp(nll)
  double seconds = 0.0;
  double tokens_per_s = 0.0;  // tokens_processed / seconds
};

// Called after each window: windows done, windows in total, running mean nll.
using LossProgress = std::function<void(size_t done, size_t total, double nll_so_far)>;

// -log softmax(logits)[target], computed in float64.
double token_nll(std::span<const float> logits, int32_t target);

// kInvalidArgument for context < 2 or chunk == 0, or nothing to score; model
// errors (bad token ids) are passed on.
Result<LossResult> next_token_loss(const model::MoeModel& model, std::span<const int32_t> tokens,
                                   const LossOptions& options, ThreadPool* pool,
                                   const LossProgress& progress = nullptr);

}  // namespace submoe::eval
