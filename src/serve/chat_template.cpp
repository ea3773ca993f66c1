#include "submoe/serve/chat_template.h"

#include <ctime>
#include <filesystem>

#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"

namespace submoe::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// The special tokens transformers passes to the template (its special_tokens_map).
ordered_json special_tokens_of(const nlohmann::json& config) {
  ordered_json tokens = ordered_json::object();
  if (!config.is_object()) return tokens;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    const auto it = config.find(key);
    if (it == config.end()) continue;
    if (const auto token = io::tokenizer_config_token(*it)) tokens[key] = *token;
  }
  if (const auto it = config.find("additional_special_tokens"); it != config.end() && it->is_array()) {
    ordered_json extra = ordered_json::array();
    for (const auto& t : *it)
      if (const auto token = io::tokenizer_config_token(t)) extra.push_back(*token);
    tokens["additional_special_tokens"] = extra;
  }
  return tokens;
}

Result<nlohmann::json> read_tokenizer_config(const std::string& dir) {
  const fs::path path = fs::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nlohmann::json::object();
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(path.string()));
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return corrupt_data(path.string() + ": not a JSON object");
  return config;
}

Result<jinja::Template> parse_template(const std::string& source, const std::string& origin) {
  Result<jinja::Template> t = jinja::Template::parse(source);
  if (!t.is_ok())
    return invalid_argument(origin + ": the chat template cannot be used: " + t.status().message() +
                            " (pass --chat-template FILE to use another)");
  return t;
}

// strftime_now(format): the local time, as transformers' global.
jinja::Value strftime_function() {
  return jinja::Value::function("strftime_now", [](const jinja::CallArgs& args) -> jinja::Value {
    const jinja::Value* f = args.get(0, "format");
    if (!f || !f->is_string()) return jinja::Value(std::string());
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof(buf), f->as_string().c_str(), &local);
    return jinja::Value(std::string(buf, n));
  });
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_source(const std::string& source, const std::string& origin,
                                               const ordered_json& special_tokens) {
  ChatTemplate t;
  SUBMOE_ASSIGN_OR_RETURN(jinja::Template parsed, parse_template(source, origin));
  t.default_ = std::move(parsed);
  t.origin_ = origin;
  t.special_tokens_ = jinja::Value::from_json(special_tokens).as_dict();
  return t;
}

Result<std::optional<ChatTemplate>> ChatTemplate::from_model_dir(const std::string& dir) {
  SUBMOE_ASSIGN_OR_RETURN(const nlohmann::json config, read_tokenizer_config(dir));
  const ordered_json tokens = special_tokens_of(config);
  const fs::path jinja_file = fs::path(dir) / "chat_template.jinja";
  std::error_code ec;
  if (fs::is_regular_file(jinja_file, ec)) {
    SUBMOE_ASSIGN_OR_RETURN(const std::string source, io::read_file_to_string(jinja_file.string()));
    SUBMOE_ASSIGN_OR_RETURN(ChatTemplate t, from_source(source, jinja_file.string(), tokens));
    return std::optional<ChatTemplate>(std::move(t));
  }
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::optional<ChatTemplate>();
  const std::string origin = (fs::path(dir) / "tokenizer_config.json").string();
  if (it->is_string()) {
    SUBMOE_ASSIGN_OR_RETURN(ChatTemplate t, from_source(it->get<std::string>(), origin, tokens));
    return std::optional<ChatTemplate>(std::move(t));
  }
  if (!it->is_array()) return corrupt_data(origin + ": chat_template must be a string or a list of named templates");
  ChatTemplate t;
  t.origin_ = origin;
  t.special_tokens_ = jinja::Value::from_json(tokens).as_dict();
  for (const auto& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      return corrupt_data(origin + ": each named chat_template needs a string 'name' and 'template'");
    const std::string name = entry["name"].get<std::string>();
    if (name != "default" && name != "tool_use") continue;
    SUBMOE_ASSIGN_OR_RETURN(jinja::Template parsed,
                            parse_template(entry["template"].get<std::string>(), origin + " (" + name + ")"));
    (name == "default" ? t.default_ : t.tool_use_) = std::move(parsed);
  }
  if (!t.default_) return corrupt_data(origin + ": the chat_template list has no template named 'default'");
  return std::optional<ChatTemplate>(std::move(t));
}

