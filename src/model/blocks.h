// The per-layer blocks of the forward pass, called by Session::forward.
#pragma once

#include "session_scratch.h"

namespace submoe::model::detail {

struct BlockContext {
  const MoeModel& model;
  ThreadPool* pool;
  Session::Scratch& s;
  size_t num_tokens;      // T
  size_t first_position;  // position of token 0
  OpProfile* profile = nullptr;  // null: not profiling
};

// s.block = Attn(s.x) for layer `layer`; writes the new keys/values at positions
// first_position .. first_position+T-1 of `cache` (room must exist).
void attention_block(const BlockContext& ctx, size_t layer, KvCache& cache);

// s.block = FFN(s.x): the routed-expert block (plus shared expert) or a dense MLP.
Status ffn_block(const BlockContext& ctx, size_t layer, const RoutingObserver& observer);

// out[t] = down(silu(gate x[t]) * up x[t]) for n rows; g and u are scratch of n*I.
void swiglu(const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x, size_t n, float* out,
            std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);

}  // namespace submoe::model::detail
