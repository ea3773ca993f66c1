// Multi-head latent attention (DeepSeek-V2/V3, doc §6.3) over a latent KV cache.
//
// The cache row of a position is [RMSNorm(c) | RoPE(k_pe)]: the compressed
// latent (kv_lora_rank) and the one RoPE key all heads share
// (qk_rope_head_dim), 576 floats per token per layer for DeepSeek-V3 instead of
// the 128 x (192 + 128) of explicit keys and values. The up-projection kv_b_proj
// is absorbed rather than applied per step: head h's key on the latent is
// W_uk[h] c, so q_nope . (W_uk[h] c) = (W_uk[h]^T q_nope) . c, and its output
// sum_j p_j W_uv[h] c_j = W_uv[h] (sum_j p_j c_j). Each query is mapped once
// into latent space, scored against the cached rows directly, and the
// probability-weighted latent is mapped to v_head_dim once per head. Applying
// kv_b_proj per step instead would re-expand every cached position for every
// new token (O(positions x heads x (nope + v) x kv_lora_rank) per step): the
// absorbed form costs O(heads x (nope + v) x kv_lora_rank) per token plus the
// attention over 576-wide rows. It reassociates fp32 sums relative to
// transformers' explicit keys; the parity tests bound the difference.
#include <cmath>
#include <optional>

#include "attention_kernels.h"
#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model::detail {
namespace {

// transformers hard-codes eps 1e-6 for q_a_layernorm and kv_a_layernorm
// (DeepseekV3RMSNorm's default), whatever rms_norm_eps says.
constexpr float kLatentNormEps = 1e-6f;
constexpr size_t kParallelMinWork = size_t{1} << 16;

struct MlaDims {
  size_t heads, nope, rope, v, rank;  // rank = kv_lora_rank
  size_t q_head() const { return nope + rope; }
  size_t row() const { return rank + rope; }
};

MlaDims dims_of(const io::MoeModelConfig& c) {
  return {static_cast<size_t>(c.num_attention_heads), static_cast<size_t>(c.qk_nope_head_dim),
          static_cast<size_t>(c.qk_rope_head_dim), static_cast<size_t>(c.v_head_dim),
          static_cast<size_t>(c.kv_lora_rank)};
}

void rotate(const io::MoeModelConfig& c, float* x, size_t heads, size_t stride, const float* cos, const float* sin) {
  const int dim = static_cast<int>(c.qk_rope_head_dim);
  if (c.rope_interleave)
    Rope::rotate_interleaved(x, heads, stride, dim, cos, sin);
  else
    Rope::rotate(x, heads, stride, dim, cos, sin);
}

// q [T, nH*(nope+rope)] and the latent rows [T, rank+rope] of the new tokens,
// RoPE applied to both rope parts; the latent rows are written to the caches.
void project(const BlockContext& ctx, size_t layer, const MlaDims& d) {
  const io::MoeModelConfig& c = ctx.model.config();
  const MlaWeights& M = ctx.model.weights().layers[layer].mla;
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens;
  if (M.q_a) {
    const size_t ql = static_cast<size_t>(*c.q_lora_rank);
    M.q_a->forward(s.x.data(), T, s.q_latent.data(), ctx.pool);
    if (!M.q_a_bias.empty()) add_rows(s.q_latent.data(), M.q_a_bias.data(), T, ql);
    for (size_t t = 0; t < T; ++t) rms_norm(&s.q_latent[t * ql], ql, M.q_a_norm.data(), kLatentNormEps);
    M.q_b->forward(s.q_latent.data(), T, s.q.data(), ctx.pool);
  } else {
    M.q->forward(s.x.data(), T, s.q.data(), ctx.pool);
  }
  M.kv_a->forward(s.x.data(), T, s.kv_latent.data(), ctx.pool);
  if (!M.kv_a_bias.empty()) add_rows(s.kv_latent.data(), M.kv_a_bias.data(), T, d.row());
  const size_t half = static_cast<size_t>(c.head_dim) / 2;
  for (size_t t = 0; t < T; ++t) {
    float* latent = &s.kv_latent[t * d.row()];
    rms_norm(latent, d.rank, M.kv_a_norm.data(), kLatentNormEps);
    rotate(c, latent + d.rank, 1, d.row(), &s.cos[t * half], &s.sin[t * half]);
    rotate(c, &s.q[t * d.heads * d.q_head() + d.nope], d.heads, d.q_head(), &s.cos[t * half], &s.sin[t * half]);
    std::copy_n(latent, d.row(), ctx.rows.cache[t]->key_row(layer, 0, ctx.rows.position[t]));
  }
}

// query [rank + rope] = [W_uk[h]^T q_nope | q_pe] for one head: the nope
// rows of W_uk[h] weighted by q_nope, which is the kernels' value mix.
void absorb_query(const AttentionKernels& k, const float* kv_b, const float* q_head, const MlaDims& d, size_t h,
                  float* query) {
  k.mix(q_head, kv_b + h * (d.nope + d.v) * d.rank, d.nope, d.rank, query);
  std::copy_n(q_head + d.nope, d.rope, query + d.rank);
}

// out [v] = W_uv[h] mix[0, rank): one dot product per value row, the kernels'
// scores with scale 1.
void expand_value(const AttentionKernels& k, const float* kv_b, const float* mix, const MlaDims& d, size_t h,
                  float* out) {
  k.scores(mix, kv_b + (h * (d.nope + d.v) + d.nope) * d.rank, d.v, d.rank, 1.0f, out);
}

}  // namespace

