// A model's chat template, rendered as transformers' apply_chat_template does:
// chat_template.jinja in the model directory, else tokenizer_config.json's
// chat_template (a string, or a list of named templates: "tool_use" when tools
// are given and it exists, else "default"), or a file the user names
// (--chat-template). The template sees messages, tools, documents (none),
// add_generation_prompt, the tokenizer's special tokens (bos_token, eos_token,
// ...), strftime_now and any chat_template_kwargs of the request.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "submoe/core/status.h"
#include "submoe/jinja/template.h"

namespace submoe::serve {

struct ChatTemplateInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role", "content", ...}]
  nlohmann::ordered_json tools;                                        // null or a list of tool schemas
  bool add_generation_prompt = true;
  nlohmann::ordered_json template_kwargs;                              // null or an object
};

class ChatTemplate {
 public:
  // The model directory's template; nullopt when it has none. A template the
  // engine cannot parse is an error naming the file and line.
  static Result<std::optional<ChatTemplate>> from_model_dir(const std::string& dir);
  // A template file (the raw Jinja text, or a JSON file with "chat_template"),
  // with the special tokens of `model_dir`'s tokenizer_config.json.
  static Result<ChatTemplate> from_file(const std::string& path, const std::string& model_dir);
  // Source text directly (tests), with the given special tokens.
  static Result<ChatTemplate> from_source(const std::string& source, const std::string& origin,
                                          const nlohmann::ordered_json& special_tokens);

  // The prompt text. kInvalidArgument when the template refuses the messages
  // (raise_exception: *refused set, message verbatim) or fails on them ("the chat
  // template failed at line N: ...").
  Result<std::string> render(const ChatTemplateInput& input, bool* refused = nullptr) const;

  // Where the template came from, e.g. "models/x/tokenizer_config.json".
  const std::string& origin() const { return origin_; }

 private:
  std::optional<jinja::Template> default_;
  std::optional<jinja::Template> tool_use_;
  std::string origin_;
  jinja::ValueDict special_tokens_;
};

// The OpenAI chat messages as the template should see them: each an object with
// a string "role"; "content" a string, null, or a list of text parts (joined with
// "\n"; other part types are refused); the reasoning fields aliased as
// transformers does (reasoning_content, thinking, reasoning). kInvalidArgument
// naming the message otherwise.
Result<nlohmann::ordered_json> normalize_chat_messages(const nlohmann::ordered_json& messages);

}  // namespace submoe::serve
