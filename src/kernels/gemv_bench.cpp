#include "submoe/kernels/gemv_bench.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "submoe/core/thread_pool.h"

namespace submoe::kernels {

using ternary::PackedTernaryView;
using ternary::RowScales;

size_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long v = sysconf(name);
    if (v > 0) return static_cast<size_t>(v);
  }
  return 0;
}

uint32_t working_set_matrices(size_t bytes_per_matrix, uint32_t min_matrices, double llc_factor) {
  const double llc = static_cast<double>(last_level_cache_bytes());
  const double need = bytes_per_matrix > 0 ? std::ceil(llc_factor * llc / static_cast<double>(bytes_per_matrix)) : 0;
  return std::max<uint32_t>(min_matrices, static_cast<uint32_t>(std::min(need, 1e6)));
}

DenseMatrixView DenseWorkingSet::view(size_t i) const {
  DenseMatrixView v;
  v.data = storage[i].data();
  v.type = type;
  v.rows = rows;
  v.cols = cols;
  v.stride = cols;
  return v;
}

size_t DenseWorkingSet::bytes_per_matrix() const {
  return static_cast<size_t>(rows) * cols * (type == DenseType::kF32 ? 4 : 2);
}

DenseWorkingSet make_dense_working_set(DenseType type, uint32_t rows, uint32_t cols, uint32_t count, uint64_t seed) {
  DenseWorkingSet s;
  s.type = type;
  s.rows = rows;
  s.cols = cols;
  const size_t n = static_cast<size_t>(rows) * cols;
  const size_t bytes = s.bytes_per_matrix();
  // One random matrix, then copies of it with the rows in another random order
  // each: as cold as independent matrices, and distinct, at a fraction of the
  // cost of drawing them all.
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  s.storage.reserve(count);
  s.storage.emplace_back(bytes, false);
  if (type == DenseType::kF32) {
    auto* w = reinterpret_cast<float*>(s.storage[0].data());
    for (size_t i = 0; i < n; ++i) w[i] = bf16_to_float(float_to_bf16(nd(rng)));
  } else {
    auto* w = reinterpret_cast<bf16_t*>(s.storage[0].data());
    for (size_t i = 0; i < n; ++i) w[i] = float_to_bf16(nd(rng));
  }
  const size_t row_bytes = bytes / rows;
  std::vector<uint32_t> order(rows);
  for (uint32_t r = 0; r < rows; ++r) order[r] = r;
  for (uint32_t i = 1; i < count; ++i) {
    std::shuffle(order.begin(), order.end(), rng);
    s.storage.emplace_back(bytes, false);
    for (uint32_t r = 0; r < rows; ++r) {
      std::memcpy(s.storage[i].data() + r * row_bytes, s.storage[0].data() + order[r] * row_bytes, row_bytes);
    }
  }
  return s;
}

PackedTernaryView TernaryWorkingSet::view(size_t i) const {
  const ternary::PackedTernaryMatrix& src = distinct[i % distinct.size()];
  PackedTernaryView v = src.view();
  v.codes = copies[i].codes.data();
  v.row_offsets = copies[i].row_offsets.data();
  v.scales = copies[i].scales.data();
  return v;
}

size_t TernaryWorkingSet::bytes_per_matrix() const {
  if (distinct.empty()) return 0;
  const ternary::PackedTernaryMatrix& m = distinct[0];
  return m.num_codes() * 2 + m.row_offsets().size_bytes() + m.scales().size_bytes();
}

