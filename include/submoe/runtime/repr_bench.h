// A benchmark working set of any registered representation (`bench gemv
// --repr NAME`): one synthetic matrix encoded the way `compress --method rtn`
// encodes (no calibration), copied into `count` distinct allocations, each run
// through the representation's fused LinearOp, so the timing covers what
// run/eval execute (rotations included), whatever the codec.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "submoe/core/status.h"
#include "submoe/kernels/gemv_bench.h"
#include "submoe/runtime/compressed_linear.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {

struct ReprBenchOptions {
  ReprOptions repr;             // name (registry name or alias) and its options
  uint32_t rows = 2080;
  uint32_t cols = 6144;
  uint32_t min_matrices = 64;   // working set: at least this many copies ...
  double llc_factor = 2.0;      // ... and this many times the last-level cache
  uint64_t seed = 1;            // of the N(0, 0.02^2) weights
  ExecutionMode mode = ExecutionMode::kFused;  // the ops' execution mode (fused, fused-bf16, fused-int8)
};

// The codec from the registry (an unknown name or a refused option is an
// error naming it), the encoded matrix, its copies and their ops. Progress
// (codebook training, encoding, copies) goes to `progress`.
Result<std::shared_ptr<const kernels::ExternalBenchSet>> make_repr_bench_set(
    const ReprBenchOptions& options, const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace submoe::runtime
