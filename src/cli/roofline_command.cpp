// `submoe roofline`: the host's storage, DRAM, kernel and GPU limits, measured.
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "submoe/eval/roofline.h"
#include "submoe/io/file_util.h"

namespace submoe::cli {
namespace {

struct RooflineArgs {
  eval::RooflineOptions options;
  bool quick = false;
  bool json = false;
  bool no_kernels = false;
  bool no_gpu = false;
  std::string out;
};

void setup_roofline(CLI::App& root) {
  static RooflineArgs a;
  auto* cmd = root.add_subcommand(
      "roofline",
      "Measure this host's limits for offloaded MoE decoding (seed 001, 'Host Roofline'):\n"
      "  storage: a test file of --file-mb MiB is written to --dir (and deleted at the end), then\n"
      "    a sequential pass and random reads of 64 KiB..16 MiB blocks with 1, 2, 4, 8 threads,\n"
      "    unbuffered (O_DIRECT; when the filesystem refuses it, buffered reads with\n"
      "    posix_fadvise(DONTNEED) after every block, and a note says so);\n"
      "  DRAM: memcpy (bytes read + written) and a streaming sum over buffers 2x the last-level\n"
      "    cache (64..512 MiB), 1 thread and all threads, best of 4;\n"
      "  kernels: Gweights/s of the fused ternary kernels (qmoe, tunstall) and the dense bf16\n"
      "    GEMV at batch 1 and 32 on a 2048x8192 matrix (T1's expert), working set > 2x LLC;\n"
      "  GPU (CUDA build with a device): host<->device and device-to-device copy bandwidth.\n"
      "Output: a table, or with --json one JSON object (\"format\": \"submoe-roofline\"),\n"
      "the input of 'submoe project --roofline'. Takes about 1-2 minutes (--quick: ~10 s).");
  cmd->add_option("--dir", a.options.dir, "Directory on the storage device to measure")->required();
  static CLI::Option* file_mb_option = nullptr;
  file_mb_option = cmd->add_option("--file-mb", a.options.file_mb, "Test file size in MiB (--quick: 64 unless given)")
                       ->capture_default_str();
  cmd->add_option("--cell-seconds", a.options.cell_seconds, "Seconds per random-read cell (block x threads)")
      ->capture_default_str();
  cmd->add_option("--threads", a.options.compute_threads, "Threads for DRAM and kernels (0 = all)")
      ->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--quick", a.quick,
                "About 10 s: 64 MiB file, 50 ms cells, 16 MiB DRAM buffers, a 256x1024 kernel shape "
                "(figures are not cold; for tests)");
  cmd->add_flag("--no-kernels", a.no_kernels, "Skip the kernel measurements");
  cmd->add_flag("--no-gpu", a.no_gpu, "Skip the GPU measurements");
  cmd->add_flag("--json", a.json, "Print one JSON object instead of the table");
  cmd->add_option("--out", a.out, "Also write the JSON object to this file (atomically)");
  cmd->callback([] {
    eval::RooflineOptions o = a.options;
    if (a.quick) {
      const uint64_t file_mb = o.file_mb;
      eval::apply_quick_roofline(&o);
      if (file_mb_option->count() > 0) o.file_mb = file_mb;  // an explicit --file-mb wins
    }
    o.kernels = !a.no_kernels;
    o.gpu = !a.no_gpu;
    auto r = eval::run_roofline(o, [](const std::string& s) { std::fprintf(stderr, "roofline: %s\n", s.c_str()); });
    if (!report("roofline", r.status())) return;
    const std::string json = eval::roofline_json(*r);
    if (!a.out.empty() && !report("roofline", io::write_file_atomic(a.out, json + "\n"))) return;
    if (a.json) {
      std::cout << json << "\n";
    } else {
      std::cout << eval::roofline_table(*r);
    }
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("roofline", setup_roofline);
}  // namespace submoe::cli
