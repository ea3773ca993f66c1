// Benchmark harness shared by `submoe bench gemv` and bench/bench_gemv.cpp: dense
// f32, dense bf16 and a compressed kernel (the ternary dictionary code, or the
// residual-VQ LUT kernel with --repr rvq) on working sets of distinct
// matrices larger than the last-level cache (as the experts of an MoE layer are),
// cycled through so every call streams its weights from DRAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dict.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/rvq_panels.h"
#include "submoe/kernels/dense_gemv.h"
#include "submoe/kernels/int_gemv.h"
#include "submoe/kernels/rvq_gemv.h"
#include "submoe/kernels/ternary_gemv.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// Last-level cache size in bytes from the OS (0 when unknown).
size_t last_level_cache_bytes();

// How many distinct matrices of `bytes_per_matrix` make a working set of at least
// `min_matrices` and at least `llc_factor` x the last-level cache.
uint32_t working_set_matrices(size_t bytes_per_matrix, uint32_t min_matrices, double llc_factor);

// n dense matrices rows x cols (row-major, one allocation each, random bf16
// values; the f32 set holds the same values widened).
struct DenseWorkingSet {
  DenseType type = DenseType::kF32;
  uint32_t rows = 0, cols = 0;
  std::vector<AlignedBuffer<uint8_t>> storage;
  DenseMatrixView view(size_t i) const;
  size_t bytes_per_matrix() const;
};
DenseWorkingSet make_dense_working_set(DenseType type, uint32_t rows, uint32_t cols, uint32_t count, uint64_t seed);

// n packed ternary matrices: `distinct` independently drawn i.i.d. matrices
// (P(0) = p0) encoded with dict; copy i holds the rows of encoded matrix
// i % distinct in its own random order, in its own allocations, so all `count`
// matrices differ and sit at different addresses.
struct TernaryWorkingSet {
  uint32_t rows = 0, cols = 0;
  std::vector<ternary::PackedTernaryMatrix> distinct;
  struct Copy {
    AlignedBuffer<uint16_t> codes;
    AlignedBuffer<int32_t> row_offsets;
    AlignedBuffer<ternary::RowScales> scales;
  };
  std::vector<Copy> copies;
  const ternary::DictEntry* dict = nullptr;
  ternary::PackedTernaryView view(size_t i) const;  // copy i
  size_t bytes_per_matrix() const;  // codes + offsets + scales
};
Result<TernaryWorkingSet> make_ternary_working_set(const ternary::TernaryDictionary& dict, uint32_t rows,
                                                   uint32_t cols, double p0, uint32_t count, uint32_t distinct,
                                                   uint64_t seed, ThreadPool* pool);

// A working set of n-bit matrices (codec/int_packed.h): one packed matrix of
// random codes, then copies with the rows in other random orders.
struct IntWorkingSet {
  intn::PackedIntMatrix base;
  struct Copy {
    AlignedBuffer<uint8_t> qweight;
    AlignedBuffer<uint16_t> scales;
    AlignedBuffer<uint8_t> zeros;
  };
  std::vector<Copy> copies;
  intn::PackedIntView view(size_t i) const;
  size_t bytes_per_matrix() const { return base.storage_bytes(); }
};
Result<IntWorkingSet> make_int_working_set(uint32_t bits, uint32_t group_size, uint32_t rows, uint32_t cols,
                                           uint32_t count, uint64_t seed);

// A working set of residual-VQ matrices (codec/rvq_format.h) sharing one set of
// random codebooks: every copy has its own uniformly random code bytes and
// f16 scales in its own allocations, and its codes repacked in the kernels'
// execution layout (kernels/rvq_panels.h), which is what the benchmark reads.
struct RvqWorkingSet {
  uint32_t rows = 0, cols = 0, stages = 0;
  std::vector<float> codebooks;  // stages x 256 x 16
  struct Copy {
    AlignedBuffer<uint8_t> codes;
    AlignedBuffer<uint16_t> scales;
    RvqPanels panels;
  };
  std::vector<Copy> copies;
  rvq::RvqView view(size_t i) const;
  RvqPanelView panel_view(size_t i) const { return copies[i].panels.view(); }
  size_t bytes_per_matrix() const { return rvq::rvq_matrix_bytes(rows, cols, stages); }  // codes + scales
};
Result<RvqWorkingSet> make_rvq_working_set(uint32_t rows, uint32_t cols, uint32_t stages, uint32_t count,
                                           uint64_t seed);

