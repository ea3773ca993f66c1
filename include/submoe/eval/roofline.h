// Host roofline: every limit an offloaded MoE decoder runs into, measured on the
// host it runs on (seed 001, "Host Roofline"): unbuffered random reads at expert
// granularity, sequential reads, DRAM copy and read bandwidth, the fused kernels'
// throughput on working sets larger than the last-level cache and, with a GPU,
// host-to-device and device bandwidth. Units: GB/s = 1e9 bytes/s, Gweights/s =
// 1e9 weights/s.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::eval {

struct RooflineOptions {
  std::string dir;              // where the test file is created (and deleted)
  uint64_t file_mb = 1024;      // test file size in MiB
  bool quick = false;           // ~10 s: small buffers and short cells (figures not cold)
  double cell_seconds = 0.75;   // time per random-read cell (block size x threads)
  double sequential_seconds = 4; // cap on the sequential pass
  std::vector<uint64_t> block_bytes = {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20};
  std::vector<uint32_t> io_threads = {1, 2, 4, 8};
  uint64_t dram_buffer_bytes = 0;  // 0: 2 x last-level cache, clamped to [64 MiB, 512 MiB]
  int compute_threads = 0;         // 0: all hardware threads
  // Kernel shape: T1's expert up projection (2048 outputs x 8192 inputs).
  uint32_t kernel_rows = 2048;
  uint32_t kernel_cols = 8192;
  uint32_t kernel_iters = 20;
  bool kernels = true;
  bool gpu = true;
  bool storage = true;
  uint64_t seed = 1;
};

// Applies --quick: 64 MiB file, 50 ms cells, 16 MiB DRAM buffers, a small
// kernel shape and a 2-matrix working set.
void apply_quick_roofline(RooflineOptions* options);

struct RandomReadCell {
  uint64_t block_bytes = 0;
  uint32_t threads = 0;
  uint64_t reads = 0;
  double seconds = 0;
  double gbps = 0;
};

struct StorageRoofline {
  std::string dir;
  uint64_t file_bytes = 0;
  bool direct_io = false;   // O_DIRECT accepted; else buffered reads + fadvise(DONTNEED)
  std::string io_mode;      // "O_DIRECT" or "buffered+fadvise(DONTNEED)"
  std::string note;         // why O_DIRECT was not used, when it was not
  double write_gbps = 0;    // creating the test file (fsync included)
  double sequential_read_gbps = 0;
  std::vector<RandomReadCell> random_read;
};

struct DramRoofline {
  uint64_t buffer_bytes = 0;
  uint32_t threads = 1;          // the "N threads" figures
  // Copy counts bytes read + bytes written (STREAM convention).
  double copy_gbps_1t = 0, copy_gbps_nt = 0;
  double read_gbps_1t = 0, read_gbps_nt = 0;
  bool larger_than_llc = false;
};

struct KernelRoofline {
  std::string codec;   // "qmoe", "tunstall", "bf16"
  std::string kernel;  // the kernel's name
  uint32_t batch = 1;
  uint32_t rows = 0, cols = 0;
  uint32_t threads = 1;
  double median_us = 0;
  double gweights_per_s = 0;  // rows x cols / median call time: each weight once per call
  double bits_per_weight = 0;
  uint32_t matrices = 0;
  uint64_t working_set_bytes = 0;
  bool cold = false;          // working set larger than the last-level cache
};

struct GpuRoofline {
  bool present = false;
  std::string device;
  std::string note;          // "no GPU: ..." when absent
  double h2d_gbps = 0;       // pageable host memory
  double d2h_gbps = 0;
  double device_copy_gbps = 0;  // read + write bytes of a device-to-device copy
  uint64_t bytes = 0;
};

struct RooflineResult {
  bool quick = false;
  uint32_t cpus = 0;
  uint64_t llc_bytes = 0;
  std::string isa;
  StorageRoofline storage;
  DramRoofline dram;
  std::vector<KernelRoofline> kernels;
  GpuRoofline gpu;
  double seconds = 0;
};

using RooflineProgress = std::function<void(const std::string&)>;

// Runs every measurement. The test file is removed on every path out.
Result<RooflineResult> run_roofline(const RooflineOptions& options, const RooflineProgress& progress = {});

// The parts, for tests and reuse.
Result<StorageRoofline> measure_storage(const RooflineOptions& options, const RooflineProgress& progress);
Result<DramRoofline> measure_dram(const RooflineOptions& options);
Result<std::vector<KernelRoofline>> measure_kernels(const RooflineOptions& options, const RooflineProgress& progress);
GpuRoofline measure_gpu(const RooflineOptions& options);

// One JSON object ("format": "submoe-roofline", version 1); the input of
// `submoe project --roofline`.
std::string roofline_json(const RooflineResult& r);
std::string roofline_table(const RooflineResult& r);

}  // namespace submoe::eval
