#include "submoe/serve/engine.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "submoe/core/clock.h"
#include "submoe/io/file_util.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/expert_store.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::serve {
namespace {

// generation_config.json's eos_token_id (int or list), which is what HF generate()
// stops on; an absent file or key adds nothing.
Status add_generation_config_eos(const std::string& dir, std::set<int64_t>* eos) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::ok();
  SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_file_to_string(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt_data(path + ": not a JSON object");
  if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) return Status::ok();
  const nlohmann::json& e = j["eos_token_id"];
  if (e.is_number_integer()) {
    eos->insert(e.get<int64_t>());
  } else if (e.is_array()) {
    for (const auto& x : e) {
      if (!x.is_number_integer()) return corrupt_data(path + ": eos_token_id list holds a non-integer");
      eos->insert(x.get<int64_t>());
    }
  } else {
    return corrupt_data(path + ": eos_token_id must be an integer or a list of integers");
  }
  return Status::ok();
}

}  // namespace

Result<LoadedModel> load_model(const LoadOptions& f) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel out;
  out.artifact = runtime::is_artifact(f.model);
  runtime::ArtifactModelOptions options;
  SUBMOE_ASSIGN_OR_RETURN(options.execution, runtime::parse_execution_mode(f.execution));
  out.execution = runtime::execution_mode_name(options.execution);
  // A checkpoint has no packed codes: only the input rounding of fused-bf16 applies.
  if (!out.artifact && options.execution != runtime::ExecutionMode::kFusedBf16) out.execution = "fused";
  options.allow_unused_tensors = f.allow_extra_tensors;
  if (f.huge_pages != "auto" && f.huge_pages != "on" && f.huge_pages != "off")
    return invalid_argument("huge pages must be auto, on or off, not '" + f.huge_pages + "'");
  // auto: artifacts with every expert resident; a paged run (--expert-cache-mb)
  // is sized to its memory, and copies would not be reclaimable like the mapping.
  const bool huge =
      f.huge_pages == "on" || (f.huge_pages == "auto" && out.artifact && f.offload.expert_cache_mb == 0);
  options.dense_storage = huge ? model::DenseStorage::kHugePageCopy : model::DenseStorage::kInPlace;
  if (!(f.offload.expert_cache_mb >= 0) || !std::isfinite(f.offload.expert_cache_mb))  // NaN fails too
    return invalid_argument("--expert-cache-mb must be a finite number >= 0");
  // Unknown cache and I/O names are errors even when nothing is paged (they would
  // be ignored silently otherwise).
  if (auto p = offload::parse_cache_policy(f.offload.cache_policy); !p.is_ok())
    return p.status().with_context("--cache-policy");
  if (auto io = offload::parse_io_backend(f.offload.io); !io.is_ok()) return io.status().with_context("--io");
  if (out.artifact) {
    SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Artifact> a, runtime::Artifact::open(f.model));
    if (const std::string note = a->integrity_note(); !note.empty()) std::cerr << note << "\n";
    if (f.offload.expert_cache_mb > 0) {
      SUBMOE_ASSIGN_OR_RETURN(offload::OffloadOptions oo,
                              offload::offload_options_from_flags(f.offload, a->num_layers(), a->num_experts()));
      SUBMOE_ASSIGN_OR_RETURN(out.model, offload::load_artifact_model_offloaded(a, oo, options, &out.offload));
    } else {
      SUBMOE_ASSIGN_OR_RETURN(out.model, runtime::load_artifact_model(a, options));
    }
  } else {
    if (f.offload.expert_cache_mb > 0)
      return invalid_argument("--expert-cache-mb applies to compressed artifacts (submoe compress) only");
    model::LoadWeightsOptions o;
    o.allow_unused_tensors = f.allow_extra_tensors;
    o.dense_storage = options.dense_storage;
    // A checkpoint's experts are dense matrices too: fused-bf16 rounds every
    // projection's input to bf16 (as llama.cpp's BF16 computes); fused and
    // fused-int8 keep f32 inputs (no int8 path for dense weights).
    if (options.execution == runtime::ExecutionMode::kFusedBf16)
      o.dense_activations = kernels::ActivationType::kBF16;
    SUBMOE_ASSIGN_OR_RETURN(out.model, model::MoeModel::load(f.model, o));
  }
  out.load_seconds = seconds_since(t0);
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