Result<TernaryWorkingSet> make_ternary_working_set(const ternary::TernaryDictionary& dict, uint32_t rows,
                                                   uint32_t cols, double p0, uint32_t count, uint32_t distinct,
                                                   uint64_t seed, ThreadPool* pool) {
  if (!(p0 >= 0.0 && p0 <= 1.0)) return invalid_argument("make_ternary_working_set: p0 must be in [0, 1]");
  TernaryWorkingSet s;
  s.rows = rows;
  s.cols = cols;
  s.dict = dict.entries();
  distinct = std::max<uint32_t>(1, std::min(distinct, count));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> symbols(static_cast<size_t>(rows) * cols);
  std::vector<RowScales> scales(rows);
  for (uint32_t d = 0; d < distinct; ++d) {
    for (uint8_t& v : symbols) {
      const uint64_t r = rng();
      const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
      v = u < p0 ? ternary::kSymbolZero : ((r & 1) ? ternary::kSymbolMin : ternary::kSymbolMax);
    }
    for (RowScales& sc : scales) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      sc = {float_to_bf16(static_cast<float>(-0.01 - 0.05 * u)), float_to_bf16(static_cast<float>(0.01 + 0.05 * u))};
    }
    SUBMOE_ASSIGN_OR_RETURN(ternary::PackedTernaryMatrix m,
                            ternary::encode_ternary(symbols, rows, cols, scales, dict, pool));
    s.distinct.push_back(std::move(m));
  }
  // Copy i holds the rows of encoded matrix i % distinct in its own random order
  // (rows are encoded independently, so any row order is a valid matrix): the
  // working set has `count` distinct matrices at distinct addresses for the
  // price of `distinct` encodings.
  s.copies.reserve(count);
  std::vector<uint32_t> order(rows);
  for (uint32_t i = 0; i < count; ++i) {
    const ternary::PackedTernaryMatrix& src = s.distinct[i % distinct];
    for (uint32_t r = 0; r < rows; ++r) order[r] = r;
    if (i >= distinct) std::shuffle(order.begin(), order.end(), rng);
    TernaryWorkingSet::Copy c;
    c.codes.reset(src.num_codes() + ternary::kCodeSlackBytes / 2, false);
    c.row_offsets.reset(static_cast<size_t>(rows) + 1, false);
    c.scales.reset(rows, false);
    const std::span<const int32_t> off = src.row_offsets();
    int32_t at = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t from = order[r];
      const int32_t n = off[from + 1] - off[from];
      c.row_offsets[r] = at;
      std::memcpy(c.codes.data() + at, src.codes().data() + off[from], sizeof(uint16_t) * static_cast<size_t>(n));
      c.scales[r] = src.scales()[from];
      at += n;
    }
    c.row_offsets[rows] = at;
    std::memset(c.codes.data() + src.num_codes(), 0, ternary::kCodeSlackBytes);
    s.copies.push_back(std::move(c));
  }
  return s;
}

intn::PackedIntView IntWorkingSet::view(size_t i) const {
  intn::PackedIntView v = base.view();
  v.qweight = copies[i].qweight.data();
  v.scales = copies[i].scales.data();
  v.zeros = copies[i].zeros.data();
  return v;
}

Result<IntWorkingSet> make_int_working_set(uint32_t bits, uint32_t group_size, uint32_t rows, uint32_t cols,
                                           uint32_t count, uint64_t seed) {
  SUBMOE_RETURN_IF_ERROR(intn::check_int_params(bits, group_size));
  const uint32_t groups = intn::int_groups_per_row(cols, group_size);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> codes(static_cast<size_t>(rows) * cols);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1u));
  // Scales exact in f16 (as the quantizer stores them), zeros mid-range.
  std::vector<float> scales(static_cast<size_t>(rows) * groups), zeros(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = std::ldexp(1.0f + static_cast<float>(rng() % 64) / 64.0f, -8);
    zeros[i] = static_cast<float>(1u << (bits - 1));
  }
  IntWorkingSet s;
  SUBMOE_ASSIGN_OR_RETURN(s.base, intn::pack_int_codes(codes, rows, cols, bits, group_size, scales, zeros));
  const intn::PackedIntView b = s.base.view();
  std::vector<uint32_t> order(rows);
  for (uint32_t r = 0; r < rows; ++r) order[r] = r;
  s.copies.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (i > 0) std::shuffle(order.begin(), order.end(), rng);
    IntWorkingSet::Copy c;
    c.qweight.reset(static_cast<size_t>(rows) * b.row_bytes, false);
    c.scales.reset(static_cast<size_t>(rows) * groups, false);
    c.zeros.reset(static_cast<size_t>(rows) * groups, false);
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t from = order[r];
      std::memcpy(c.qweight.data() + r * b.row_bytes, b.qweight + from * b.row_bytes, b.row_bytes);
      std::memcpy(c.scales.data() + static_cast<size_t>(r) * groups, b.scales + static_cast<size_t>(from) * groups,
                  sizeof(uint16_t) * groups);
      std::memcpy(c.zeros.data() + static_cast<size_t>(r) * groups, b.zeros + static_cast<size_t>(from) * groups,
                  groups);
    }
    s.copies.push_back(std::move(c));
  }
  return s;
}

rvq::RvqView RvqWorkingSet::view(size_t i) const {
  return {rows, cols, stages, copies[i].codes.data(), copies[i].scales.data(), codebooks.data()};
}

