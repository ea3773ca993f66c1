#include "cli/model_loading.h"

namespace submoe::cli {

void add_model_flags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--execution", f->execution,
                  "'fused' runs the experts' fused decode+matmul kernels on the packed codes;\n"
                  "'fused-bf16' the same with each expert projection's input rounded to bf16 first (as a bf16\n"
                  "checkpoint computes its experts in transformers; faster batch-1 kernels); on a checkpoint,\n"
                  "every bf16 matrix's input is rounded to bf16 (as llama.cpp's BF16 type computes; on CPUs with\n"
                  "AVX512-BF16 one vdpbf16ps per 32 weights instead of three for exact f32 inputs);\n"
                  "'fused-int8' the same with each expert projection's input quantized to int8, one scale per\n"
                  "token (as llama.cpp does per block; the fastest batch-1 ternary kernel, ~0.8x fused-bf16);\n"
                  "'reference' decodes every expert to dense f32 with the reference decoder (4 bytes per\n"
                  "weight in memory; the oracle the fused kernels are tested against). A checkpoint has no packed\n"
                  "codes: it runs fused-int8 and reference as fused (exact f32 inputs)")
      ->check(CLI::IsMember({"fused", "fused-bf16", "fused-int8", "reference"}))
      ->capture_default_str();
  cmd->add_option("--expert-cache-mb", f->offload.expert_cache_mb,
                  "artifacts: > 0 pages the routed experts from disk into a DRAM cache of this many MB\n"
                  "(dense weights stay resident); 0 = every expert resident")
      ->capture_default_str();
  cmd->add_option("--cache-policy", f->offload.cache_policy,
                  "lru | lfu | pinned (the profile's most popular experts stay resident) | hybrid (a pinned\n"
                  "fraction plus LRU over the rest)")
      ->capture_default_str();
  cmd->add_option("--cache-profile", f->offload.cache_profile,
                  "routing trace (submoe trace record) giving expert popularity for pinned/hybrid");
  cmd->add_option("--hybrid-pinned-fraction", f->offload.hybrid_pinned_fraction,
                  "hybrid: share of the budget for pinned experts")
      ->capture_default_str();
  cmd->add_flag("--prefetch", f->offload.prefetch,
                "prefetch, on a background thread, the experts each layer used at the previous token");
  cmd->add_option("--prefetch-from", f->offload.prefetch_from,
                  "with --prefetch: 'previous' (the experts the next layer used at the previous token) or\n"
                  "'affinity' (the next layer's experts most often routed together with this layer's in the\n"
                  "--cache-profile trace, as many as this layer uses) or 'pregate' (the next layer's router run\n"
                  "on the current hidden state once this layer's experts are loaded: its top-k for every token)")
      ->check(CLI::IsMember({"previous", "affinity", "pregate"}))
      ->capture_default_str();
  cmd->add_option("--huge-pages", f->huge_pages,
                  "'on' copies every dense bf16/f32 matrix of 1 MiB or more into 2 MiB transparent huge pages at\n"
                  "load (the file mapping's pages are released); 'off' computes in place from the file mapping;\n"
                  "'auto' is on for artifacts with every expert resident (their dense part is small), off for\n"
                  "checkpoints and for --expert-cache-mb runs (copies are not reclaimable like the mapping). On saves the\n"
                  "TLB misses of streaming weights in 4 KiB pages (bf16 decode 1.27x faster on a 2-vCPU VM,\n"
                  "artifacts 1.1x, docs/perf-notes.md) and costs load time while the kernel assembles the pages\n"
                  "(a 3.6 GB bf16 checkpoint: 11 s instead of 3.5 s)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_flag("--allow-extra-tensors", f->allow_extra_tensors,
                "run although the checkpoint holds tensors the model does not read (default: an error naming them)");
  cmd->add_option("--io", f->offload.io, "expert reads: pread | direct (O_DIRECT) | uring | uring-direct")
      ->capture_default_str();
}

void add_chat_template_flag(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--chat-template", f->chat_template,
                  "Jinja chat template file (a .jinja text, or a .json with 'chat_template') instead of the\n"
                  "model's chat_template.jinja / tokenizer_config.json chat_template")
      ->check(CLI::ExistingFile);
}

}  // namespace submoe::cli