nlohmann::json offload_json(const LoadedModel& m, const LoadOptions& f) {
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
          {"byte_hit_rate", s.byte_hit_rate()},
          {"bytes_fetched", s.total.bytes_fetched},
          {"evictions", s.total.evictions},
          {"peak_resident_bytes", s.peak_resident_bytes},
          {"overcommits", s.overcommits},
          {"prefetched", s.prefetched},
          {"prefetch_hits", s.prefetch_hits},
          {"prefetch_wasted", s.prefetch_wasted},
          {"layers", layers}};
}

Result<std::unique_ptr<Engine>> Engine::load(const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  SUBMOE_ASSIGN_OR_RETURN(LoadedModel loaded, load_model(options));
  SUBMOE_ASSIGN_OR_RETURN(io::Tokenizer tokenizer, io::Tokenizer::load(options.model));
  std::unique_ptr<Engine> e(new Engine(options, std::move(loaded), std::move(tokenizer)));
  const auto& model_eos = e->loaded_.model->eos_token_ids();
  e->eos_ids_.insert(model_eos.begin(), model_eos.end());
  if (e->tokenizer_.eos_id()) e->eos_ids_.insert(*e->tokenizer_.eos_id());
  SUBMOE_RETURN_IF_ERROR(add_generation_config_eos(options.model, &e->eos_ids_));
  if (!options.chat_template.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::from_file(options.chat_template, options.model));
    e->chat_template_ = std::move(t);
  } else if (Result<std::optional<ChatTemplate>> own = ChatTemplate::from_model_dir(options.model); own.is_ok()) {
    e->chat_template_ = std::move(own).value();
    if (!e->chat_template_)
      e->chat_template_status_ = not_found("the model has no chat template (tokenizer_config.json has no chat_template "
                                           "and there is no chat_template.jinja); give one with --chat-template FILE");
  } else {
    // Generation without chat stays available; the chat route reports this.
    e->chat_template_status_ = own.status();
  }
  e->load_seconds_ = seconds_since(t0);
  return e;
}

Result<std::vector<int32_t>> Engine::encode_chat_prompt(std::string_view rendered, bool allow_long_context,
                                                        std::string_view context_hint) const {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_.encode_lossless(rendered, /*add_special_tokens=*/false));
  if (ids.empty()) return invalid_argument("the chat template rendered an empty prompt");
  SUBMOE_RETURN_IF_ERROR(check_prompt(ids, allow_long_context, context_hint));
  return ids;
}

Status Engine::check_prompt(std::span<const int32_t> ids, bool allow_long_context,
                            std::string_view context_hint) const {
  if (ids.empty()) return invalid_argument("the prompt has no tokens");
  const int64_t vocab = loaded_.model->config().vocab_size;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return invalid_argument("prompt token " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                              ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  const int64_t context = context_length();
  if (context > 0 && !allow_long_context && static_cast<int64_t>(ids.size()) > context) {
    std::string m = "the prompt has " + std::to_string(ids.size()) + " tokens, beyond the model's context of ";
    m += std::to_string(context);
    m += " positions (max_position_embeddings)";
    m += context_hint;
    return invalid_argument(std::move(m));
  }
  return Status::ok();
}

Result<std::vector<int32_t>> Engine::encode_prompt(std::string_view text, bool allow_long_context,
                                                   std::string_view context_hint) const {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_.encode_lossless(text, /*add_special_tokens=*/true));
  if (ids.empty()) {
    if (!tokenizer_.bos_id()) return invalid_argument("the prompt is empty and the tokenizer has no BOS token to start from");
    ids.push_back(*tokenizer_.bos_id());
  }
  SUBMOE_RETURN_IF_ERROR(check_prompt(ids, allow_long_context, context_hint));
  return ids;
}

}  // namespace submoe::serve