void mla_attention_block(const BlockContext& ctx, size_t layer) {
  const io::MoeModelConfig& c = ctx.model.config();
  const LayerWeights& L = ctx.model.weights().layers[layer];
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens;
  const RowPlacement& rows = ctx.rows;
  const MlaDims d = dims_of(c);
  {
    ScopedOpTimer timer(ctx.profile, OpClass::kAttnProj);
    project(ctx, layer, d);
  }
  std::optional<ScopedOpTimer> core(std::in_place, ctx.profile, OpClass::kAttnCore);
  const float scaling =
      static_cast<float>(c.attention_scale_multiplier / std::sqrt(static_cast<double>(d.q_head())));
  const AttentionKernels& kernels = attention_kernels();
  const float* kv_b = L.mla.kv_b.data();
  auto run = [&](size_t begin, size_t end, int thread) {
    Session::Scratch::PerThread& ts = s.threads[static_cast<size_t>(thread)];
    if (ts.scores.size() < rows.max_position + 1) ts.scores.resize(rows.max_position + 1);
    ts.mla_query.resize(d.row());
    ts.mla_mix.resize(d.row());
    for (size_t i = begin; i < end; ++i) {
      // Zig-zag token order, as in attention_block: balanced chunks.
      const size_t u = i / d.heads, h = i % d.heads;
      const size_t t = (u % 2 == 0) ? u / 2 : T - 1 - u / 2;
      const float* latent_rows = rows.cache[t]->keys(layer, 0);
      absorb_query(kernels, kv_b, &s.q[(t * d.heads + h) * d.q_head()], d, h, ts.mla_query.data());
      attend_one_head(kernels, ts.mla_query.data(), latent_rows, latent_rows, 0, rows.position[t], d.row(), scaling,
                      ts.scores.data(), ts.mla_mix.data());
      expand_value(kernels, kv_b, ts.mla_mix.data(), d, h, &s.attn[(t * d.heads + h) * d.v]);
    }
  };
  const size_t work = T * d.heads * ((rows.max_position + 1) * d.row() + (d.nope + d.v) * d.rank);
  if (ctx.pool != nullptr && work >= kParallelMinWork)
    ctx.pool->parallel_for(T * d.heads, 1, run);
  else
    run(0, T * d.heads, 0);
  core.reset();
  ScopedOpTimer timer(ctx.profile, OpClass::kAttnProj);
  L.o->forward(s.attn.data(), T, s.block.data(), ctx.pool);
  if (!L.o_bias.empty()) add_rows(s.block.data(), L.o_bias.data(), T, static_cast<size_t>(c.hidden_size));
}

}  // namespace submoe::model::detail
