// Google Benchmark: dense f32, dense bf16 and the compressed ternary kernel on
// working sets larger than the last-level cache (the harness of `submoe bench
// gemv`, src/kernels/gemv_bench.cpp). Each compressed benchmark also reports
// ratio_vs_bf16 against dense bf16 timed in the same run on the same shape,
// batch and thread count. Arguments: rows, cols, batch, threads.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>
#include <tuple>

#include "submoe/core/thread_pool.h"
#include "submoe/kernels/gemv_bench.h"

namespace {

using namespace submoe;
using namespace submoe::kernels;

ThreadPool* pool_for(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return p.get();
}

// One dense working set alive at a time (64 x 2080 x 6144 f32 is 3.3 GB).
const DenseWorkingSet& dense_set(DenseType type, uint32_t rows, uint32_t cols) {
  static std::unique_ptr<DenseWorkingSet> set;
  if (!set || set->type != type || set->rows != rows || set->cols != cols) {
    set.reset();
    const size_t bytes = static_cast<size_t>(rows) * cols * (type == DenseType::kF32 ? 4 : 2);
    set = std::make_unique<DenseWorkingSet>(
        make_dense_working_set(type, rows, cols, working_set_matrices(bytes, 64, 2.0), 1));
  }
  return *set;
}

struct Compressed {
  std::unique_ptr<ternary::TernaryDictionary> dict;
  TernaryKernelTable table;
  TernaryWorkingSet set;
};

const Compressed& compressed_set(uint32_t rows, uint32_t cols) {
  static std::unique_ptr<Compressed> c;
  if (!c || c->set.rows != rows || c->set.cols != cols) {
    c.reset();
    auto fresh = std::make_unique<Compressed>();
    fresh->dict = std::make_unique<ternary::TernaryDictionary>(ternary::build_qmoe_dictionary().value());
    fresh->table = build_ternary_kernel_table(fresh->dict->entries()).value();
    auto probe = make_ternary_working_set(*fresh->dict, rows, cols, 0.885, 1, 1, 1, nullptr).value();
    const uint32_t count = working_set_matrices(probe.bytes_per_matrix(), 64, 2.0);
    fresh->set = make_ternary_working_set(*fresh->dict, rows, cols, 0.885, count, 2, 1, pool_for(2)).value();
    c = std::move(fresh);
  }
  return *c;
}

struct Shape {
  uint32_t rows, cols, batch;
  int threads;
};

Shape shape_of(const benchmark::State& st) {
  return {static_cast<uint32_t>(st.range(0)), static_cast<uint32_t>(st.range(1)), static_cast<uint32_t>(st.range(2)),
          static_cast<int>(st.range(3))};
}

std::vector<float> activations(const Shape& s) { return std::vector<float>(static_cast<size_t>(s.batch) * s.cols, 0.5f); }

// Median microseconds of dense bf16 for a shape (measured once, cached), the
// baseline of ratio_vs_bf16.
double bf16_baseline_us(const Shape& s) {
  static std::map<std::tuple<uint32_t, uint32_t, uint32_t, int>, double> cache;
  const auto key = std::make_tuple(s.rows, s.cols, s.batch, s.threads);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const DenseWorkingSet& ws = dense_set(DenseType::kBF16, s.rows, s.cols);
  const std::vector<float> x = activations(s);
  std::vector<float> y(static_cast<size_t>(s.batch) * s.rows);
  std::vector<double> us;
  for (size_t i = 0; i < 60; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)gemm_dense(best_dense_gemv_kernels(), ws.view(i % ws.storage.size()), x.data(), s.cols, s.batch,
                     OutputView{y.data(), s.rows}, pool_for(s.threads));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return cache[key] = us[us.size() / 2];
}

void run_dense(benchmark::State& st, DenseType type) {
  const Shape s = shape_of(st);
  const DenseWorkingSet& ws = dense_set(type, s.rows, s.cols);
  const std::vector<float> x = activations(s);
  std::vector<float> y(static_cast<size_t>(s.batch) * s.rows);
  size_t i = 0;
  for (auto _ : st) {
    Status status = gemm_dense(best_dense_gemv_kernels(), ws.view(i++ % ws.storage.size()), x.data(), s.cols,
                               s.batch, OutputView{y.data(), s.rows}, pool_for(s.threads));
    if (!status.is_ok()) st.SkipWithError(status.to_string().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["gweights_per_s"] =
      benchmark::Counter(static_cast<double>(s.rows) * s.cols * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(dense_kernel_name(best_dense_gemv_kernels(), type));
}

void BM_DenseF32(benchmark::State& st) { run_dense(st, DenseType::kF32); }
void BM_DenseBf16(benchmark::State& st) { run_dense(st, DenseType::kBF16); }

void BM_Compressed(benchmark::State& st) {
  const Shape s = shape_of(st);
  const double baseline = bf16_baseline_us(s);
  const Compressed& c = compressed_set(s.rows, s.cols);
  const TernaryGemvKernels& k = best_ternary_gemv_kernels();
  const std::vector<float> x = activations(s);
  std::vector<float> y(static_cast<size_t>(s.batch) * s.rows);
  std::vector<float> ws(ternary_gemm_workspace_floats(s.cols, s.batch));
  const ActivationsView xv = ActivationsView::f32(x.data(), s.batch, s.cols);
  size_t i = 0;
  std::vector<double> us;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    Status status = gemm_ternary_dict(k, c.table, c.set.view(i++ % c.set.copies.size()), xv,
                                      OutputView{y.data(), s.rows}, ws, pool_for(s.threads));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!status.is_ok()) st.SkipWithError(status.to_string().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  std::sort(us.begin(), us.end());
  st.counters["gweights_per_s"] =
      benchmark::Counter(static_cast<double>(s.rows) * s.cols * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["median_us"] = us.empty() ? 0.0 : us[us.size() / 2];
  st.counters["bf16_median_us"] = baseline;
  st.counters["ratio_vs_bf16"] = us.empty() || baseline <= 0 ? 0.0 : us[us.size() / 2] / baseline;
  st.SetLabel(ternary_kernel_name(k, c.table, s.batch));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (auto [rows, cols] : {std::pair<int, int>{2080, 6144}, {6144, 2080}}) {
    for (int batch : {1, 8}) {
      for (int threads : {1, 2}) b->Args({rows, cols, batch, threads});
    }
  }
  b->ArgNames({"rows", "cols", "batch", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_DenseF32)->Apply(shapes);
BENCHMARK(BM_DenseBf16)->Apply(shapes);
BENCHMARK(BM_Compressed)->Apply(shapes);

}  // namespace
