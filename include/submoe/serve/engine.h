// A loaded model ready to generate: the model (checkpoint, artifact with resident
// experts, or artifact whose routed experts are paged through the offload store
// and cache), its tokenizer, the token ids generation stops at and the context
// bound. Loaded once, immutable afterwards and shared by every request; all that
// belongs to one request (KV cache, sampler, scratch) lives in its own objects
// (model::Session, serve::Sequence). `run`, `eval`, `trace record` and `serve`
// load through here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "submoe/core/status.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"
#include "submoe/offload/artifact_offload.h"
#include "submoe/serve/chat_template.h"

namespace submoe::serve {

struct LoadOptions {
  std::string model;                 // checkpoint or artifact directory
  std::string execution = "fused";   // artifacts: fused | fused-bf16 | fused-int8 | reference
  std::string huge_pages = "auto";   // auto | on | off
  bool allow_extra_tensors = false;
  offload::OffloadFlags offload;     // expert_cache_mb > 0 pages an artifact's experts
  std::string chat_template;         // a template file overriding the model's ("" = the model's own)
};

struct LoadedModel {
  std::unique_ptr<model::MoeModel> model;
  bool artifact = false;
  std::string execution;                             // artifacts: the execution mode's name
  offload::CachedExpertProvider* offload = nullptr;  // owned by the model; null unless offloaded
  double load_seconds = 0;
};

// The model alone (no tokenizer): what eval and trace record need.
Result<LoadedModel> load_model(const LoadOptions& options);

// "" when not offloaded; else e.g. " | expert cache 12.0 MB: hit 83.1%, 41.0 MB read, peak 11.9 MB".
std::string offload_summary(const LoadedModel& m);
// null when not offloaded; else the cache figures (budget, policy, hits, misses,
// bytes, hit rate, prefetch, per layer).
nlohmann::json offload_json(const LoadedModel& m, const LoadOptions& options);

class Engine {
 public:
  // Model, tokenizer (tokenizer.json of the same directory) and the EOS ids:
  // config.json's eos_token_id, the tokenizer's EOS token and
  // generation_config.json's eos_token_id (an integer or a list), all of them.
  static Result<std::unique_ptr<Engine>> load(const LoadOptions& options);

  const model::MoeModel& model() const { return *loaded_.model; }
  const LoadedModel& loaded() const { return loaded_; }
  const io::Tokenizer& tokenizer() const { return tokenizer_; }
  const LoadOptions& options() const { return options_; }
  const std::set<int64_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int32_t id) const { return eos_ids_.count(id) != 0; }
  // max_position_embeddings; 0 when config.json has none (no bound).
  int64_t context_length() const { return loaded_.model->config().max_position_embeddings; }
  // The chat template: --chat-template's file, else the model's own; null when
  // there is none or the model's own cannot be parsed (chat_template_status()
  // says why; an unusable --chat-template file fails load() instead).
  const ChatTemplate* chat_template() const { return chat_template_ ? &*chat_template_ : nullptr; }
  const Status& chat_template_status() const { return chat_template_status_; }
  // Seconds the model and tokenizer took to load.
  double load_seconds() const { return load_seconds_; }

  // Token ids of a prompt text (special tokens added as the tokenizer's
  // post-processor says); an empty prompt starts from BOS. kInvalidArgument when
  // the tokenizer would drop characters, when the prompt is empty and there is no
  // BOS, or when it is longer than the context (unless allow_long_context).
  Result<std::vector<int32_t>> encode_prompt(std::string_view text, bool allow_long_context,
                                             std::string_view context_hint = {}) const;
  // Token ids of a rendered chat prompt: special tokens in the text (<|im_start|>,
  // the BOS the template wrote) become their ids and nothing is added, as
  // apply_chat_template(tokenize=True) does; then the checks of encode_prompt.
  Result<std::vector<int32_t>> encode_chat_prompt(std::string_view rendered, bool allow_long_context,
                                                  std::string_view context_hint = {}) const;
  // The same checks for prompt token ids given directly (ids within the
  // vocabulary). `context_hint` is appended to the message of a prompt beyond the
  // context (e.g. the flag that lifts the bound).
  Status check_prompt(std::span<const int32_t> ids, bool allow_long_context, std::string_view context_hint = {}) const;

 private:
  Engine(LoadOptions options, LoadedModel loaded, io::Tokenizer tokenizer)
      : options_(std::move(options)), loaded_(std::move(loaded)), tokenizer_(std::move(tokenizer)) {}

  LoadOptions options_;
  LoadedModel loaded_;
  io::Tokenizer tokenizer_;
  std::set<int64_t> eos_ids_;
  std::optional<ChatTemplate> chat_template_;
  Status chat_template_status_;
  double load_seconds_ = 0;
};

}  // namespace submoe::serve