Result<RvqWorkingSet> make_rvq_working_set(uint32_t rows, uint32_t cols, uint32_t stages, uint32_t count,
                                           uint64_t seed) {
  if (rows == 0 || cols == 0 || cols % rvq::kRvqDim != 0)
    return invalid_argument("make_rvq_working_set: cols must be a positive multiple of 16, got " + std::to_string(cols));
  if (stages < 1 || stages > rvq::kRvqMaxStages)
    return invalid_argument("make_rvq_working_set: stages must be in 1..8, got " + std::to_string(stages));
  RvqWorkingSet s;
  s.rows = rows;
  s.cols = cols;
  s.stages = stages;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  s.codebooks.resize(size_t{stages} * rvq::kRvqCodebookFloats);
  for (size_t i = 0; i < s.codebooks.size(); ++i) {
    // Residual stages shrink, as a trained RVQ's do.
    s.codebooks[i] = std::ldexp(nd(rng), -static_cast<int>(i / rvq::kRvqCodebookFloats));
  }
  const size_t ncodes = size_t{rows} * rvq::rvq_groups(cols) * stages;
  s.copies.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    RvqWorkingSet::Copy c;
    c.codes.reset(ncodes, false);
    c.scales.reset(rows, false);
    size_t k = 0;
    for (; k + 8 <= ncodes; k += 8) {
      const uint64_t v = rng();
      std::memcpy(c.codes.data() + k, &v, 8);
    }
    for (; k < ncodes; ++k) c.codes[k] = static_cast<uint8_t>(rng());
    for (uint32_t r = 0; r < rows; ++r)
      c.scales[r] = float_to_f16_bits(0.01f * (1.0f + static_cast<float>(rng() % 1024) / 1024.0f));
    const rvq::RvqView v{rows, cols, stages, c.codes.data(), c.scales.data(), s.codebooks.data()};
    SUBMOE_ASSIGN_OR_RETURN(c.panels, RvqPanels::pack(v));
    s.copies.push_back(std::move(c));
  }
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

// Times `iters` calls of fn(i) on matrices i = 0, 1, ... (mod count), after a few
// untimed calls; the working set is larger than the cache, so each call is cold.
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

double median_of(std::vector<double>& v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// One kernel under test: fn(i) runs it on working-set matrix i.
struct TimedKernel {
  GemvTiming* out;
  uint32_t count;  // working-set matrices
  std::function<Status(uint32_t)> fn;
  std::vector<double> us, cpu;
};

// Times the kernels interleaved: each round calls every kernel once (on its next
// working-set matrix, so each call is cold), after a few untimed rounds. The
// machine's state (clock, a busy SMT sibling, other tenants' DRAM traffic) then
// drifts the same way for all of them and their ratios compare calls made side
// by side rather than minutes apart.
Status time_interleaved(std::vector<TimedKernel>& ks, uint32_t iters) {
  uint32_t warmup = 3;
  for (const TimedKernel& k : ks) warmup = std::min(warmup, k.count);
  for (TimedKernel& k : ks) {
    k.us.reserve(iters);
    k.cpu.reserve(iters);
  }
  for (uint32_t i = 0; i < warmup + iters; ++i) {
    for (TimedKernel& k : ks) {
      const double c0 = thread_cpu_us();
      const auto t0 = Clock::now();
      SUBMOE_RETURN_IF_ERROR(k.fn((i + k.count - warmup) % k.count));
      const double dt = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      const double dc = thread_cpu_us() - c0;
      if (i >= warmup) {
        k.us.push_back(dt);
        k.cpu.push_back(dc);
      }
    }
  }
  for (TimedKernel& k : ks) {
    GemvTiming& t = *k.out;
    t.matrices = k.count;
    t.samples = static_cast<uint32_t>(k.us.size());
    t.median_us = median_of(k.us);  // sorts
    t.cpu_median_us = median_of(k.cpu);
    if (!k.us.empty()) {
      t.min_us = k.us.front();
      t.p90_us = k.us[std::min(k.us.size() - 1, k.us.size() * 9 / 10)];
    }
  }
  return Status::ok();
}

std::vector<float> bench_activations(uint32_t batch, uint32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(batch) * cols);
  for (float& v : x) v = nd(rng);
  return x;
}

}  // namespace

