// The routed experts of one sparse layer (doc §1.6): routing through the
// decoder layer's router, each active expert run on its tokens (fetched through
// the expert provider, in parallel where it pays), y = sum_j w_j Expert_j(x)
// accumulated in ascending expert order; and the SwiGLU every MLP uses.
#include <atomic>
#include <chrono>
#include <optional>
#include <cstring>

#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model::detail {
namespace {

// Experts smaller than this (multiply-adds for their tokens) run one per thread
// rather than each split across all threads: a tiny expert cannot amortise a
// thread hand-off per projection, and at batch 1 the k experts are independent.
constexpr size_t kExpertParallelMaxMacs = size_t{1} << 21;
// Prefill (experts with several tokens) with at least this many active experts
// per thread: experts of any size run one per thread as well, so the serial
// parts of each op (activation layout, int8 quantization, gather, SwiGLU) run
// in parallel and no op hands off to the pool. On the synth Qwen3-MoE
// (ternary experts and dense, 282-token prompt, 2 threads) prefill went from
// 2.75 to 2.27 ms per token; batch-1 decode keeps splitting each op's rows.
constexpr size_t kExpertsPerThread = 2;

// Runs one expert on its tokens (gathered from s.x) into expert_out rows.
void run_expert(const BlockContext& ctx, size_t layer, const ExpertOps& ops, size_t e,
                Session::Scratch::PerThread& ts, ThreadPool* pool) {
  Session::Scratch& s = ctx.s;
  const size_t H = static_cast<size_t>(ctx.model.config().hidden_size);
  const size_t begin = s.groups.offsets[e], n = s.groups.count(e);
  const auto t0 = ctx.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  ts.xg.resize(n * H);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(&ts.xg[i * H], &s.x[s.groups.tokens[begin + i] * H], H * sizeof(float));
  gated_mlp(routed_expert_mlp(ctx.model, layer, e), *ops.gate, *ops.up, *ops.down, ts.xg.data(), n,
            &s.expert_out[begin * H], ts.g, ts.u, pool);
  if (ctx.profile) ctx.profile->add_expert_op(*ops.gate, ScopedOpTimer::elapsed_ns(t0));
}

// Pre-gating: the next sparse layer's router on the current residual stream
// s.h (after this layer's attention, before its FFN), normalised with that
// layer's post-attention norm, as that layer will see it less this layer's FFN
// and its own attention. The union of its top-k choices over the rows goes to
// the provider, the per-token choices to the prediction observer. Nothing for
// the last sparse layer (the next token is unknown).
void predict_next_layer(const BlockContext& ctx, size_t layer) {
  const MoeModel& m = ctx.model;
  const io::MoeModelConfig& c = m.config();
  const auto& layers = m.weights().layers;
  size_t next = layer + 1;
  while (next < layers.size() && !layers[next].sparse) ++next;
  if (next >= layers.size()) return;
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens, H = static_cast<size_t>(c.hidden_size);
  s.pregate_x.resize(T * H);
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (size_t t = 0; t < T; ++t)
    rms_norm_to(&s.h[t * H], &s.pregate_x[t * H], H, layers[next].post_attention_norm.data(), eps);
  route_layer(m, next, s.pregate_x.data(), T, &s.pregate_logits, &s.pregate_routing, ctx.pool);
  // The union of the rows' picks, ascending, without a per-call buffer.
  const size_t picks = std::min(s.pregate_routing.experts.size(), T * static_cast<size_t>(c.num_experts_per_tok));
  s.predicted.assign(s.pregate_routing.experts.begin(), s.pregate_routing.experts.begin() + static_cast<ptrdiff_t>(picks));
  std::sort(s.predicted.begin(), s.predicted.end());
  s.predicted.erase(std::unique(s.predicted.begin(), s.predicted.end()), s.predicted.end());
  if (ctx.prediction_observer) (*ctx.prediction_observer)(static_cast<int>(next), ctx.rows.position[0], s.pregate_routing);
  if (m.experts().wants_predictions()) m.experts().predict(static_cast<int>(next), s.predicted);
}

}  // namespace

