#include "submoe/serve/generate_one.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "submoe/core/clock.h"

namespace submoe::serve {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Result<GenerateOneStats> generate_one(model::Session& session, Sequence& seq, const GenerateOneOptions& o) {
  if (o.prefill_chunk < 1) return invalid_argument("the prefill chunk must be at least 1 token");
  if (session.length() != 0) return invalid_argument("generate_one needs an empty session");
  GenerateOneStats stats;
  auto fail = [&](Status s) -> Result<GenerateOneStats> {
    seq.finish(FinishReason::kError);
    return s;
  };
  auto forward = [&](std::span<const int32_t> tokens, std::vector<float>* logits) -> Status {
    SUBMOE_RETURN_IF_ERROR(session.forward(tokens, model::LogitsMode::kLast, logits));
    return o.after_forward ? o.after_forward() : Status::ok();
  };
  const std::vector<int32_t>& prompt = seq.prompt();
  std::vector<float> logits;
  const auto t_prefill = Clock::now();
  for (size_t first = 0; first < prompt.size(); first += o.prefill_chunk) {
    const size_t n = std::min(o.prefill_chunk, prompt.size() - first);
    if (Status s = forward(std::span<const int32_t>(prompt).subspan(first, n), &logits); !s) return fail(s);
    if (o.on_prefill_progress) o.on_prefill_progress(first + n, prompt.size());
  }
  stats.prefill_seconds = seconds_since(t_prefill);
  // A sequence with nothing to generate still has its logits checked.
  if (seq.finished())
    if (Status s = check_finite_logits(logits, prompt.size() - 1); !s) return fail(s);
  if (o.on_decode_start) o.on_decode_start();
  const auto t_decode = Clock::now();
  while (!seq.finished()) {
    Result<std::optional<int32_t>> next = [&] {
      model::ScopedOpTimer timer(o.sampling_profile, model::OpClass::kSampling);
      return seq.next(logits);
    }();
    if (!next.is_ok()) return fail(next.status());
    if (o.on_text) {
      const std::string text = seq.take_text();
      if (!text.empty()) o.on_text(text);
    }
    if (!next.value()) break;
    const int32_t one[1] = {*next.value()};
    if (Status s = forward(one, &logits); !s) return fail(s);
    ++stats.decode_steps;
  }
  if (o.on_text) {
    const std::string rest = seq.take_text();
    if (!rest.empty()) o.on_text(rest);
  }
  stats.decode_seconds = seconds_since(t_decode);
  return stats;
}

}  // namespace submoe::serve
