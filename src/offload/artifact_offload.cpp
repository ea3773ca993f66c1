#include "submoe/offload/artifact_offload.h"

#include <cmath>

#include "submoe/core/memory_usage.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::offload {
namespace {

class ArtifactExpertObject final : public ExpertObject {
 public:
  explicit ArtifactExpertObject(std::unique_ptr<runtime::LoadedExpert> e) : expert_(std::move(e)) {}
  model::ExpertOps ops() const override { return expert_->ops(); }
  uint64_t resident_bytes() const override { return expert_->weight_bytes(); }

 private:
  std::unique_ptr<runtime::LoadedExpert> expert_;
};

class ArtifactExpertSource final : public ExpertSource {
 public:
  ArtifactExpertSource(std::shared_ptr<const runtime::Artifact> artifact, std::string path, runtime::ExecutionMode mode)
      : artifact_(std::move(artifact)), path_(std::move(path)), mode_(mode) {}

  int num_layers() const override { return artifact_->num_layers(); }
  int num_experts() const override { return artifact_->num_experts(); }
  const std::string& file_path() const override { return path_; }

  Result<ByteRange> byte_range(ExpertKey key) const override {
    SUBMOE_ASSIGN_OR_RETURN(runtime::ExpertByteRange r, artifact_->expert_byte_range(key.layer, key.expert));
    return ByteRange{r.offset, r.length};
  }

  // Fused ops keep the packed fields (about the range); reference decoding
  // keeps three f32 matrices.
  uint64_t estimate_resident_bytes(ExpertKey key, ByteRange range) const override {
    (void)key;
    if (mode_ != runtime::ExecutionMode::kReferenceDecode) return range.length;
    return uint64_t{3} * artifact_->expert_hidden() * artifact_->expert_inner() * sizeof(float);
  }

  Result<std::unique_ptr<ExpertObject>> decode(ExpertKey key, IoBuffer&& bytes) const override {
    // expert_from_bytes copies what it keeps, so the read buffer is freed here.
    const std::span<const uint8_t> b = bytes.bytes();
    SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<runtime::LoadedExpert> e,
                            artifact_->expert_from_bytes(key.layer, key.expert,
                                                         std::as_bytes(std::span<const uint8_t>(b.data(), b.size())), mode_));
    return std::unique_ptr<ExpertObject>(new ArtifactExpertObject(std::move(e)));
  }

 private:
  std::shared_ptr<const runtime::Artifact> artifact_;
  std::string path_;
  runtime::ExecutionMode mode_;
};

}  // namespace

Result<std::shared_ptr<const ExpertSource>> make_artifact_expert_source(std::shared_ptr<const runtime::Artifact> artifact,
                                                                        runtime::ExecutionMode mode) {
  if (!artifact) return invalid_argument("offload: no artifact");
  std::string path;
  for (int l = 0; l < artifact->num_layers(); ++l)
    for (int e = 0; e < artifact->num_experts(); ++e) {
      if (!artifact->has_expert(l, e)) continue;
      SUBMOE_ASSIGN_OR_RETURN(runtime::ExpertByteRange r, artifact->expert_byte_range(l, e));
      if (path.empty()) path = r.path;
      if (r.path != path)
        return unsupported("offload: the experts of '" + artifact->directory() + "' lie in several files ('" + path +
                           "', '" + r.path + "'); the expert store reads one");
    }
  if (path.empty()) return invalid_argument("offload: '" + artifact->directory() + "' has no routed experts");
  return std::shared_ptr<const ExpertSource>(std::make_shared<ArtifactExpertSource>(std::move(artifact), path, mode));
}

Result<std::unique_ptr<model::MoeModel>> load_artifact_model_offloaded(std::shared_ptr<const runtime::Artifact> artifact,
                                                                       const OffloadOptions& options,
                                                                       const runtime::ArtifactModelOptions& load,
                                                                       CachedExpertProvider** provider_out) {
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const ExpertSource> source,
                          make_artifact_expert_source(artifact, load.execution));
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<CachedExpertProvider> provider, make_cached_expert_provider(source, options));
  SUBMOE_ASSIGN_OR_RETURN(model::ModelWeights w,
                          runtime::load_artifact_dense_weights(artifact, load.allow_unused_tensors, load.execution,
                                                                      load.dense_storage));
  if (provider_out) *provider_out = provider.get();
  w.experts = std::move(provider);
  return model::MoeModel::create(artifact->model_config(), std::move(w));
}

