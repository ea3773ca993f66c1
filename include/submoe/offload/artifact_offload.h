// Offload glue for compressed artifacts (docs/format.md section 9): an
// ExpertSource over runtime::Artifact (one byte range per expert, built with
// Artifact::expert_from_bytes), a model whose routed experts are paged through
// store + cache + prefetcher, and the translation of the run/eval flags
// (--expert-cache-mb, --cache-policy, --cache-profile, --prefetch, --io) into
// OffloadOptions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"
#include "submoe/offload/cached_expert_provider.h"
#include "submoe/offload/expert_source.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::offload {

// kUnsupported when the artifact's experts do not all lie in one file; the
// source keeps the artifact alive.
Result<std::shared_ptr<const ExpertSource>> make_artifact_expert_source(
    std::shared_ptr<const runtime::Artifact> artifact, runtime::ExecutionMode mode = runtime::ExecutionMode::kFused);

// The artifact's dense weights with a CachedExpertProvider for the routed
// experts. `provider_out` (optional) receives the provider, owned by the model,
// for reporting its cache statistics.
Result<std::unique_ptr<model::MoeModel>> load_artifact_model_offloaded(
    std::shared_ptr<const runtime::Artifact> artifact, const OffloadOptions& options,
    const runtime::ArtifactModelOptions& load = {}, CachedExpertProvider** provider_out = nullptr);

// The command-line view of OffloadOptions.
struct OffloadFlags {
  double expert_cache_mb = 0;       // --expert-cache-mb: DRAM budget for decoded experts
  std::string cache_policy = "lru"; // --cache-policy lru|lfu|pinned|hybrid
  std::string cache_profile;        // --cache-profile: routing trace (submoe trace record) for pinned/hybrid
  bool prefetch = false;            // --prefetch
  std::string prefetch_from = "previous";  // --prefetch-from previous|affinity|pregate (affinity: --cache-profile's co-routing)
  std::string io = "pread";         // --io pread|direct|uring|uring-direct
  double hybrid_pinned_fraction = 0.5;
};

// Checks the flags against the artifact's shape (a profile must have its layers
// and experts) and loads the profile's popularity. kInvalidArgument naming the
// flag otherwise.
Result<OffloadOptions> offload_options_from_flags(const OffloadFlags& flags, int num_layers, int num_experts);

// Help text for the five flags (for the run/eval commands' --help).
const char* offload_flags_help();

}  // namespace submoe::offload
