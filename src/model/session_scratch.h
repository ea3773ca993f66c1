// Buffers a Session reuses across forward calls (grown, never shrunk).
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "submoe/core/thread_pool.h"
#include "submoe/model/moe_model.h"

namespace submoe::model {

namespace detail {
// Where each of the T rows of a forward belongs: its sequence's KV cache and its
// position there. One session's forward has one cache and consecutive positions;
// a batched forward (BatchForward) interleaves several sequences' rows.
struct RowPlacement {
  std::vector<KvCache*> cache;    // [T]
  std::vector<size_t> position;   // [T]
  size_t max_position = 0;        // the largest entry of position

  void clear() {
    cache.clear();
    position.clear();
    max_position = 0;
  }
  // Appends n rows of one sequence at positions first .. first+n-1 of `c`.
  void append(KvCache* c, size_t first, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      cache.push_back(c);
      position.push_back(first + i);
    }
    if (n > 0) max_position = std::max(max_position, first + n - 1);
  }
};

}  // namespace detail

struct Session::Scratch {
  std::vector<float> h;      // [T, H] residual stream
  std::vector<float> x;      // [T, H] normalised input of a block
  std::vector<float> block;  // [T, H] block output
  std::vector<float> q, k, v, attn;  // [T, nH*D], [T, nKV*D] x2, [T, nH*D]
  std::vector<float> cos, sin;       // [T, D/2]
  std::vector<float> q_latent;       // MLA: [T, q_lora_rank]
  std::vector<float> kv_latent;      // MLA: [T, kv_lora_rank + rope]
  std::vector<float> router_logits;  // [T, E]
  Routing routing;
  ExpertGroups groups;
  std::vector<int> active;           // experts with tokens, ascending
  std::vector<float> pregate_x;      // [T, H] pre-gating: the next sparse layer's router input
  std::vector<float> pregate_logits; // [T, E]
  Routing pregate_routing;
  std::vector<int> predicted;        // the next sparse layer's predicted experts, ascending
  std::vector<float> expert_out;     // [T*k, H] expert outputs in group order
  std::vector<float> shared_out;     // [T, H]
  std::vector<float> gate_scalar;    // [T]
  std::vector<float> final_x;        // [rows, H] for the lm_head
  detail::RowPlacement placement;    // each row's cache and position
  std::vector<size_t> logit_rows;    // rows whose logits are wanted
  struct PerThread {
    std::vector<float> scores;            // attention probabilities
    std::vector<float> xg, g, u;          // gathered expert input, gate, up
    std::vector<float> mla_query, mla_mix;  // MLA: absorbed query, attention-weighted latent
  };
  std::vector<PerThread> threads;

  // Scratch with one PerThread slot per thread of `pool` (one when null).
  static std::unique_ptr<Scratch> for_pool(ThreadPool* pool) {
    auto s = std::make_unique<Scratch>();
    s->threads.resize(pool ? static_cast<size_t>(pool->num_threads()) : 1);
    return s;
  }

  // Sizes the per-token buffers of one forward call of T tokens.
  void resize_for(const io::MoeModelConfig& c, size_t T) {
    const size_t H = static_cast<size_t>(c.hidden_size), D = static_cast<size_t>(c.head_dim);
    const size_t nH = static_cast<size_t>(c.num_attention_heads);
    size_t qw = nH * D, kw = static_cast<size_t>(c.num_key_value_heads) * D, aw = qw;
    if (c.attention == io::AttentionKind::kMla) {
      qw = nH * static_cast<size_t>(c.qk_nope_head_dim + c.qk_rope_head_dim);
      aw = nH * static_cast<size_t>(c.v_head_dim);
      kw = 0;
      q_latent.resize(T * static_cast<size_t>(c.q_lora_rank.value_or(0)));
      kv_latent.resize(T * static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim));
    }
    h.resize(T * H);
    x.resize(T * H);
    block.resize(T * H);
    q.resize(T * qw);
    attn.resize(T * aw);
    k.resize(T * kw);
    v.resize(T * kw);
    cos.resize(T * D / 2);
    sin.resize(T * D / 2);
  }
};

}  // namespace submoe::model