Result<GemvBenchResult> run_gemv_bench(const GemvBenchConfig& config, ThreadPool* pool,
                                       const std::function<void(const std::string&)>& progress) {
  const GemvBenchConfig& c = config;
  if (c.rows == 0 || c.cols == 0) return invalid_argument("bench gemv: shape must be positive");
  if (c.batch < 1 || c.batch > kMaxKernelBatch) return invalid_argument("bench gemv: batch outside 1..64");
  if (c.iters == 0) return invalid_argument("bench gemv: iters must be >= 1");
  if (c.repr == BenchRepr::kExternal && (c.external == nullptr || !c.external->run || c.external->matrices == 0))
    return invalid_argument("bench gemv: empty external working set");
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };

  GemvBenchResult res;
  res.config = c;
  res.threads = pool ? static_cast<uint32_t>(pool->num_threads()) : 1;
  res.llc_bytes = last_level_cache_bytes();
  const std::vector<float> x = bench_activations(c.batch, c.cols, c.seed + 17);
  std::vector<bf16_t> x_bf16(x.size());
  for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = float_to_bf16(x[i]);
  std::vector<float> y(static_cast<size_t>(c.batch) * c.rows);
  const OutputView out{y.data(), c.rows};
  std::vector<TimedKernel> timed;

  DenseWorkingSet dense_ws[2];
  const DenseGemvKernels& dk = dense_gemv_kernels(c.isa);
  if (c.dense) {
    const DenseType types[2] = {DenseType::kF32, DenseType::kBF16};
    for (int d = 0; d < 2; ++d) {
      const DenseType type = types[d];
      const size_t bytes = static_cast<size_t>(c.rows) * c.cols * (type == DenseType::kF32 ? 4 : 2);
      const uint32_t count = working_set_matrices(bytes, c.min_matrices, c.llc_factor);
      say(std::string("dense ") + (type == DenseType::kF32 ? "f32" : "bf16") + ": " + std::to_string(count) +
          " matrices, " + std::to_string(count * (bytes >> 20)) + " MiB");
      dense_ws[d] = make_dense_working_set(type, c.rows, c.cols, count, c.seed);
      GemvTiming& t = type == DenseType::kF32 ? res.dense_f32 : res.dense_bf16;
      t.kernel = dense_kernel_name(dk, type);
      t.bytes_per_matrix = bytes;
      const DenseWorkingSet* ws = &dense_ws[d];
      timed.push_back({&t, count, [&, ws](uint32_t i) {
                         return gemm_dense(dk, ws->view(i), x.data(), c.cols, c.batch, out, pool);
                       }, {}, {}});
    }
  }

  if (c.repr == BenchRepr::kExternal) {
    // The caller's matrices take the place of the ternary kernels (same keys):
    // f32 activations, and the batch-1 reference when batch > 1.
    const ExternalBenchSet& e = *c.external;
    auto add = [&](GemvTiming* t, uint32_t batch) {
      t->kernel = e.kernel;
      t->bytes_per_matrix = e.bytes_per_matrix;
      timed.push_back({t, e.matrices, [&, batch](uint32_t i) { return e.run(i, x.data(), batch, y.data(), pool); },
                       {}, {}});
    };
    add(&res.compressed, c.batch);
    if (c.batch > 1) add(&res.compressed_batch1, 1);
    say("timing " + std::to_string(timed.size()) + " kernels interleaved, " + std::to_string(c.iters) + " rounds");
    SUBMOE_RETURN_IF_ERROR(time_interleaved(timed, c.iters));
    return res;
  }

  const double dict_p0 = c.dict_p0 >= 0 ? c.dict_p0 : c.p0;
  res.dictionary_p0 = dict_p0;
  say(std::string("building ") + ternary::dict_kind_name(c.code) + " dictionary for p0 " + std::to_string(dict_p0));
  SUBMOE_ASSIGN_OR_RETURN(ternary::TernaryDictionary dict, ternary::build_dictionary(c.code, dict_p0));
  SUBMOE_ASSIGN_OR_RETURN(TernaryKernelTable table, build_ternary_kernel_table(dict.entries()));
  // Size the working set from one encoded matrix.
  SUBMOE_ASSIGN_OR_RETURN(TernaryWorkingSet probe,
                          make_ternary_working_set(dict, c.rows, c.cols, c.p0, 1, 1, c.seed, pool));
  const uint32_t count = working_set_matrices(probe.bytes_per_matrix(), c.min_matrices, c.llc_factor);
  say("compressed: " + std::to_string(count) + " matrices, " +
      std::to_string((count * probe.bytes_per_matrix()) >> 20) + " MiB");
  SUBMOE_ASSIGN_OR_RETURN(TernaryWorkingSet ws,
                          make_ternary_working_set(dict, c.rows, c.cols, c.p0, count, 2, c.seed, pool));
  ternary::LedgerOptions lo;
  SUBMOE_ASSIGN_OR_RETURN(res.ledger, ternary::compute_ledger(ws.view(0), lo));
  for (uint32_t i = 0; i < std::min<uint32_t>(count, 3); ++i) {  // both encodings and a shuffled copy
    SUBMOE_RETURN_IF_ERROR(ternary::validate_packed_with_trusted_dict(ws.view(i)));
  }

  const TernaryGemvKernels& tk = ternary_gemv_kernels(c.isa);
  std::vector<float> workspace(ternary_gemm_workspace_floats(c.cols, c.batch));
  auto add_compressed = [&](GemvTiming* t, uint32_t batch, ActivationType type,
                            ActivationQuant quant = ActivationQuant::kExact) {
    t->kernel = ternary_kernel_name(tk, table, batch, type, quant);
    t->bytes_per_matrix = ws.bytes_per_matrix();
    const ActivationsView xv = type == ActivationType::kF32 ? ActivationsView::f32(x.data(), batch, c.cols)
                                                            : ActivationsView::bf16(x_bf16.data(), batch, c.cols);
    timed.push_back({t, count, [&, xv, quant](uint32_t i) {
                       return gemm_ternary_dict(tk, table, ws.view(i), xv, out, workspace, pool, quant);
                     }, {}, {}});
  };
  // n-bit kernels (f32 and int8-quantized activations), each bit width on its own working set.
  std::vector<IntWorkingSet> int_sets;
  int_sets.reserve(c.int_bits.size());
  res.ints.reserve(c.int_bits.size());  // timed entries point into it
  const IntGemvKernels& ik = int_gemv_kernels(c.isa);
  std::vector<float> int_workspace(int_gemm_workspace_floats(c.cols, c.batch));
  for (uint32_t bits : c.int_bits) {
    const size_t bytes = intn::packed_int_bytes(c.rows, c.cols, bits, c.int_group);
    const uint32_t n = working_set_matrices(bytes, c.min_matrices, c.llc_factor);
    say("int" + std::to_string(bits) + ": " + std::to_string(n) + " matrices, " + std::to_string((n * bytes) >> 20) +
        " MiB");
    SUBMOE_ASSIGN_OR_RETURN(IntWorkingSet is, make_int_working_set(bits, c.int_group, c.rows, c.cols, n, c.seed));
    int_sets.push_back(std::move(is));
    GemvBenchResult::IntTiming it;
    it.bits = bits;
    it.bits_per_weight = intn::packed_int_bits_per_weight(c.rows, c.cols, bits, c.int_group);
    it.timing.kernel = int_kernel_name(ik, c.batch);
    it.timing.bytes_per_matrix = bytes;
    it.timing_i8act.kernel = int_kernel_name(ik, bits, c.batch, ActivationQuant::kInt8);
    it.timing_i8act.bytes_per_matrix = bytes;
    res.ints.push_back(it);
  }
  for (size_t k = 0; k < int_sets.size(); ++k) {
    const IntWorkingSet* is = &int_sets[k];
    const ActivationsView xv = ActivationsView::f32(x.data(), c.batch, c.cols);
    const auto copies = static_cast<uint32_t>(is->copies.size());
    timed.push_back({&res.ints[k].timing, copies, [&, is, xv](uint32_t i) {
                       return gemm_int(ik, is->view(i), xv, out, int_workspace, pool);
                     }, {}, {}});
    timed.push_back({&res.ints[k].timing_i8act, copies, [&, is, xv](uint32_t i) {
                       return gemm_int(ik, is->view(i), xv, out, int_workspace, pool, ActivationQuant::kInt8);
                     }, {}, {}});
  }

  add_compressed(&res.compressed, c.batch, ActivationType::kF32);
  add_compressed(&res.compressed_bf16act, c.batch, ActivationType::kBF16);
  add_compressed(&res.compressed_i8act, c.batch, ActivationType::kF32, ActivationQuant::kInt8);
  if (c.batch > 1) add_compressed(&res.compressed_batch1, 1, ActivationType::kF32);
  say("timing " + std::to_string(timed.size()) + " kernels interleaved, " + std::to_string(c.iters) + " rounds");
  SUBMOE_RETURN_IF_ERROR(time_interleaved(timed, c.iters));
  return res;
}

}  // namespace submoe::kernels
