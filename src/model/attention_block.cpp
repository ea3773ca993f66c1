// Attention (doc §1.4 and the per-architecture variants): projections with
// optional biases, QK-norm per head (Qwen3) or over the whole projection (OLMoE),
// clip_qkv, RoPE, grouped-query attention over the KV cache with a causal and
// optional sliding-window mask, fp32 softmax (with GPT-OSS's per-head sink
// column where the layer has sinks), output projection.
#include <cmath>
#include <optional>

#include "attention_kernels.h"
#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model::detail {
namespace {

// Below this many multiply-adds the (token, head) loop stays on one thread.
constexpr size_t kParallelMinWork = size_t{1} << 16;

void qk_norm_and_clip(const io::MoeModelConfig& c, const LayerWeights& L, Session::Scratch& s, size_t T) {
  const size_t D = static_cast<size_t>(c.head_dim);
  const size_t qw = static_cast<size_t>(c.num_attention_heads) * D, kw = static_cast<size_t>(c.num_key_value_heads) * D;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (c.qk_norm == io::QkNorm::kPerHead) {
    for (size_t i = 0; i < T * qw; i += D) rms_norm(&s.q[i], D, L.q_norm.data(), eps);
    for (size_t i = 0; i < T * kw; i += D) rms_norm(&s.k[i], D, L.k_norm.data(), eps);
  } else if (c.qk_norm == io::QkNorm::kWholeProjection) {
    for (size_t t = 0; t < T; ++t) {
      rms_norm(&s.q[t * qw], qw, L.q_norm.data(), eps);
      rms_norm(&s.k[t * kw], kw, L.k_norm.data(), eps);
    }
  }
  if (c.clip_qkv) {
    const float limit = static_cast<float>(*c.clip_qkv);
    clamp_all(s.q.data(), T * qw, limit);
    clamp_all(s.k.data(), T * kw, limit);
    clamp_all(s.v.data(), T * kw, limit);
  }
}

}  // namespace

void attention_block(const BlockContext& ctx, size_t layer) {
  const MoeModel& m = ctx.model;
  const io::MoeModelConfig& c = m.config();
  const LayerWeights& L = m.weights().layers[layer];
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens;
  const RowPlacement& rows = ctx.rows;
  const size_t D = static_cast<size_t>(c.head_dim), nH = static_cast<size_t>(c.num_attention_heads),
               nKV = static_cast<size_t>(c.num_key_value_heads);
  const size_t qw = nH * D, kw = nKV * D, half = D / 2;

  {
    ScopedOpTimer timer(ctx.profile, OpClass::kAttnProj);
    L.q->forward(s.x.data(), T, s.q.data(), ctx.pool);
    L.k->forward(s.x.data(), T, s.k.data(), ctx.pool);
    L.v->forward(s.x.data(), T, s.v.data(), ctx.pool);
    if (!L.q_bias.empty()) add_rows(s.q.data(), L.q_bias.data(), T, qw);
    if (!L.k_bias.empty()) add_rows(s.k.data(), L.k_bias.data(), T, kw);
    if (!L.v_bias.empty()) add_rows(s.v.data(), L.v_bias.data(), T, kw);
  }
  std::optional<ScopedOpTimer> core(std::in_place, ctx.profile, OpClass::kAttnCore);
  qk_norm_and_clip(c, L, s, T);

  for (size_t t = 0; t < T; ++t) {
    Rope::rotate(&s.q[t * qw], nH, D, static_cast<int>(D), &s.cos[t * half], &s.sin[t * half]);
    Rope::rotate(&s.k[t * kw], nKV, D, static_cast<int>(D), &s.cos[t * half], &s.sin[t * half]);
    for (size_t h = 0; h < nKV; ++h) {
      std::copy_n(&s.k[t * kw + h * D], D, rows.cache[t]->key_row(layer, h, rows.position[t]));
      std::copy_n(&s.v[t * kw + h * D], D, rows.cache[t]->value_row(layer, h, rows.position[t]));
    }
  }

  const size_t group = nH / nKV;
  const size_t window = m.window(layer);
  const float scaling = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const AttentionKernels& kernels = attention_kernels();
  const float* sinks = L.attention_sinks.empty() ? nullptr : L.attention_sinks.data();
  auto run = [&](size_t begin, size_t end, int thread) {
    std::vector<float>& scores = s.threads[static_cast<size_t>(thread)].scores;
    if (scores.size() < rows.max_position + 1) scores.resize(rows.max_position + 1);
    for (size_t i = begin; i < end; ++i) {
      // Zig-zag token order: later tokens attend to more keys, so each contiguous
      // chunk of work items takes early and late tokens alike.
      const size_t u = i / nH, h = i % nH, kvh = h / group;
      const size_t t = (u % 2 == 0) ? u / 2 : T - 1 - u / 2;
      const size_t pos = rows.position[t];
      const KvCache& cache = *rows.cache[t];
      const size_t first = (window > 0 && pos + 1 > window) ? pos + 1 - window : 0;
      attend_one_head(kernels, &s.q[t * qw + h * D], cache.keys(layer, kvh), cache.values(layer, kvh), first, pos, D,
                      scaling, scores.data(), &s.attn[t * qw + h * D], sinks != nullptr ? sinks + h : nullptr);
    }
  };
  const size_t work = T * nH * (rows.max_position + 1) * D;
  if (ctx.pool != nullptr && work >= kParallelMinWork)
    ctx.pool->parallel_for(T * nH, 1, run);
  else
    run(0, T * nH, 0);

  core.reset();
  ScopedOpTimer timer(ctx.profile, OpClass::kAttnProj);
  L.o->forward(s.attn.data(), T, s.block.data(), ctx.pool);
  if (!L.o_bias.empty()) add_rows(s.block.data(), L.o_bias.data(), T, static_cast<size_t>(c.hidden_size));
}

}  // namespace submoe::model::detail
