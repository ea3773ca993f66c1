// One request's generation, apart from how its forward passes are run: sampling
// from each row of logits, the stop conditions (EOS ids, stop strings, the token
// limit, the model's context) and the output text, streamed as it becomes final.
// The same Sequence is driven by generate_one (a single session: `submoe run`)
// and by the Scheduler (many sessions batched: `submoe serve`), so both stop and
// sample identically.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/sampler.h"

namespace submoe::serve {

class Engine;

struct GenerationParams {
  int max_tokens = 128;                  // tokens to generate at most (>= 0)
  model::SamplerOptions sampling;        // temperature, top_k, top_p, seed
  std::vector<std::string> stop;         // stop strings: output ends before the first match (not included)
  bool ignore_eos = false;               // generate through EOS ids
  bool allow_long_context = false;       // do not stop when the model's context is full
};

// The parameter checks (max_tokens >= 0, sampler options, stop strings non-empty,
// at most 16 of them).
Status validate(const GenerationParams& params);

enum class FinishReason {
  kNone,       // still running
  kEos,        // an EOS token was sampled (not part of the output)
  kStop,       // a stop string appeared (cut from the output)
  kLength,     // max_tokens generated
  kContext,    // the model's context is full
  kCancelled,  // the caller cancelled
  kError,      // a forward pass or the logits failed
};
inline constexpr int kFinishReasonCount = static_cast<int>(FinishReason::kError) + 1;
// kNumerical naming `position` when a logit is NaN or infinite (a NaN or
// infinite weight or activation): generation stops instead of sampling garbage.
Status check_finite_logits(std::span<const float> logits, size_t position);

// "eos", "stop", "length", "context", "cancelled", "error" ("" for kNone).
const char* finish_reason_name(FinishReason reason);

// Holds back output that may be the start of a stop string. push() takes new
// text and returns what is final; once a stop string is found, matched() is set
// and the returned text ends just before it. flush() returns what was held back
// (at the end of a generation without a match).
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  std::string push(std::string_view text);
  std::string flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool matched_ = false;
};

class Sequence {
 public:
  // `prompt` checked by Engine::check_prompt / encode_prompt, `params` by
  // validate(); the engine must outlive the sequence.
  Sequence(const Engine& engine, std::vector<int32_t> prompt, const GenerationParams& params);

  const std::vector<int32_t>& prompt() const { return prompt_; }
  // Tokens this sequence may generate: max_tokens, or fewer when the context
  // bounds it (then it finishes with kContext).
  int token_budget() const { return budget_; }

  // The logits that follow the prompt's last token or the last returned token:
  // samples the next token and applies the stop conditions. Returns the token to
  // feed next, or nullopt when the sequence has finished. Non-finite logits are a
  // kNumerical error (the sequence finishes with kError).
  Result<std::optional<int32_t>> next(std::span<const float> logits);
  // Ends the sequence with `reason` (kCancelled, kError) unless it has finished.
  void finish(FinishReason reason);

  bool finished() const { return reason_ != FinishReason::kNone; }
  FinishReason finish_reason() const { return reason_; }
  // Output text made final since the last call (stop strings cut, text held back
  // while it may begin one; all of it once finished).
  std::string take_text();
  // Tokens generated (the EOS token excluded; the one that completed a stop string included).
  int completion_tokens() const { return generated_; }
  const std::vector<int32_t>& output_ids() const { return output_; }

 private:
  const Engine& engine_;
  std::vector<int32_t> prompt_;
  GenerationParams params_;
  int budget_ = 0;
  bool budget_is_context_ = false;
  model::Sampler sampler_;
  io::DecodeStream decode_;
  StopMatcher stops_;
  std::string text_;  // final text not yet taken
  std::vector<int32_t> output_;
  int generated_ = 0;
  FinishReason reason_ = FinishReason::kNone;
};

}  // namespace submoe::serve
