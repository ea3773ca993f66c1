#include <chrono>
#include <cstring>

#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model {

namespace detail {

Status check_token_ids(std::span<const int32_t> tokens, size_t vocab) {
  for (size_t t = 0; t < tokens.size(); ++t)
    if (tokens[t] < 0 || static_cast<size_t>(tokens[t]) >= vocab)
      return invalid_argument("token id " + std::to_string(tokens[t]) + " at index " + std::to_string(t) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  return Status::ok();
}

Status forward_rows(const BlockContext& ctx, std::span<const int32_t> tokens, const RoutingObserver& observer,
                    std::span<const size_t> logit_rows, std::vector<float>* logits) {
  const MoeModel& model = ctx.model;
  const io::MoeModelConfig& c = model.config();
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens;
  const size_t V = static_cast<size_t>(c.vocab_size), H = static_cast<size_t>(c.hidden_size);
  const size_t D = static_cast<size_t>(c.head_dim);
  s.resize_for(c, T);
  {
    ScopedOpTimer timer(ctx.profile, OpClass::kEmbed);
    for (size_t t = 0; t < T; ++t) {
      model.weights().embed.lookup(static_cast<size_t>(tokens[t]), &s.h[t * H]);
      model.rope().angles(ctx.rows.position[t], &s.cos[t * D / 2], &s.sin[t * D / 2]);
    }
  }

  for (size_t l = 0; l < model.weights().layers.size(); ++l) SUBMOE_RETURN_IF_ERROR(decoder_layer(ctx, l, observer));

  if (logit_rows.empty()) return Status::ok();
  ScopedOpTimer timer(ctx.profile, OpClass::kLmHead);
  const float eps = static_cast<float>(c.rms_norm_eps);
  const size_t rows = logit_rows.size();
  s.final_x.resize(rows * H);
  for (size_t r = 0; r < rows; ++r)
    rms_norm_to(&s.h[logit_rows[r] * H], &s.final_x[r * H], H, model.weights().final_norm.data(), eps);
  logits->resize(rows * V);
  model.weights().lm_head->forward(s.final_x.data(), rows, logits->data(), ctx.pool);
  return Status::ok();
}

}  // namespace detail

Session::Session(const MoeModel& model, ThreadPool* pool)
    : model_(model),
      pool_(pool),
      cache_(model.kv_shapes()),
      scratch_(Scratch::for_pool(pool)) {}

Session::~Session() = default;

Status Session::forward(std::span<const int32_t> tokens, LogitsMode mode, std::vector<float>* logits) {
  const size_t T = tokens.size();
  SUBMOE_RETURN_IF_ERROR(detail::check_token_ids(tokens, static_cast<size_t>(model_.config().vocab_size)));
  if (mode != LogitsMode::kNone && logits == nullptr) return invalid_argument("forward: logits output is null");
  if (T == 0) {
    if (logits) logits->clear();
    return Status::ok();
  }

  const auto t_forward = std::chrono::steady_clock::now();
  Scratch& s = *scratch_;
  const size_t p0 = cache_.length();
  cache_.ensure_room(T);
  s.placement.clear();
  s.placement.append(&cache_, p0, T);
  s.logit_rows.clear();
  if (mode == LogitsMode::kAll)
    for (size_t t = 0; t < T; ++t) s.logit_rows.push_back(t);
  else if (mode == LogitsMode::kLast)
    s.logit_rows.push_back(T - 1);
  const detail::BlockContext ctx{model_, pool_, s, T, s.placement, profile_,
                                 prediction_observer_ ? &prediction_observer_ : nullptr};
  // On an error the cache keeps its old length: the batch is dropped.
  SUBMOE_RETURN_IF_ERROR(detail::forward_rows(ctx, tokens, observer_, s.logit_rows, logits));
  cache_.advance(T);
  if (profile_) profile_->add_forward(T, ScopedOpTimer::elapsed_ns(t_forward));
  return Status::ok();
}

BatchForward::BatchForward(const MoeModel& model, ThreadPool* pool)
    : model_(model), pool_(pool), scratch_(Session::Scratch::for_pool(pool)) {}

BatchForward::~BatchForward() = default;

Status BatchForward::forward(std::span<const BatchEntry> entries, std::vector<float>* logits) {
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  // Checked before anything runs; messages are built only on a refusal.
  auto refuse = [](size_t i, const std::string& why) {
    return invalid_argument("batch entry " + std::to_string(i) + ": " + why);
  };
  size_t T = 0;
  bool any_logits = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const BatchEntry& e = entries[i];
    if (e.session == nullptr) return refuse(i, "no session");
    if (&e.session->model_ != &model_) return refuse(i, "a session of another model");
    for (size_t j = 0; j < i; ++j)  // batches are small: a scan, no allocation per step
      if (entries[j].session == e.session) return refuse(i, "its session is listed twice");
    if (e.tokens.empty()) return refuse(i, "no tokens");
    if (Status st = detail::check_token_ids(e.tokens, V); !st.is_ok()) return refuse(i, st.message());
    T += e.tokens.size();
    any_logits = any_logits || e.logits;
  }
  if (any_logits && logits == nullptr) return invalid_argument("forward: logits output is null");
  if (logits) logits->clear();
  if (T == 0) return Status::ok();

  const auto t_forward = std::chrono::steady_clock::now();
  Session::Scratch& s = *scratch_;
  s.placement.clear();
  s.logit_rows.clear();
  tokens_.clear();
  for (const BatchEntry& e : entries) {
    KvCache& cache = e.session->cache_;
    cache.ensure_room(e.tokens.size());
    s.placement.append(&cache, cache.length(), e.tokens.size());
    tokens_.insert(tokens_.end(), e.tokens.begin(), e.tokens.end());
    if (e.logits) s.logit_rows.push_back(tokens_.size() - 1);
  }
  const detail::BlockContext ctx{model_, pool_, s, T, s.placement, profile_};
  SUBMOE_RETURN_IF_ERROR(detail::forward_rows(ctx, tokens_, RoutingObserver{}, s.logit_rows, logits));
  for (const BatchEntry& e : entries) e.session->cache_.advance(e.tokens.size());
  if (profile_) profile_->add_forward(T, ScopedOpTimer::elapsed_ns(t_forward));
  return Status::ok();
}

}  // namespace submoe::model
