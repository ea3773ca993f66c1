#include "cli/trace_replay_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "submoe/core/thread_pool.h"
#include "submoe/offload/artifact_offload.h"
#include "submoe/offload/trace_replay.h"
#include "submoe/runtime/artifact.h"

namespace submoe::cli {
namespace {

using nlohmann::json;

struct ReplayOptions {
  std::string artifact, trace, execution = "fused", predictions;
  offload::OffloadFlags offload;
  uint32_t batch = 1;
  uint64_t tokens = 0;
  int threads = 0;
  bool json = false;
};

bool bypasses_page_cache(const std::string& io) { return io == "direct" || io == "uring-direct"; }

// The largest expert the cache would hold (its budget must take one).
uint64_t largest_expert_bytes(const offload::ExpertSource& source) {
  const std::vector<uint64_t> charges = offload::expert_charges(source);
  return charges.empty() ? 0 : *std::max_element(charges.begin(), charges.end());
}

Status replay(const ReplayOptions& o) {
  if (!(o.offload.expert_cache_mb > 0))
    return invalid_argument("--expert-cache-mb must be > 0 (the DRAM budget the experts are paged into)");
  const bool pregate = o.offload.prefetch_from == "pregate";
  if (pregate != !o.predictions.empty())
    return invalid_argument(pregate ? "--prefetch-from pregate needs --predictions (trace record --predictions-out): a "
                                      "trace holds no hidden states to run the routers on"
                                    : "--predictions only applies to --prefetch --prefetch-from pregate");
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace trace, offload::RoutingTrace::load(o.trace));
  std::optional<offload::RoutingTrace> predictions;
  if (pregate) {
    SUBMOE_ASSIGN_OR_RETURN(predictions, offload::RoutingTrace::load(o.predictions));
  }
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Artifact> artifact, runtime::Artifact::open(o.artifact));
  SUBMOE_ASSIGN_OR_RETURN(runtime::ExecutionMode mode, runtime::parse_execution_mode(o.execution));
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const offload::ExpertSource> source,
                          offload::make_artifact_expert_source(artifact, mode));
  SUBMOE_ASSIGN_OR_RETURN(offload::OffloadOptions opts, offload::offload_options_from_flags(
                                                            o.offload, artifact->num_layers(), artifact->num_experts()));
  const uint64_t largest = largest_expert_bytes(*source);
  if (opts.budget_bytes < largest)
    return invalid_argument("--expert-cache-mb " + std::to_string(o.offload.expert_cache_mb) +
                            " holds no expert: the largest takes " +
                            std::to_string(double(largest) / (1024.0 * 1024.0)) + " MiB");
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<offload::CachedExpertProvider> provider,
                          offload::make_cached_expert_provider(source, opts));
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  offload::TraceReplayOptions ro;
  ro.batch = o.batch;
  ro.max_tokens = o.tokens;
  if (predictions) ro.predictions = &*predictions;
  if (!o.json && isatty(STDERR_FILENO) == 1)
    ro.progress = [](uint64_t done, uint64_t total) {
      std::fprintf(stderr, "\r[trace replay] %llu / %llu tokens", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(total));
      if (done == total) std::fputc('\n', stderr);
    };
  SUBMOE_ASSIGN_OR_RETURN(offload::TraceReplayResult r, offload::replay_trace(trace, *source, *provider, &pool, ro));
  const offload::CacheStats s = provider->cache().stats();
  const char* page_cache = bypasses_page_cache(o.offload.io) ? "bypassed (O_DIRECT)" : "used (reads may be page-cache copies)";
  if (o.json) {
    json layers = json::array();
    for (const auto& l : r.layers) {
      const offload::CacheCounters c =
          static_cast<size_t>(l.model_layer) < s.layers.size() ? s.layers[static_cast<size_t>(l.model_layer)]
                                                               : offload::CacheCounters{};
      layers.push_back({{"layer", l.model_layer}, {"hits", c.hits}, {"misses", c.misses}, {"hit_bytes", c.hit_bytes},
                        {"missed_bytes", c.missed_bytes},
                        {"bytes_read", c.bytes_fetched}, {"read_seconds", l.read_seconds},
                        {"compute_seconds", l.compute_seconds},
                        {"distinct_experts_per_step", r.steps ? double(l.expert_runs) / double(r.steps) : 0.0}});
    }
    json j{{"artifact", o.artifact}, {"trace", o.trace}, {"tokens", r.tokens}, {"steps", r.steps},
                 {"batch", r.batch}, {"threads", threads}, {"execution", o.execution},
                 {"policy", o.offload.cache_policy}, {"expert_cache_mb", o.offload.expert_cache_mb},
                 {"prefetch", o.offload.prefetch ? o.offload.prefetch_from : std::string("off")}, {"io", o.offload.io}, {"page_cache", page_cache},
                 {"store_notice", provider->notice()}, {"hit_rate", s.hit_rate()}, {"byte_hit_rate", s.byte_hit_rate()}, {"hits", s.total.hits},
                 {"misses", s.total.misses}, {"bytes_read", s.total.bytes_fetched}, {"evictions", s.total.evictions},
                 {"overcommits", s.overcommits}, {"peak_resident_bytes", s.peak_resident_bytes},
                 {"prefetched", s.prefetched}, {"prefetch_hits", s.prefetch_hits}, {"prefetch_wasted", s.prefetch_wasted},
                 {"read_seconds", r.read_seconds}, {"compute_seconds", r.compute_seconds},
                 {"wall_seconds", r.wall_seconds}, {"tokens_per_s", r.tokens_per_s()},
                 {"distinct_experts_per_layer_step", r.mean_distinct_experts()}, {"per_layer", layers}};
    if (const offload::Prefetcher* p = provider->prefetcher()) {
      const offload::PrefetcherStats ps = p->stats();
      j["prefetcher"] = {{"requested", ps.requested}, {"cancelled", ps.cancelled}, {"loaded", ps.loaded},
                          {"present", ps.present},     {"no_room", ps.no_room},     {"dropped", ps.dropped},
                          {"failed", ps.failed}};
    }
    std::cout << j.dump() << "\n";
    return Status::ok();
  }
  std::printf("%llu tokens in %llu steps of %u, %d threads, %s experts, %s cache of %.1f MB%s, io %s (page cache %s)\n",
              static_cast<unsigned long long>(r.tokens), static_cast<unsigned long long>(r.steps), r.batch, threads,
              o.execution.c_str(), o.offload.cache_policy.c_str(), o.offload.expert_cache_mb,
              o.offload.prefetch ? " with prefetch" : "", o.offload.io.c_str(), page_cache);
  if (!provider->notice().empty()) std::printf("note: %s\n", provider->notice().c_str());
  std::printf("hit rate %.2f%% (%llu hits, %llu misses; %.2f%% by bytes), %.1f MB read, %llu evictions\n", 100 * s.hit_rate(),
              static_cast<unsigned long long>(s.total.hits), static_cast<unsigned long long>(s.total.misses),
              100 * s.byte_hit_rate(), double(s.total.bytes_fetched) / 1e6, static_cast<unsigned long long>(s.total.evictions));
  std::printf("read %.3f s, compute %.3f s, wall %.3f s: %.1f tokens/s; %.2f distinct experts per layer and step\n",
              r.read_seconds, r.compute_seconds, r.wall_seconds, r.tokens_per_s(), r.mean_distinct_experts());
  return Status::ok();
}

}  // namespace

