#include <chrono>
#include <cstring>

#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model {

Session::Session(const MoeModel& model, ThreadPool* pool)
    : model_(model),
      pool_(pool),
      cache_(static_cast<size_t>(model.config().num_hidden_layers),
             static_cast<size_t>(model.config().num_key_value_heads), static_cast<size_t>(model.config().head_dim)),
      scratch_(std::make_unique<Scratch>()) {
  scratch_->threads.resize(pool ? static_cast<size_t>(pool->num_threads()) : 1);
}

Session::~Session() = default;

Status Session::forward(std::span<const int32_t> tokens, LogitsMode mode, std::vector<float>* logits) {
  const io::MoeModelConfig& c = model_.config();
  const size_t T = tokens.size();
  const size_t V = static_cast<size_t>(c.vocab_size), H = static_cast<size_t>(c.hidden_size);
  const size_t D = static_cast<size_t>(c.head_dim);
  for (size_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || static_cast<size_t>(tokens[t]) >= V)
      return invalid_argument("token id " + std::to_string(tokens[t]) + " at index " + std::to_string(t) +
                              " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (mode != LogitsMode::kNone && logits == nullptr) return invalid_argument("forward: logits output is null");
  if (T == 0) {
    if (logits) logits->clear();
    return Status::ok();
  }

  const auto t_forward = std::chrono::steady_clock::now();
  Scratch& s = *scratch_;
  s.resize_for(c, T);

  const size_t p0 = cache_.length();
  cache_.ensure_room(T);
  {
    ScopedOpTimer timer(profile_, OpClass::kEmbed);
    for (size_t t = 0; t < T; ++t) {
      model_.weights().embed.lookup(static_cast<size_t>(tokens[t]), &s.h[t * H]);
      model_.rope().angles(p0 + t, &s.cos[t * D / 2], &s.sin[t * D / 2]);
    }
  }

  const float eps = static_cast<float>(c.rms_norm_eps);
  const detail::BlockContext ctx{model_, pool_, s, T, p0, profile_};
  for (size_t l = 0; l < model_.weights().layers.size(); ++l) {
    const LayerWeights& L = model_.weights().layers[l];
    {
      ScopedOpTimer timer(profile_, OpClass::kNorm);
      for (size_t t = 0; t < T; ++t) detail::rms_norm_to(&s.h[t * H], &s.x[t * H], H, L.input_norm.data(), eps);
    }
    detail::attention_block(ctx, l, cache_);
    {
      ScopedOpTimer timer(profile_, OpClass::kNorm);
      for (size_t i = 0; i < T * H; ++i) s.h[i] += s.block[i];
      for (size_t t = 0; t < T; ++t)
        detail::rms_norm_to(&s.h[t * H], &s.x[t * H], H, L.post_attention_norm.data(), eps);
    }
    Status st = detail::ffn_block(ctx, l, observer_);
    if (!st.is_ok()) return st;  // the cache keeps its old length: the batch is dropped
    ScopedOpTimer timer(profile_, OpClass::kNorm);
    for (size_t i = 0; i < T * H; ++i) s.h[i] += s.block[i];
  }
  cache_.advance(T);

  if (mode != LogitsMode::kNone) {
    ScopedOpTimer timer(profile_, OpClass::kLmHead);
    const size_t first_row = mode == LogitsMode::kLast ? T - 1 : 0;
    const size_t rows = T - first_row;
    s.final_x.resize(rows * H);
    for (size_t r = 0; r < rows; ++r)
      detail::rms_norm_to(&s.h[(first_row + r) * H], &s.final_x[r * H], H, model_.weights().final_norm.data(), eps);
    logits->resize(rows * V);
    model_.weights().lm_head->forward(s.final_x.data(), rows, logits->data(), pool_);
  }
  if (profile_) profile_->add_forward(T, ScopedOpTimer::elapsed_ns(t_forward));
  return Status::ok();
}

}  // namespace submoe::model
