// The roofline run and its two renderings (JSON for `project --roofline`, a
// readable table).
#include "submoe/eval/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "submoe/core/cpu_features.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/gemv_bench.h"

namespace submoe::eval {

void apply_quick_roofline(RooflineOptions* o) {
  o->quick = true;
  o->file_mb = 64;
  o->cell_seconds = 0.05;
  o->sequential_seconds = 0.5;
  o->dram_buffer_bytes = 16u << 20;
  o->kernel_rows = 256;
  o->kernel_cols = 1024;
  o->kernel_iters = 3;
}

Result<RooflineResult> run_roofline(const RooflineOptions& o, const RooflineProgress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  RooflineResult r;
  r.quick = o.quick;
  r.cpus = static_cast<uint32_t>(hardware_threads());
  r.llc_bytes = kernels::last_level_cache_bytes();
  r.isa = isa_name(best_isa());
  if (o.storage) {
    SUBMOE_ASSIGN_OR_RETURN(r.storage, measure_storage(o, progress));
  }
  if (progress) progress("DRAM copy and read");
  SUBMOE_ASSIGN_OR_RETURN(r.dram, measure_dram(o));
  if (o.kernels) {
    SUBMOE_ASSIGN_OR_RETURN(r.kernels, measure_kernels(o, progress));
  }
  if (o.gpu) {
    if (progress) progress("GPU");
    r.gpu = measure_gpu(o);
  } else {
    r.gpu.note = "GPU not measured (disabled)";
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string roofline_json(const RooflineResult& r) {
  using nlohmann::json;
  json j;
  j["format"] = "submoe-roofline";
  j["version"] = 1;
  j["host"] = {{"cpus", r.cpus}, {"llc_bytes", r.llc_bytes}, {"isa", r.isa}, {"quick", r.quick},
               {"seconds", r.seconds}};
  const StorageRoofline& s = r.storage;
  json cells = json::array();
  for (const RandomReadCell& c : s.random_read) {
    cells.push_back({{"block_bytes", c.block_bytes}, {"threads", c.threads}, {"reads", c.reads},
                     {"seconds", c.seconds}, {"GBps", c.gbps}});
  }
  j["storage"] = {{"dir", s.dir},
                  {"file_bytes", s.file_bytes},
                  {"io_mode", s.io_mode},
                  {"direct_io", s.direct_io},
                  {"note", s.note},
                  {"write_GBps", s.write_gbps},
                  {"sequential_read_GBps", s.sequential_read_gbps},
                  {"random_read", cells}};
  const DramRoofline& d = r.dram;
  j["dram"] = {{"buffer_bytes", d.buffer_bytes}, {"threads", d.threads},
               {"larger_than_llc", d.larger_than_llc}, {"copy_GBps_1t", d.copy_gbps_1t},
               {"copy_GBps_nt", d.copy_gbps_nt},   {"read_GBps_1t", d.read_gbps_1t},
               {"read_GBps_nt", d.read_gbps_nt},   {"copy_counts", "bytes read + bytes written"}};
  json ks = json::array();
  for (const KernelRoofline& k : r.kernels) {
    ks.push_back({{"codec", k.codec}, {"kernel", k.kernel}, {"batch", k.batch}, {"rows", k.rows}, {"cols", k.cols},
                  {"threads", k.threads}, {"median_us", k.median_us}, {"gweights_per_s", k.gweights_per_s},
                  {"bits_per_weight", k.bits_per_weight}, {"matrices", k.matrices},
                  {"working_set_bytes", k.working_set_bytes}, {"cold", k.cold}});
  }
  j["kernels"] = ks;
  const GpuRoofline& g = r.gpu;
  j["gpu"] = {{"present", g.present}, {"device", g.device}, {"note", g.note}, {"bytes", g.bytes},
              {"h2d_GBps", g.h2d_gbps}, {"d2h_GBps", g.d2h_gbps}, {"device_copy_GBps", g.device_copy_gbps}};
  return j.dump(1);
}

std::string roofline_table(const RooflineResult& r) {
  std::string out;
  char line[1024];
  auto add = [&](const char* fmt, auto... args) {
    if constexpr (sizeof...(args) == 0) {
      out += fmt;  // no arguments: never pass a non-literal format to printf
    } else {
      std::snprintf(line, sizeof(line), fmt, args...);
      out += line;
    }
  };
  add("host: %u cpus, %s, last-level cache %.0f MiB%s (%.1f s)\n", r.cpus, r.isa.c_str(),
      static_cast<double>(r.llc_bytes) / 1048576.0, r.quick ? ", --quick: small sizes, figures not cold" : "",
      r.seconds);
  const StorageRoofline& s = r.storage;
  if (!s.random_read.empty()) {
    add("storage: %s, %.0f MiB test file, %s\n", s.dir.c_str(), static_cast<double>(s.file_bytes) / 1048576.0,
        s.io_mode.c_str());
    if (!s.note.empty()) add("  note: %s\n", s.note.c_str());
    add("  write (with fsync) %8.3f GB/s\n  sequential read    %8.3f GB/s\n", s.write_gbps, s.sequential_read_gbps);
    add("  random read GB/s by block size (rows) and threads (columns):\n  %10s", "block");
    std::vector<uint32_t> threads;
    for (const RandomReadCell& c : s.random_read) {
      if (std::find(threads.begin(), threads.end(), c.threads) == threads.end()) threads.push_back(c.threads);
    }
    for (uint32_t t : threads) add(" %8u", t);
    uint64_t block = 0;
    for (const RandomReadCell& c : s.random_read) {
      if (c.block_bytes != block) {
        block = c.block_bytes;
        if (block >= (1u << 20)) {
          add("\n  %7llu MiB", static_cast<unsigned long long>(block >> 20));
        } else {
          add("\n  %7llu KiB", static_cast<unsigned long long>(block >> 10));
        }
      }
      add(" %8.3f", c.gbps);
    }
    out += "\n";
  }
  const DramRoofline& d = r.dram;
  add("DRAM (%.0f MiB buffers%s): copy %.2f GB/s (1 thread) %.2f GB/s (%u threads), read %.2f / %.2f GB/s\n",
      static_cast<double>(d.buffer_bytes) / 1048576.0, d.larger_than_llc ? "" : ", NOT larger than the LLC",
      d.copy_gbps_1t, d.copy_gbps_nt, d.threads, d.read_gbps_1t, d.read_gbps_nt);
  add("  (copy counts bytes read + written)\n");
  if (!r.kernels.empty()) {
    add("kernels (%ux%u, %u threads):\n  %-9s %5s %10s %12s %6s %5s  %s\n", r.kernels[0].rows, r.kernels[0].cols,
        r.kernels[0].threads, "codec", "batch", "median_us", "Gweights/s", "bits", "cold", "kernel");
    for (const KernelRoofline& k : r.kernels) {
      add("  %-9s %5u %10.1f %12.2f %6.3f %5s  %s\n", k.codec.c_str(), k.batch, k.median_us, k.gweights_per_s,
          k.bits_per_weight, k.cold ? "yes" : "no", k.kernel.c_str());
    }
  }
  if (r.gpu.present) {
    add("GPU %s: host->device %.2f GB/s, device->host %.2f GB/s (pageable), device copy %.1f GB/s\n",
        r.gpu.device.c_str(), r.gpu.h2d_gbps, r.gpu.d2h_gbps, r.gpu.device_copy_gbps);
  } else {
    add("GPU: %s\n", r.gpu.note.c_str());
  }
  return out;
}

}  // namespace submoe::eval
