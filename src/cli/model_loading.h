// Model loading shared by `run`, `eval` and `trace record`: a checkpoint, a
// compressed artifact with resident experts, or an artifact whose routed experts
// are paged through the offload store and cache (--expert-cache-mb > 0).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"
#include "submoe/offload/artifact_offload.h"

namespace submoe::cli {

struct ModelFlags {
  std::string model;
  std::string execution = "fused";
  std::string huge_pages = "auto";  // auto | on | off
  bool allow_extra_tensors = false;
  offload::OffloadFlags offload;
};

// Adds --execution and the offload flags (--model is added by each command).
void add_model_flags(CLI::App* cmd, ModelFlags* flags);

struct LoadedModel {
  std::unique_ptr<model::MoeModel> model;
  bool artifact = false;
  std::string execution;                              // "fused"/"fused-bf16"/"fused-int8"/"reference" for artifacts
  offload::CachedExpertProvider* offload = nullptr;   // owned by the model; null unless offloaded
  double load_seconds = 0;
};

Result<LoadedModel> load_model_for_command(const ModelFlags& flags);

// "" when not offloaded; else e.g. " | expert cache lru 12.0 MB: hit 83.1%, 41 MB read".
std::string offload_summary(const LoadedModel& m);
// null when not offloaded; else the cache figures (budget, policy, hits, misses,
// bytes, hit rate, per layer).
nlohmann::json offload_json(const LoadedModel& m, const ModelFlags& flags);

}  // namespace submoe::cli
