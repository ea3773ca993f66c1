// Per-thread workspace of the compressed LinearOps. LinearOp::forward is const
// and may run on many threads at once (experts in parallel, sessions sharing a
// model), while the kernels take a caller workspace and allocate nothing: each
// thread keeps one grow-only buffer, so steady-state forwards allocate nothing.
#pragma once

#include <cstddef>
#include <span>

namespace submoe::runtime::detail {

// At least `floats` floats, valid on this thread until its next call.
std::span<float> thread_workspace(size_t floats);

// Below this many multiply-adds a thread hand-off costs more than it saves
// (the dense LinearOp's measured threshold, src/model/dense_linear_op.cpp).
inline constexpr size_t kParallelMinMacs = size_t{1} << 17;

}  // namespace submoe::runtime::detail
