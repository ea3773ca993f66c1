// GPU benchmark of the ternary dictionary kernels against dense bf16 cuBLAS in
// the same run. For each shape (rows x cols: 2080x6144, 6144x2080, 4096x14336,
// i.i.d. ternary at p0 0.885, qmoe code) and batch (1, 8):
//   ternary f32x    compressed kernel, f32 activations
//   ternary bf16x   compressed kernel, bf16 activations
//   cublas bf16     cublasGemmEx, bf16 weights (the same decoded ternary matrix) and
//                   bf16 activations, f32 output and accumulation
// Cold weights: every kind cycles through copies of its matrix whose total size
// is at least 4x the L2 cache (the experts of an MoE layer do not stay in L2);
// the 512 KiB dictionary is shared and stays in L2, as designed.
// Reported per call: device time (cudaEvent around 20 back-to-back launches,
// median over iterations), us per token, Gweights/s (rows x cols / time), GB/s
// (weight representation + activations + outputs read or written once / time).
// After the Google Benchmark table a summary with ratios to cuBLAS is printed
// and, with --summary_out=PATH, written to PATH (and PATH.json).
// Without CUDA or without a device it says so and exits 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dict.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/cuda/cuda_device.h"
#include "submoe/kernels/cuda/ternary_dict_cuda.h"

#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace submoe;
using namespace submoe::kernels::cuda;

constexpr int kLaunchesPerSample = 20;
constexpr double kP0 = 0.885;

struct Shape {
  uint32_t rows;
  uint32_t cols;
};
const Shape kShapes[] = {{2080, 6144}, {6144, 2080}, {4096, 14336}};
const uint32_t kBatches[] = {1, 8};
constexpr uint32_t kMaxBatchBench = 8;

std::string shape_name(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

void die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "bench_cuda_ternary_dict: %s: %s\n", what.c_str(), s.to_string().c_str());
  std::exit(1);
}
template <typename T>
T value_or_die(Result<T> r, const std::string& what) {
  if (!r.is_ok()) die(what, r.status());
  return std::move(r).value();
}
void ok_or_die(const Status& s, const std::string& what) {
  if (!s.is_ok()) die(what, s);
}

// splitmix64: fast, good enough for i.i.d. test symbols.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

struct ShapeData {
  Shape shape{};
  double bits_per_weight = 0;  // codes + offsets + scales (dictionary shared, excluded)
  size_t compressed_bytes = 0;
  size_t dense_bytes = 0;
  std::vector<DeviceTernaryMatrix> compressed;  // copies
  std::vector<DeviceBuffer> dense;              // copies, bf16 rows x cols
  DeviceBuffer x_f32;                           // kMaxBatchBench x cols
  DeviceBuffer x_bf16;
  DeviceBuffer y;  // kMaxBatchBench x rows
  std::vector<float> y_check_ternary;  // batch-1 outputs for the sanity check
  std::vector<float> y_check_cublas;
};

struct Sample {
  std::string shape;
  uint32_t batch = 0;
  std::string kernel;
  double us = 0;
  double gweights = 0;
  double gbytes = 0;
};
std::vector<Sample> g_samples;

DeviceInfo g_device;
std::unique_ptr<ternary::TernaryDictionary> g_dict;
std::unique_ptr<DeviceTernaryDictionary> g_device_dict;
std::vector<std::unique_ptr<ShapeData>> g_data;

#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
cublasHandle_t g_cublas = nullptr;

void cublas_gemm(const ShapeData& d, const void* w, uint32_t batch, float* y) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  // Column-major view: W^T is cols x rows (lda = cols); y^T = W x^T.
  const cublasStatus_t st = cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(d.shape.rows),
                                         static_cast<int>(batch), static_cast<int>(d.shape.cols), &alpha, w,
                                         CUDA_R_16BF, static_cast<int>(d.shape.cols), d.x_bf16.data(), CUDA_R_16BF,
                                         static_cast<int>(d.shape.cols), &beta, y, CUDA_R_32F,
                                         static_cast<int>(d.shape.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasGemmEx failed: %d\n", static_cast<int>(st));
    std::exit(1);
  }
}
#endif

