#include "cli/model_loading.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "submoe/runtime/artifact_model.h"

namespace submoe::cli {

void add_model_flags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--execution", f->execution,
                  "artifacts only: 'fused' runs the experts' fused decode+matmul kernels on the packed codes;\n"
                  "'fused-bf16' the same with each expert projection's input rounded to bf16 first (as a bf16\n"
                  "checkpoint computes its experts in transformers; faster batch-1 kernels);\n"
                  "'fused-int8' the same with each expert projection's input quantized to int8, one scale per\n"
                  "token (as llama.cpp does per block; the fastest batch-1 ternary kernel, ~0.8x fused-bf16);\n"
                  "'reference' decodes every expert to dense f32 with the reference decoder (4 bytes per\n"
                  "weight in memory; the oracle the fused kernels are tested against)")
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

Result<LoadedModel> load_model_for_command(const ModelFlags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel out;
  out.artifact = runtime::is_artifact(f.model);
  runtime::ArtifactModelOptions options;
  SUBMOE_ASSIGN_OR_RETURN(options.execution, runtime::parse_execution_mode(f.execution));
  out.execution = runtime::execution_mode_name(options.execution);
  options.allow_unused_tensors = f.allow_extra_tensors;
  // auto: artifacts with every expert resident; a paged run (--expert-cache-mb)
  // is sized to its memory, and copies would not be reclaimable like the mapping.
  const bool huge =
      f.huge_pages == "on" || (f.huge_pages == "auto" && out.artifact && f.offload.expert_cache_mb == 0);
  options.dense_storage = huge ? model::DenseStorage::kHugePageCopy : model::DenseStorage::kInPlace;
  if (!(f.offload.expert_cache_mb >= 0) || !std::isfinite(f.offload.expert_cache_mb))  // NaN fails too
    return invalid_argument("--expert-cache-mb must be a finite number >= 0");
  if (out.artifact) {
    SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Artifact> a, runtime::Artifact::open(f.model));
    if (const std::string note = a->integrity_note(); !note.empty()) std::cerr << note << "\n";
    if (f.offload.expert_cache_mb > 0) {
      SUBMOE_ASSIGN_OR_RETURN(offload::OffloadOptions oo,
                              offload::offload_options_from_flags(f.offload, a->num_layers(), a->num_experts()));
      SUBMOE_ASSIGN_OR_RETURN(out.model,
                              offload::load_artifact_model_offloaded(a, oo, options, &out.offload));
    } else {
      SUBMOE_ASSIGN_OR_RETURN(out.model, runtime::load_artifact_model(a, options));
    }
  } else {
    if (f.offload.expert_cache_mb > 0)
      return invalid_argument("--expert-cache-mb applies to compressed artifacts (submoe compress) only");
    model::LoadWeightsOptions o;
    o.allow_unused_tensors = f.allow_extra_tensors;
    o.dense_storage = options.dense_storage;
    SUBMOE_ASSIGN_OR_RETURN(out.model, model::MoeModel::load(f.model, o));
  }
  out.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string offload_summary(const LoadedModel& m) {
  if (!m.offload) return "";
  const offload::CacheStats s = m.offload->cache().stats();
  char buf[256];
  std::snprintf(buf, sizeof(buf), " | expert cache %.1f MB: hit %.1f%%, %.1f MB read, peak %.1f MB",
                static_cast<double>(m.offload->cache().options().budget_bytes) / 1e6, 100.0 * s.hit_rate(),
                static_cast<double>(s.total.bytes_fetched) / 1e6, static_cast<double>(s.peak_resident_bytes) / 1e6);
  return buf;
}

nlohmann::json offload_json(const LoadedModel& m, const ModelFlags& f) {
  if (!m.offload) return nullptr;
  const offload::CacheStats s = m.offload->cache().stats();
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : s.layers)
    layers.push_back({{"hits", l.hits}, {"misses", l.misses}, {"bytes_fetched", l.bytes_fetched}, {"evictions", l.evictions}});
  return {{"budget_bytes", m.offload->cache().options().budget_bytes},
          {"policy", f.offload.cache_policy},
          {"prefetch", f.offload.prefetch},
          {"io", f.offload.io},
          {"hits", s.total.hits},
          {"misses", s.total.misses},
          {"hit_rate", s.hit_rate()},
          {"bytes_fetched", s.total.bytes_fetched},
          {"evictions", s.total.evictions},
          {"peak_resident_bytes", s.peak_resident_bytes},
          {"overcommits", s.overcommits},
          {"prefetched", s.prefetched},
          {"prefetch_hits", s.prefetch_hits},
          {"prefetch_wasted", s.prefetch_wasted},
          {"layers", layers}};
}

}  // namespace submoe::cli