Result<OffloadOptions> offload_options_from_flags(const OffloadFlags& flags, int num_layers, int num_experts) {
  OffloadOptions o;
  if (!(flags.expert_cache_mb >= 0) || !std::isfinite(flags.expert_cache_mb))
    return invalid_argument("--expert-cache-mb must be a finite number >= 0");
  // A DRAM cache larger than the machine's memory cannot be held (and a huge
  // number would wrap when converted to bytes).
  const double ram_mb = static_cast<double>(physical_memory_bytes()) / (1024.0 * 1024.0);
  if (ram_mb > 0 && flags.expert_cache_mb > ram_mb)
    return invalid_argument("--expert-cache-mb " + std::to_string(flags.expert_cache_mb) +
                            " exceeds this machine's memory (" + std::to_string(static_cast<uint64_t>(ram_mb)) +
                            " MB)");
  o.budget_bytes = static_cast<uint64_t>(flags.expert_cache_mb * 1024.0 * 1024.0);
  auto policy = parse_cache_policy(flags.cache_policy);
  if (!policy.is_ok()) return policy.status().with_context("--cache-policy");
  if (*policy == CachePolicy::kBelady || *policy == CachePolicy::kForecast)
    return invalid_argument(std::string("--cache-policy: ") + cache_policy_name(*policy) +
                            " exists only in `trace simulate`" + (*policy == CachePolicy::kBelady ? " (it needs the future)" : ""));
  o.policy = *policy;
  auto io = parse_io_backend(flags.io);
  if (!io.is_ok()) return io.status().with_context("--io");
  o.store.backend = *io;
  o.prefetch = flags.prefetch;
  o.hybrid_pinned_fraction = flags.hybrid_pinned_fraction;
  if (flags.prefetch_from != "previous" && flags.prefetch_from != "affinity" && flags.prefetch_from != "pregate")
    return invalid_argument("--prefetch-from '" + flags.prefetch_from + "': expected previous, affinity or pregate");
  const bool affinity = flags.prefetch_from == "affinity";
  if (flags.prefetch_from != "previous" && !flags.prefetch)
    return invalid_argument("--prefetch-from " + flags.prefetch_from + " needs --prefetch");
  if (affinity) o.prefetch_from = OffloadOptions::PrefetchFrom::kAffinity;
  if (flags.prefetch_from == "pregate") o.prefetch_from = OffloadOptions::PrefetchFrom::kPregate;
  const bool pins = o.policy == CachePolicy::kPinned || o.policy == CachePolicy::kHybrid;
  const bool wants_profile = pins || affinity;
  if (wants_profile && flags.cache_profile.empty())
    return invalid_argument(pins ? std::string("--cache-policy ") + cache_policy_name(o.policy) +
                                       " needs --cache-profile (a routing trace from `submoe trace record`)"
                                 : std::string("--prefetch-from affinity needs --cache-profile (a routing trace from "
                                               "`submoe trace record` whose co-routing ranks the next layer's experts)"));
  if (!wants_profile && !flags.cache_profile.empty())
    return invalid_argument("--cache-profile only applies to --cache-policy pinned or hybrid and --prefetch-from affinity");
  if (wants_profile) {
    SUBMOE_ASSIGN_OR_RETURN(RoutingTrace trace, RoutingTrace::load(flags.cache_profile));
    if (trace.num_layers() != static_cast<uint32_t>(num_layers) || trace.num_experts() != static_cast<uint32_t>(num_experts))
      return invalid_argument("--cache-profile '" + flags.cache_profile + "' has " + std::to_string(trace.num_layers()) +
                              " layers x " + std::to_string(trace.num_experts()) + " experts, the model " +
                              std::to_string(num_layers) + " x " + std::to_string(num_experts));
    if (pins) o.popularity = expert_popularity(trace);
    if (affinity) o.affinity = expert_affinity(trace);
  }
  return o;
}

const char* offload_flags_help() {
  return "Expert offload (compressed artifacts): routed experts are read from model.safetensors on demand,\n"
         "one byte range per expert, and kept decoded in a DRAM cache.\n"
         "  --expert-cache-mb MB   cache budget in MiB (default 0: only the experts in use stay in memory)\n"
         "  --cache-policy P       lru (default), lfu, pinned (the --cache-profile's most used experts stay,\n"
         "                         nothing else is kept), hybrid (half the budget pinned, LRU over the rest)\n"
         "  --cache-profile TRACE  routing trace (`submoe trace record`) giving expert popularity for pinned/hybrid\n"
         "  --prefetch             load the previous token's experts of the next layer in the background\n"
         "  --prefetch-from affinity  instead the next layer's experts most co-routed with this layer's in\n"
         "                         the --cache-profile trace\n"
         "  --io B                 pread (default), direct (O_DIRECT, bypasses the page cache), uring,\n"
         "                         uring-direct; falls back to buffered reads where refused, with a notice\n";
}

}  // namespace submoe::offload
