#include "submoe/serve/generation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "submoe/serve/engine.h"

namespace submoe::serve {

Status validate(const GenerationParams& p) {
  if (p.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
  SUBMOE_RETURN_IF_ERROR(model::validate(p.sampling));
  if (p.stop.size() > 16) return invalid_argument("at most 16 stop strings, got " + std::to_string(p.stop.size()));
  for (const std::string& s : p.stop)
    if (s.empty()) return invalid_argument("a stop string is empty");
  return Status::ok();
}

Status check_finite_logits(std::span<const float> logits, size_t position) {
  for (float v : logits)
    if (!std::isfinite(v))
      return numerical_error("non-finite logits at position " + std::to_string(position) +
                             " (a NaN or infinite weight or activation)");
  return Status::ok();
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kEos: return "eos";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kContext: return "context";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "";
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopMatcher::push(std::string_view text) {
  if (matched_) return {};
  pending_ += text;
  if (stops_.empty()) return std::exchange(pending_, {});
  // Generation stops at the first byte that completes a stop string, so the
  // match that ends first wins (and then the earliest one ending by that byte):
  // the cut is the same however the text was split into pieces.
  size_t end = std::string::npos;
  for (const std::string& s : stops_)
    if (const size_t at = pending_.find(s); at != std::string::npos) end = std::min(end, at + s.size());
  if (end != std::string::npos) {
    const std::string_view seen = std::string_view(pending_).substr(0, end);
    size_t cut = end;
    for (const std::string& s : stops_) cut = std::min(cut, seen.find(s));
    matched_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string: a
  // match can only start there (every earlier start was ruled out above).
  size_t keep = 0;
  for (const std::string& s : stops_) {
    const size_t most = std::min(s.size() - 1, pending_.size());
    for (size_t k = most; k > keep; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::flush() { return matched_ ? std::string() : std::exchange(pending_, {}); }

Sequence::Sequence(const Engine& engine, std::vector<int32_t> prompt, const GenerationParams& params)
    : engine_(engine),
      prompt_(std::move(prompt)),
      params_(params),
      sampler_(params.sampling),
      decode_(engine.tokenizer(), /*skip_special_tokens=*/true),
      stops_(params.stop) {
  budget_ = params.max_tokens;
  const int64_t context = engine.context_length();
  if (context > 0 && !params.allow_long_context) {
    const int64_t room = std::max<int64_t>(0, context - static_cast<int64_t>(prompt_.size()));
    if (room < budget_) {
      budget_ = static_cast<int>(room);
      budget_is_context_ = true;
    }
  }
  if (budget_ == 0) reason_ = budget_is_context_ ? FinishReason::kContext : FinishReason::kLength;
}

void Sequence::finish(FinishReason reason) {
  if (finished()) return;
  reason_ = reason;
  text_ += stops_.flush();
}

std::string Sequence::take_text() {
  if (finished() && reason_ != FinishReason::kStop) text_ += stops_.flush();
  return std::exchange(text_, {});
}

Result<std::optional<int32_t>> Sequence::next(std::span<const float> logits) {
  if (finished()) return internal_error("Sequence::next after the sequence finished");
  const size_t position = prompt_.size() + static_cast<size_t>(generated_) - 1;
  if (Status s = check_finite_logits(logits, position); !s) {
    finish(FinishReason::kError);
    return s;
  }
  const int32_t token = sampler_.sample(logits);
  if (!params_.ignore_eos && engine_.is_eos(token)) {
    finish(FinishReason::kEos);
    return std::optional<int32_t>();
  }
  ++generated_;
  output_.push_back(token);
  text_ += stops_.push(decode_.step(token));
  if (stops_.matched()) {
    reason_ = FinishReason::kStop;
    return std::optional<int32_t>();
  }
  if (generated_ >= budget_) {
    finish(budget_is_context_ ? FinishReason::kContext : FinishReason::kLength);
    return std::optional<int32_t>();
  }
  return std::optional<int32_t>(token);
}

}  // namespace submoe::serve