std::unique_ptr<ShapeData> prepare(Shape shape, ThreadPool& pool, size_t l2_bytes) {
  auto d = std::make_unique<ShapeData>();
  d->shape = shape;
  const size_t n = static_cast<size_t>(shape.rows) * shape.cols;
  std::vector<uint8_t> symbols(n);
  Rng rng{0x5eed0000ull + shape.rows * 31ull + shape.cols};
  for (auto& s : symbols) {
    const double u = rng.uniform();
    s = u < kP0 ? 0 : u < kP0 + (1 - kP0) / 2 ? 1 : 2;
  }
  std::vector<ternary::RowScales> scales(shape.rows);
  for (auto& s : scales) {
    s.w_min = float_to_bf16(static_cast<float>(-0.01 - 0.02 * rng.uniform()));
    s.w_max = float_to_bf16(static_cast<float>(0.01 + 0.02 * rng.uniform()));
  }
  auto packed = value_or_die(ternary::encode_ternary(symbols, shape.rows, shape.cols, scales, *g_dict, &pool),
                             "encode " + shape_name(shape));
  d->compressed_bytes = packed.num_codes() * 2 + (static_cast<size_t>(shape.rows) + 1) * 4 + shape.rows * 4ull;
  d->bits_per_weight = 8.0 * static_cast<double>(d->compressed_bytes) / static_cast<double>(n);
  d->dense_bytes = n * 2;

  // The dense baseline multiplies the very same matrix (the ternary levels are bf16 values).
  const auto decoded = value_or_die(ternary::decode_to_float(packed.view()), "decode");
  std::vector<bf16_t> dense(n);
  for (size_t i = 0; i < n; ++i) dense[i] = float_to_bf16(decoded[i]);

  const size_t target = std::max<size_t>(4 * l2_bytes, 256u << 20);
  const size_t compressed_copies = std::clamp<size_t>(target / d->compressed_bytes + 1, 8, 4096);
  const size_t dense_copies = std::clamp<size_t>(target / d->dense_bytes + 1, 4, 4096);
  for (size_t i = 0; i < compressed_copies; ++i) {
    d->compressed.push_back(value_or_die(DeviceTernaryMatrix::upload(packed.view(), *g_device_dict), "upload"));
  }
  for (size_t i = 0; i < dense_copies; ++i) {
    d->dense.push_back(value_or_die(DeviceBuffer::allocate(d->dense_bytes), "cudaMalloc dense"));
    ok_or_die(copy_to_device(d->dense.back().data(), dense.data(), d->dense_bytes), "copy dense");
  }

  std::vector<float> x(static_cast<size_t>(kMaxBatchBench) * shape.cols);
  for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  std::vector<bf16_t> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = float_to_bf16(x[i]);
  d->x_f32 = value_or_die(DeviceBuffer::allocate(x.size() * 4), "cudaMalloc x");
  d->x_bf16 = value_or_die(DeviceBuffer::allocate(x.size() * 2), "cudaMalloc x");
  ok_or_die(copy_to_device(d->x_f32.data(), x.data(), x.size() * 4), "copy x");
  ok_or_die(copy_to_device(d->x_bf16.data(), xb.data(), xb.size() * 2), "copy x");
  d->y = value_or_die(DeviceBuffer::allocate(static_cast<size_t>(kMaxBatchBench) * shape.rows * 4), "cudaMalloc y");
  std::printf("prepared %s: %.4f bits/weight (codes+offsets+scales), %zu compressed copies of %.2f MB, %zu dense "
              "copies of %.2f MB\n",
              shape_name(shape).c_str(), d->bits_per_weight, compressed_copies, d->compressed_bytes / 1e6,
              dense_copies, d->dense_bytes / 1e6);
  std::fflush(stdout);
  return d;
}

enum class Kind { kTernaryF32, kTernaryBf16, kCublas };
const char* kind_name(Kind k) {
  return k == Kind::kTernaryF32 ? "ternary f32x" : k == Kind::kTernaryBf16 ? "ternary bf16x" : "cublas bf16";
}

