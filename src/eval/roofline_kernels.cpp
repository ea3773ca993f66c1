// Fused-kernel throughput per codec for the roofline: the ternary dictionary
// kernels (qmoe, tunstall) through the shared gemv benchmark harness, and the
// dense bf16 GEMV on a working set of the same harness, at batch 1 and 32.
#include <algorithm>
#include <chrono>
#include <random>

#include "submoe/core/cpu_features.h"
#include "submoe/core/thread_pool.h"
#include "submoe/eval/roofline.h"
#include "submoe/kernels/gemv_bench.h"

namespace submoe::eval {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kBatches[] = {1, 32};

struct WorkingSetPlan {
  uint32_t min_matrices = 4;
  double llc_factor = 2.0;
};

WorkingSetPlan plan(const RooflineOptions& o) {
  WorkingSetPlan p;
  if (o.quick) {
    p.min_matrices = 2;
    p.llc_factor = 0;  // cache-resident on purpose: --quick checks the plumbing
  }
  return p;
}

KernelRoofline from_timing(const std::string& codec, const kernels::GemvTiming& t, uint32_t batch, uint32_t rows,
                           uint32_t cols, uint32_t threads, double bits) {
  KernelRoofline k;
  k.codec = codec;
  k.kernel = t.kernel;
  k.batch = batch;
  k.rows = rows;
  k.cols = cols;
  k.threads = threads;
  k.median_us = t.median_us;
  k.gweights_per_s = t.median_us > 0 ? static_cast<double>(rows) * cols / (t.median_us * 1e3) : 0;
  k.bits_per_weight = bits;
  k.matrices = t.matrices;
  k.working_set_bytes = static_cast<uint64_t>(t.matrices) * t.bytes_per_matrix;
  const uint64_t llc = kernels::last_level_cache_bytes();
  k.cold = llc > 0 && k.working_set_bytes > llc;
  return k;
}

Result<std::vector<KernelRoofline>> dense_bf16(const RooflineOptions& o, ThreadPool& pool) {
  using namespace kernels;
  const WorkingSetPlan p = plan(o);
  const size_t bytes = size_t{o.kernel_rows} * o.kernel_cols * 2;
  const uint32_t count = working_set_matrices(bytes, p.min_matrices, p.llc_factor);
  const DenseWorkingSet ws = make_dense_working_set(DenseType::kBF16, o.kernel_rows, o.kernel_cols, count, o.seed);
  const DenseGemvKernels& dk = dense_gemv_kernels(best_isa());
  std::vector<float> x(size_t{32} * o.kernel_cols), y(size_t{32} * o.kernel_rows);
  std::mt19937 rng(static_cast<uint32_t>(o.seed));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& v : x) v = nd(rng);
  std::vector<KernelRoofline> out;
  for (uint32_t batch : kBatches) {
    std::vector<double> us;
    const uint32_t warmup = std::min<uint32_t>(2, count);
    for (uint32_t i = 0; i < warmup + o.kernel_iters; ++i) {
      const auto t0 = Clock::now();
      SUBMOE_RETURN_IF_ERROR(
          gemm_dense(dk, ws.view(i % count), x.data(), o.kernel_cols, batch, {y.data(), o.kernel_rows}, &pool));
      if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    GemvTiming t;
    t.kernel = dense_kernel_name(dk, DenseType::kBF16);
    t.median_us = us[us.size() / 2];
    t.matrices = count;
    t.bytes_per_matrix = bytes;
    out.push_back(from_timing("bf16", t, batch, o.kernel_rows, o.kernel_cols,
                              static_cast<uint32_t>(pool.num_threads()), 16.0));
  }
  return out;
}

}  // namespace

Result<std::vector<KernelRoofline>> measure_kernels(const RooflineOptions& o, const RooflineProgress& progress) {
  if (o.kernel_rows == 0 || o.kernel_cols == 0 || o.kernel_iters == 0) {
    return invalid_argument("roofline: kernel shape and iterations must be positive");
  }
  ThreadPool pool(o.compute_threads > 0 ? o.compute_threads : hardware_threads());
  const uint32_t threads = static_cast<uint32_t>(pool.num_threads());
  const WorkingSetPlan p = plan(o);
  std::vector<KernelRoofline> out;
  for (ternary::DictKind code : {ternary::DictKind::kQmoe, ternary::DictKind::kTunstall}) {
    kernels::GemvBenchConfig c;
    c.rows = o.kernel_rows;
    c.cols = o.kernel_cols;
    c.batch = 32;  // the harness also times batch 1 when batch > 1
    c.code = code;
    c.iters = o.kernel_iters;
    c.min_matrices = p.min_matrices;
    c.llc_factor = p.llc_factor;
    c.dense = false;
    c.isa = best_isa();
    c.seed = o.seed;
    const std::string name = ternary::dict_kind_name(code);
    if (progress) progress("kernel " + name + " " + std::to_string(c.rows) + "x" + std::to_string(c.cols));
    SUBMOE_ASSIGN_OR_RETURN(kernels::GemvBenchResult r, kernels::run_gemv_bench(c, &pool));
    const double bits = r.ledger.bits_per_weight;
    out.push_back(from_timing(name, r.compressed_batch1, 1, c.rows, c.cols, threads, bits));
    out.push_back(from_timing(name, r.compressed, 32, c.rows, c.cols, threads, bits));
  }
  if (progress) progress("kernel bf16 dense");
  SUBMOE_ASSIGN_OR_RETURN(std::vector<KernelRoofline> dense, dense_bf16(o, pool));
  out.insert(out.end(), dense.begin(), dense.end());
  return out;
}

}  // namespace submoe::eval