Status routed_experts_block(const BlockContext& ctx, size_t layer, const RoutingObserver& observer) {
  const MoeModel& m = ctx.model;
  const io::MoeModelConfig& c = m.config();
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens, H = static_cast<size_t>(c.hidden_size);
  const size_t E = static_cast<size_t>(c.num_experts), k = static_cast<size_t>(c.num_experts_per_tok);

  std::optional<ScopedOpTimer> phase(std::in_place, ctx.profile, OpClass::kRouter);
  route_layer(m, layer, s.x.data(), T, &s.router_logits, &s.routing, ctx.pool);
  if (observer) observer(static_cast<int>(layer), ctx.rows.position[0], s.routing);
  group_by_expert(s.routing, E, &s.groups);
  s.active.clear();
  size_t max_count = 0;
  for (size_t e = 0; e < E; ++e) {
    if (s.groups.count(e) == 0) continue;
    s.active.push_back(static_cast<int>(e));
    max_count = std::max(max_count, s.groups.count(e));
  }

  ExpertProvider& provider = m.experts();
  phase.emplace(ctx.profile, OpClass::kExpertFetch);
  SUBMOE_RETURN_IF_ERROR(provider.begin_layer(static_cast<int>(layer), s.active).with_context(
      "layer " + std::to_string(layer) + " experts"));
  if (provider.wants_predictions() || ctx.prediction_observer) {
    phase.emplace(ctx.profile, OpClass::kRouter);
    predict_next_layer(ctx, layer);
  }
  phase.emplace(ctx.profile, OpClass::kExperts);
  s.expert_out.resize(T * k * H);
  const size_t threads = ctx.pool ? static_cast<size_t>(ctx.pool->num_threads()) : 1;
  const ExpertOps first = provider.ops(static_cast<int>(layer), s.active.front());
  const size_t expert_macs =
      max_count * (2 * first.gate->out_features() * H + first.down->out_features() * first.down->in_features());
  if (threads > 1 && s.active.size() > 1 &&
      (expert_macs < kExpertParallelMaxMacs || (max_count > 1 && s.active.size() >= kExpertsPerThread * threads))) {
    std::atomic<size_t> next{0};
    ctx.pool->run_on_all([&](int thread) {
      auto& ts = s.threads[static_cast<size_t>(thread)];
      for (size_t i = next.fetch_add(1); i < s.active.size(); i = next.fetch_add(1)) {
        const int e = s.active[i];
        run_expert(ctx, layer, provider.ops(static_cast<int>(layer), e), static_cast<size_t>(e), ts, nullptr);
      }
    });
  } else {
    for (int e : s.active)
      run_expert(ctx, layer, provider.ops(static_cast<int>(layer), e), static_cast<size_t>(e), s.threads[0], ctx.pool);
  }
  provider.end_layer(static_cast<int>(layer));
  phase.emplace(ctx.profile, OpClass::kMoeCombine);

  // y[t] = sum over experts in ascending id of w * Expert(x[t]), as HF's index_add_.
  std::fill(s.block.begin(), s.block.begin() + static_cast<ptrdiff_t>(T * H), 0.0f);
  for (int e : s.active) {
    const size_t begin = s.groups.offsets[static_cast<size_t>(e)], n = s.groups.count(static_cast<size_t>(e));
    add_expert_rows(&s.expert_out[begin * H], std::span(s.groups.tokens).subspan(begin, n),
                    std::span(s.groups.slots).subspan(begin, n), s.routing.weights, H, s.block.data());
  }
  return Status::ok();
}

void gated_activation(const ExpertMlp& mlp, const LinearOp& gate, const LinearOp& up, const float* x, size_t n,
                      std::vector<float>& g, std::vector<float>& u, ThreadPool* pool) {
  const size_t inner = gate.out_features();
  g.resize(n * inner);
  u.resize(n * inner);
  gate.forward(x, n, g.data(), pool);
  up.forward(x, n, u.data(), pool);
  if (mlp.gate_bias != nullptr) add_rows(g.data(), mlp.gate_bias, n, inner);
  if (mlp.up_bias != nullptr) add_rows(u.data(), mlp.up_bias, n, inner);
  if (mlp.clamped)
    clamped_swiglu_mul(g.data(), u.data(), n * inner, mlp.alpha, mlp.limit);
  else
    silu_mul(g.data(), u.data(), n * inner);
}

void gated_mlp(const ExpertMlp& mlp, const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x,
               size_t n, float* out, std::vector<float>& g, std::vector<float>& u, ThreadPool* pool) {
  gated_activation(mlp, gate, up, x, n, g, u, pool);
  down.forward(g.data(), n, out, pool);
  if (mlp.down_bias != nullptr) add_rows(out, mlp.down_bias, n, down.out_features());
}

void swiglu(const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x, size_t n, float* out,
            std::vector<float>& g, std::vector<float>& u, ThreadPool* pool) {
  gated_mlp(ExpertMlp{}, gate, up, down, x, n, out, g, u, pool);
}

ExpertMlp routed_expert_mlp(const MoeModel& model, size_t layer, size_t expert) {
  const io::MoeModelConfig& c = model.config();
  const LayerWeights& L = model.weights().layers[layer];
  ExpertMlp mlp;
  mlp.clamped = c.expert_activation == io::ExpertActivation::kClampedSwiGlu;
  mlp.alpha = static_cast<float>(c.swiglu_alpha);
  mlp.limit = static_cast<float>(c.swiglu_limit);
  if (!L.expert_gate_bias.empty()) {
    const size_t I = static_cast<size_t>(c.moe_intermediate_size), H = static_cast<size_t>(c.hidden_size);
    mlp.gate_bias = &L.expert_gate_bias[expert * I];
    mlp.up_bias = &L.expert_up_bias[expert * I];
    mlp.down_bias = &L.expert_down_bias[expert * H];
  }
  return mlp;
}

}  // namespace submoe::model::detail