// A compressed working set the caller made (runtime/repr_bench.h: any
// representation of the registry, run through its LinearOp), timed in place
// of the ternary kernels.
struct ExternalBenchSet {
  std::string kernel;           // what runs (the LinearOp's describe())
  size_t bytes_per_matrix = 0;  // the packed fields of one matrix (shared tensors not counted)
  double bits_per_weight = 0;   // 8 x bytes_per_matrix / (rows x cols)
  uint32_t matrices = 0;        // distinct copies (the working set)
  // Matrix i on `batch` tokens: x [batch, cols] f32, y [batch, rows].
  std::function<Status(uint32_t i, const float* x, uint32_t batch, float* y, ThreadPool* pool)> run;
};

// What `compressed` times: the ternary dictionary kernels, or an external set.
enum class BenchRepr : uint8_t { kTernary = 0, kExternal = 1 };

struct GemvBenchConfig {
  uint32_t rows = 2080;
  uint32_t cols = 6144;
  uint32_t batch = 1;
  double p0 = ternary::kQmoeDefaultP0;  // of the synthetic data
  double dict_p0 = -1;                  // < 0: build the dictionary for p0
  ternary::DictKind code = ternary::DictKind::kQmoe;
  uint32_t iters = 100;        // timed calls per kernel
  uint32_t min_matrices = 64;  // working set: at least this many distinct matrices
  double llc_factor = 2.0;     // ... and at least this many times the last-level cache
  bool dense = true;           // also time dense f32 and bf16
  std::vector<uint32_t> int_bits = {2, 3, 4};  // n-bit kernels to time next to them (empty: none)
  uint32_t int_group = 128;                     // their group size (0 = per row)
  BenchRepr repr = BenchRepr::kTernary;
  std::shared_ptr<const ExternalBenchSet> external;  // kExternal
  Isa isa = Isa::kScalar;      // kernels to time (the caller passes best_isa() by default)
  uint64_t seed = 1;
};

struct GemvTiming {
  std::string kernel;
  double median_us = 0;
  double min_us = 0;
  double p90_us = 0;
  // CPU time of the calling thread per call (median): on a shared machine it
  // leaves out time the thread spent descheduled; with several threads it covers
  // the caller's own share of the rows only.
  double cpu_median_us = 0;
  uint32_t samples = 0;
  uint32_t matrices = 0;          // working set size
  size_t bytes_per_matrix = 0;
};

struct GemvBenchResult {
  GemvBenchConfig config;
  uint32_t threads = 1;
  size_t llc_bytes = 0;
  GemvTiming dense_f32;
  GemvTiming dense_bf16;
  GemvTiming compressed;          // f32 activations
  GemvTiming compressed_bf16act;  // ternary only: the same matrices with the activations as bf16
  GemvTiming compressed_i8act;    // ternary only: f32 activations quantized to int8 (ActivationQuant::kInt8)
  GemvTiming compressed_batch1;   // only when batch > 1: the per-token reference (f32 activations)
  struct IntTiming {
    uint32_t bits = 0;
    double bits_per_weight = 0;  // codes + f16 scales + zeros
    GemvTiming timing;         // f32 activations
    GemvTiming timing_i8act;   // the same matrices, activations quantized to int8 (ActivationQuant::kInt8)
  };
  std::vector<IntTiming> ints;  // one per config.int_bits
  ternary::TernaryLedger ledger;  // ternary: of one working-set matrix
  double dictionary_p0 = 0;
};

// Runs the benchmark. pool: the threads kernels use (null = 1). progress: optional
// status lines (building, timing ...).
Result<GemvBenchResult> run_gemv_bench(const GemvBenchConfig& config, ThreadPool* pool,
                                       const std::function<void(const std::string&)>& progress = {});

}  // namespace submoe::kernels