void run_benchmark(benchmark::State& state, ShapeData* d, uint32_t batch, Kind kind) {
  const Shape s = d->shape;
  LaunchPlan plan;
  if (kind != Kind::kCublas) {
    plan = value_or_die(plan_ternary_dict_gemm(s.rows, s.cols, batch,
                                               kind == Kind::kTernaryF32 ? Activation::kF32 : Activation::kBf16),
                        "plan");
  }
  EventTimer timer = value_or_die(EventTimer::create(), "events");
  size_t next = 0;
  auto launch_one = [&]() {
    if (kind == Kind::kCublas) {
#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
      cublas_gemm(*d, d->dense[next++ % d->dense.size()].data(), batch, d->y.as<float>());
#endif
      return;
    }
    const DeviceTernaryMatrix& w = d->compressed[next++ % d->compressed.size()];
    const Status st = kind == Kind::kTernaryF32
                          ? gemm_f32_ternary_dict_cuda(w, d->x_f32.as<const float>(), d->y.as<float>(), plan)
                          : gemm_bf16_ternary_dict_cuda(w, d->x_bf16.as<const bf16_t>(), d->y.as<float>(), plan);
    if (!st.is_ok()) die("launch", st);
  };
  for (int i = 0; i < 3; ++i) launch_one();  // warm-up (module load, cuBLAS heuristics)
  ok_or_die(synchronize(), "warm-up");
  std::vector<double> per_call_us;
  for (auto _ : state) {
    ok_or_die(timer.start(), "event");
    for (int i = 0; i < kLaunchesPerSample; ++i) launch_one();
    ok_or_die(timer.stop(), "event");
    const double ms = value_or_die(timer.elapsed_ms(), "event");
    per_call_us.push_back(ms * 1e3 / kLaunchesPerSample);
    state.SetIterationTime(ms * 1e-3 / kLaunchesPerSample);
  }
  std::sort(per_call_us.begin(), per_call_us.end());
  const double us = per_call_us[per_call_us.size() / 2];
  const double weights = static_cast<double>(s.rows) * s.cols;
  const double act_bytes = static_cast<double>(batch) * s.cols * (kind == Kind::kTernaryF32 ? 4 : 2);
  const double bytes = static_cast<double>(kind == Kind::kCublas ? d->dense_bytes : d->compressed_bytes) + act_bytes +
                       4.0 * batch * s.rows;
  state.counters["us_per_call"] = us;
  state.counters["us_per_token"] = us / batch;
  state.counters["Gweights_per_s"] = weights / us * 1e-3;
  state.counters["GB_per_s"] = bytes / us * 1e-3;
  g_samples.push_back({shape_name(s), batch, kind_name(kind), us, weights / us * 1e-3, bytes / us * 1e-3});
}

// The compressed kernel and cuBLAS multiply the same matrix: their outputs must
// agree to float accuracy (a broken kernel cannot hide behind a good time).
std::string sanity_check(ShapeData& d) {
  const Shape s = d.shape;
  std::vector<float> a(s.rows), b(s.rows);
  ok_or_die(gemv_bf16_ternary_dict_cuda(d.compressed[0], d.x_bf16.as<const bf16_t>(), d.y.as<float>()), "check");
  ok_or_die(copy_to_host(a.data(), d.y.data(), a.size() * 4), "check");
#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
  cublas_gemm(d, d.dense[0].data(), 1, d.y.as<float>());
  ok_or_die(copy_to_host(b.data(), d.y.data(), b.size() * 4), "check");
  double max_diff = 0;
  double max_ref = 0;
  for (uint32_t r = 0; r < s.rows; ++r) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[r]) - b[r]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(b[r])));
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s: max |ternary - cublas| = %.3g (max |y| = %.3g)%s", shape_name(s).c_str(),
                max_diff, max_ref, max_diff <= 1e-3 * max_ref ? "" : "  MISMATCH");
  return line;
#else
  (void)b;
  return shape_name(s) + ": no cuBLAS, output not cross-checked";
#endif
}

std::string summary_table() {
  std::ostringstream out;
  out << "device: " << describe(g_device) << "\n";
  out << "code: qmoe dictionary, p0 " << kP0 << ", i.i.d. symbols; cold weights (working set >= 4x L2)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-11s %5s %-14s %10s %10s %11s %9s %9s %10s\n", "shape", "batch", "kernel",
                "us/call", "us/token", "Gweights/s", "GB/s", "bits/w", "vs cuBLAS");
  out << line;
  for (const Sample& s : g_samples) {
    double cublas_us = 0;
    for (const Sample& c : g_samples) {
      if (c.shape == s.shape && c.batch == s.batch && c.kernel == std::string(kind_name(Kind::kCublas))) {
        cublas_us = c.us;
      }
    }
    double bits = 16;
    for (const auto& d : g_data) {
      if (shape_name(d->shape) == s.shape && s.kernel != std::string(kind_name(Kind::kCublas))) {
        bits = d->bits_per_weight;
      }
    }
    char ratio[32];
    if (cublas_us > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2fx", s.us / cublas_us);
    } else {
      std::snprintf(ratio, sizeof ratio, "-");
    }
    std::snprintf(line, sizeof line, "%-11s %5u %-14s %10.2f %10.2f %11.1f %9.1f %9.3f %10s\n", s.shape.c_str(),
                  s.batch, s.kernel.c_str(), s.us, s.us / s.batch, s.gweights, s.gbytes, bits, ratio);
    out << line;
  }
  // Batch-8 time per token relative to batch 1, per kernel and shape.
  out << "batch 8 per-token time / batch 1 time:\n";
  for (const Sample& s8 : g_samples) {
    if (s8.batch != 8) continue;
    for (const Sample& s1 : g_samples) {
      if (s1.batch == 1 && s1.shape == s8.shape && s1.kernel == s8.kernel) {
        std::snprintf(line, sizeof line, "  %-11s %-14s %.3f\n", s8.shape.c_str(), s8.kernel.c_str(),
                      s8.us / 8 / s1.us);
        out << line;
      }
    }
  }
  return out.str();
}