Result<ChatTemplate> ChatTemplate::from_file(const std::string& path, const std::string& model_dir) {
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(path));
  SUBMOE_ASSIGN_OR_RETURN(const nlohmann::json config, read_tokenizer_config(model_dir));
  std::string source = text;
  // A JSON file with "chat_template" (a tokenizer_config.json of another model).
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string())
      return invalid_argument(path + ": a .json chat template file needs a string field 'chat_template'");
    source = j["chat_template"].get<std::string>();
  }
  return from_source(source, path, special_tokens_of(config));
}

Result<std::string> ChatTemplate::render(const ChatTemplateInput& input, bool* refused) const {
  if (refused) *refused = false;
  jinja::ValueDict vars = special_tokens_;
  vars.set("messages", jinja::Value::from_json(input.messages));
  vars.set("tools", input.tools.is_null() ? jinja::Value::none() : jinja::Value::from_json(input.tools));
  vars.set("documents", jinja::Value::none());
  vars.set("add_generation_prompt", jinja::Value(input.add_generation_prompt));
  vars.set("strftime_now", strftime_function());
  if (input.template_kwargs.is_object())
    for (auto it = input.template_kwargs.begin(); it != input.template_kwargs.end(); ++it)
      vars.set(it.key(), jinja::Value::from_json(it.value()));
  const jinja::Template& t = (!input.tools.is_null() && tool_use_) ? *tool_use_ : *default_;
  jinja::RenderFailure failure;
  Result<std::string> out = t.render(vars, &failure);
  if (out.is_ok()) return out;
  if (failure.raised_by_template) {
    if (refused) *refused = true;
    return invalid_argument("the chat template refused the messages: " + failure.message);
  }
  return invalid_argument("the chat template failed on these messages at line " + std::to_string(failure.line) +
                          ": " + failure.message);
}

Result<ordered_json> normalize_chat_messages(const ordered_json& messages) {
  if (!messages.is_array()) return invalid_argument("'messages' must be an array of message objects");
  if (messages.empty()) return invalid_argument("'messages' must not be empty");
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ordered_json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return invalid_argument(where + " must be an object");
    if (!m.contains("role") || !m["role"].is_string() || m["role"].get<std::string>().empty())
      return invalid_argument(where + ".role must be a non-empty string");
    ordered_json message = m;
    if (m.contains("content") && m["content"].is_array()) {
      std::string text;
      bool first = true;
      for (const ordered_json& part : m["content"]) {
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return invalid_argument(where + ".content: only parts {\"type\": \"text\", \"text\": \"...\"} are supported");
        if (!first) text += "\n";
        first = false;
        text += part["text"].get<std::string>();
      }
      message["content"] = text;
    } else if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null()) {
      return invalid_argument(where + ".content must be a string, null or a list of text parts");
    }
    // transformers' _alias_reasoning_fields: the first non-null of reasoning_content,
    // thinking, reasoning fills "thinking" (first, unless present) and
    // "reasoning_content" (last).
    const ordered_json* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"})
      if (!reasoning && m.contains(key) && !m[key].is_null()) reasoning = &m[key];
    if (reasoning) {
      ordered_json aliased = ordered_json::object();
      aliased["thinking"] = *reasoning;
      // Python's dict literal: a key already present keeps its position.
      for (auto it = message.begin(); it != message.end(); ++it) aliased[it.key()] = it.value();
      aliased["reasoning_content"] = *reasoning;
      message = std::move(aliased);
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace submoe::serve