void setup_trace_replay(CLI::App* trace) {
  auto* cmd = trace->add_subcommand("replay",
      "Execute a recorded trace's routing on an artifact's experts: for every token (B at a time with\n"
      "--batch) and every MoE layer, the routed experts are acquired through the expert cache (misses\n"
      "read from the artifact file with --io, O_DIRECT with direct / uring-direct so cold reads bypass\n"
      "the page cache) and run with the fused kernels on a fixed random input. The trace's layer and\n"
      "expert counts must match the artifact's (synth-model makes an artifact of a real MoE's width with\n"
      "the embedded model's layout). Prints hit rate, bytes read, read and compute seconds and tokens/s\n"
      "(or one JSON object with --json, with per-layer figures).");
  auto o = std::make_shared<ReplayOptions>();
  cmd->add_option("--artifact", o->artifact, "compressed artifact directory")->required();
  cmd->add_option("--trace", o->trace, "routing trace (submoe trace record)")->required();
  cmd->add_option("--expert-cache-mb", o->offload.expert_cache_mb, "DRAM budget for the experts, MB (> 0)")->required();
  cmd->add_option("--policy", o->offload.cache_policy, "lru | lfu | pinned | hybrid")->capture_default_str();
  cmd->add_option("--cache-profile", o->offload.cache_profile,
                  "trace giving expert popularity for pinned/hybrid and co-routing for --prefetch-from affinity\n"
                  "(a profiling trace; the replayed trace itself gives an optimistic bound)");
  cmd->add_option("--hybrid-pinned-fraction", o->offload.hybrid_pinned_fraction, "hybrid: share of the budget pinned")
      ->capture_default_str();
  cmd->add_flag("--prefetch", o->offload.prefetch,
                "prefetch on a background thread the experts each layer used at the previous step");
  cmd->add_option("--prefetch-from", o->offload.prefetch_from,
                  "with --prefetch: previous (the next layer's experts of the previous step), affinity (the next\n"
                  "layer's experts most co-routed with this layer's in --cache-profile) or pregate (the next layer's\n"
                  "experts its router chose on this layer's hidden state, from --predictions)")
      ->check(CLI::IsMember({"previous", "affinity", "pregate"}))
      ->capture_default_str();
  cmd->add_option("--predictions", o->predictions,
                  "pre-gating's predictions recorded with the trace (trace record --predictions-out), for\n"
                  "--prefetch-from pregate");
  cmd->add_option("--io", o->offload.io, "expert reads: pread | direct (O_DIRECT) | uring | uring-direct")
      ->check(CLI::IsMember({"pread", "direct", "uring", "uring-direct"}))
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "tokens per step: each layer acquires the union of their experts once")
      ->check(CLI::Range(1u, offload::kMaxReplayBatch))
      ->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "replay at most this many tokens of the trace; 0 = all")->capture_default_str();
  cmd->add_option("--execution", o->execution, "fused | fused-bf16 | fused-int8 | reference (as in run)")
      ->check(CLI::IsMember({"fused", "fused-bf16", "fused-int8", "reference"}))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o] { report("trace replay", replay(*o)); });
}

}  // namespace submoe::cli
