// Pieces every kernel family's driver shares: the per-ISA table choice and the
// split of independent output rows over a thread pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/cpu_features.h"
#include "submoe/core/thread_pool.h"

namespace submoe::kernels::detail {

// The table of `isa` among a family's three tables.
template <typename Table>
const Table& table_for_isa(Isa isa, const Table& scalar, const Table& avx2, const Table& avx512) {
  switch (isa) {
    case Isa::kAvx512:
      return avx512;
    case Isa::kAvx2:
      return avx2;
    case Isa::kScalar:
      break;
  }
  return scalar;
}

// Runs fn(args, begin, end) over rows [0, rows): on the calling thread for small
// matrices or without a pool, else in blocks of `grain` rows (a multiple of the
// kernels' row tile) that the pool's threads take as they finish the previous
// one, so a thread slowed down by a busy neighbour does not hold up the call.
// Rows must be independent (each row's result does not depend on which thread
// computes it).
template <typename Fn, typename Args>
void run_rows(Fn fn, const Args& args, uint32_t rows, size_t grain, ThreadPool* pool) {
  if (pool == nullptr || pool->num_threads() <= 1 || rows < 2 * grain) {
    fn(args, 0, rows);
    return;
  }
  pool->parallel_for_dynamic(rows, grain, [&](size_t begin, size_t end, int) {
    fn(args, static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
  });
}

}  // namespace submoe::kernels::detail