std::string summary_json() {
  std::ostringstream out;
  out << "{\"device\": \"" << g_device.name << "\", \"sm_count\": " << g_device.sm_count << ", \"results\": [";
  for (size_t i = 0; i < g_samples.size(); ++i) {
    const Sample& s = g_samples[i];
    out << (i ? ", " : "") << "{\"shape\": \"" << s.shape << "\", \"batch\": " << s.batch << ", \"kernel\": \""
        << s.kernel << "\", \"us_per_call\": " << s.us << ", \"gweights_per_s\": " << s.gweights
        << ", \"gb_per_s\": " << s.gbytes << "}";
  }
  out << "]}\n";
  return out.str();
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", tmp.c_str());
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::fprintf(stderr, "cannot rename %s: %s\n", tmp.c_str(), ec.message().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "bench_cuda_ternary_dict [--summary_out=PATH] [Google Benchmark flags]\n"
          "Times the CUDA ternary dictionary kernels (f32 and bf16 activations) against dense bf16\n"
          "cuBLAS on 2080x6144, 6144x2080 and 4096x14336 (rows x cols, qmoe code, i.i.d. p0 0.885)\n"
          "at batch 1 and 8 with cold weights (each kind cycles through copies of its matrix\n"
          "totalling >= 4x L2). Prints the benchmark table, then a summary (us/call, us/token,\n"
          "Gweights/s, GB/s, bits/weight, time relative to cuBLAS, batch-8 per-token time relative\n"
          "to batch 1, and a cross-check of the outputs) which --summary_out also writes to PATH\n"
          "(text) and PATH.json. Useful Google Benchmark flags: --benchmark_filter=REGEX,\n"
          "--benchmark_min_time=SECONDS (default 0.5), --benchmark_format=json.\n"
          "Without CUDA or without a GPU it prints why and exits 0; exit 1 when the outputs disagree.\n");
      return 0;
    }
  }
  benchmark::Initialize(&argc, argv);
  std::string summary_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--summary_out=", 0) == 0) {
      summary_out = a.substr(std::strlen("--summary_out="));
    } else {
      std::fprintf(stderr, "unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (!cuda_compiled() || device_count() == 0) {
    std::printf("bench_cuda_ternary_dict: skipped: %s\n", no_device_reason().c_str());
    return 0;
  }
  g_device = value_or_die(current_device_info(), "device");
  std::printf("device: %s\n", describe(g_device).c_str());
#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
  if (cublasCreate(&g_cublas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
#else
  std::printf("cuBLAS not available in this build: no dense baseline\n");
#endif
  g_dict = std::make_unique<ternary::TernaryDictionary>(
      value_or_die(ternary::build_qmoe_dictionary(kP0), "qmoe dictionary"));
  g_device_dict = std::make_unique<DeviceTernaryDictionary>(
      value_or_die(DeviceTernaryDictionary::upload(g_dict->entries()), "dictionary upload"));
  ThreadPool pool(std::max(1, hardware_threads()));
  std::vector<std::string> checks;
  for (Shape s : kShapes) {
    g_data.push_back(prepare(s, pool, g_device.l2_bytes));
    checks.push_back(sanity_check(*g_data.back()));
  }
  for (auto& d : g_data) {
    for (uint32_t batch : kBatches) {
      for (Kind kind : {Kind::kTernaryF32, Kind::kTernaryBf16, Kind::kCublas}) {
#if !(defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS)
        if (kind == Kind::kCublas) continue;
#endif
        const std::string name = shape_name(d->shape) + "/batch" + std::to_string(batch) + "/" + kind_name(kind);
        benchmark::RegisterBenchmark(name.c_str(), run_benchmark, d.get(), batch, kind)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  std::string text = summary_table();
  text += "output cross-check (batch 1, bf16 activations):\n";
  for (const auto& c : checks) text += "  " + c + "\n";
  std::printf("\n==== summary ====\n%s", text.c_str());
  if (!summary_out.empty()) {
    write_atomically(summary_out, text);
    write_atomically(summary_out + ".json", summary_json());
  }
#if defined(SUBMOE_HAVE_CUBLAS) && SUBMOE_HAVE_CUBLAS
  cublasDestroy(g_cublas);
#endif
  bool mismatch = false;
  for (const auto& c : checks) mismatch |= c.find("MISMATCH") != std::string::npos;
  return mismatch ? 1 : 0;
}
