#include "submoe/eval/next_token_loss.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace submoe::eval {

double token_nll(std::span<const float> logits, int32_t target) {
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, static_cast<double>(v));
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  return mx + std::log(sum) - static_cast<double>(logits[static_cast<size_t>(target)]);
}

Result<LossResult> next_token_loss(const model::MoeModel& model, std::span<const int32_t> tokens,
                                   const LossOptions& options, ThreadPool* pool, const LossProgress& progress) {
  if (options.context < 2) return invalid_argument("eval: context must be at least 2 tokens");
  if (options.chunk == 0) return invalid_argument("eval: chunk must be positive");
  if (options.max_tokens > 0 && tokens.size() > options.max_tokens) tokens = tokens.first(options.max_tokens);
  const size_t N = options.context;
  const size_t windows = (tokens.size() + N - 1) / N;
  if (tokens.size() < 2) return invalid_argument("eval: need at least 2 tokens, got " + std::to_string(tokens.size()));

  const size_t V = static_cast<size_t>(model.config().vocab_size);
  const auto start = std::chrono::steady_clock::now();
  model::Session session(model, pool);
  session.set_profile(options.profile);
  session.reserve(std::min(N, tokens.size()));
  std::vector<float> logits;
  LossResult r;
  double total = 0.0;
  for (size_t w = 0; w < windows; ++w) {
    const std::span<const int32_t> win = tokens.subspan(w * N, std::min(N, tokens.size() - w * N));
    session.reset();
    for (size_t c0 = 0; c0 < win.size(); c0 += options.chunk) {
      const size_t n = std::min(options.chunk, win.size() - c0);
      SUBMOE_RETURN_IF_ERROR(session.forward(win.subspan(c0, n), model::LogitsMode::kAll, &logits));
      // Row i predicts window token c0 + i + 1.
      for (size_t i = 0; i < n && c0 + i + 1 < win.size(); ++i) {
        const double nll = token_nll(std::span<const float>(logits).subspan(i * V, V), win[c0 + i + 1]);
        if (!std::isfinite(nll))
          return numerical_error("eval: non-finite logits at token " + std::to_string(w * N + c0 + i) +
                                 " (window " + std::to_string(w) +
                                 "): a NaN or infinite weight or activation; nothing is averaged over it");
        total += nll;
        ++r.tokens_scored;
      }
    }
    r.tokens_processed += win.size();
    ++r.windows;
    if (progress) progress(r.windows, windows, r.tokens_scored ? total / static_cast<double>(r.tokens_scored) : 0.0);
  }
  if (r.tokens_scored == 0) return invalid_argument("eval: no token to score (every window holds a single token)");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.nll = total / static_cast<double>(r.tokens_scored);
  r.ppl = std::exp(r.nll);
  r.tokens_per_s = r.seconds > 0 ? static_cast<double>(r.tokens_processed) / r.seconds : 0.0;
  return r;
}

}  // namespace submoe::eval
