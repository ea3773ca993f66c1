// `submoe info`: what this build and this CPU support.
#include <iostream>

#include "cli/command.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/thread_pool.h"

namespace submoe::cli {
namespace {

void setup_info(CLI::App& root) {
  auto* cmd = root.add_subcommand("info", "Print the CPU features, the kernel ISA chosen and build options");
  cmd->callback([] {
    const CpuFeatures& f = cpu_features();
    std::cout << "hardware threads: " << hardware_threads() << "\n"
              << "avx2: " << f.avx2 << "  avx512: " << f.avx512 << "  avx512_bf16: " << f.avx512_bf16
              << "  avx512_vnni: " << f.avx512_vnni << "  avx512_vbmi: " << f.avx512_vbmi << "\n"
              << "kernel isa: " << isa_name(best_isa()) << " (cap with SUBMOE_MAX_ISA)\n"
#ifdef SUBMOE_HAVE_CUDA
              << "cuda: compiled in\n";
#else
              << "cuda: not compiled\n";
#endif
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("info", setup_info);
}  // namespace submoe::cli
