// The per-layer blocks of the forward pass, called by Session::forward.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "session_scratch.h"

namespace submoe::model::detail {

struct BlockContext {
  const MoeModel& model;
  ThreadPool* pool;
  Session::Scratch& s;
  size_t num_tokens;      // T
  const RowPlacement& rows;
  OpProfile* profile = nullptr;  // null: not profiling
};

// s.block = Attn(s.x) for layer `layer`; writes each row's new key and value at
// its position of its cache (room must exist) before any row attends, so rows of
// one sequence see each other causally.
void attention_block(const BlockContext& ctx, size_t layer);

// The whole forward over T rows placed by `rows` (room in every cache must
// exist): embedding and RoPE angles, every layer, and the logits of the rows
// listed in `logit_rows` into logits [logit_rows.size(), V]. Caches are not
// advanced. Token ids must have been checked.
Status forward_rows(const BlockContext& ctx, std::span<const int32_t> tokens, const RoutingObserver& observer,
                    std::span<const size_t> logit_rows, std::vector<float>* logits);

// kInvalidArgument naming the first token id outside [0, vocab).
Status check_token_ids(std::span<const int32_t> tokens, size_t vocab);

// s.block = FFN(s.x): the routed-expert block (plus shared expert) or a dense MLP.
Status ffn_block(const BlockContext& ctx, size_t layer, const RoutingObserver& observer);

// out[t] = down(silu(gate x[t]) * up x[t]) for n rows; g and u are scratch of n*I.
void swiglu(const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x, size_t n, float* out,
            std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);

}  // namespace submoe::model::detail
