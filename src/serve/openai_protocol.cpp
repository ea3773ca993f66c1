#include "submoe/serve/openai_protocol.h"

#include <random>
#include <set>
#include <string_view>

#include "submoe/serve/chat_template.h"

namespace submoe::serve {
namespace {

using nlohmann::json;
// Request bodies keep their key order (tool schemas reach the chat template as
// the client wrote them); responses are plain json.
using Body = nlohmann::ordered_json;

// Joins message parts by appending (GCC 12's -Wrestrict misfires on chains of
// operator+ over temporaries).
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

ProtocolError wrong_type(const std::string& field, const char* want) {
  return {join({"'", field, "' must be ", want}), field};
}

// Reads an optional number field into *out (null or absent keeps the default).
std::optional<ProtocolError> read_number(const Body& body, const char* field, double lo, double hi, double* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(field, "a number");
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi))
    return ProtocolError{join({"'", field, "' must be within [", json(lo).dump(), ", ", json(hi).dump(), "], got ",
                               it->dump()}),
                         field};
  *out = v;
  return std::nullopt;
}

std::optional<ProtocolError> read_int(const Body& body, const char* field, int64_t lo, int64_t hi, int64_t* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return wrong_type(field, "an integer");
  // Integers beyond int64 parse as unsigned; both are range-checked.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))
    return ProtocolError{join({"'", field, "' must be at most ", std::to_string(hi)}), field};
  const int64_t v = it->is_number_unsigned() ? static_cast<int64_t>(it->get<uint64_t>()) : it->get<int64_t>();
  if (v < lo || v > hi)
    return ProtocolError{join({"'", field, "' must be within [", std::to_string(lo), ", ", std::to_string(hi),
                               "], got ", std::to_string(v)}),
                         field};
  *out = v;
  return std::nullopt;
}

std::optional<ProtocolError> read_bool(const Body& body, const char* field, bool* out) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(field, "a boolean");
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ProtocolError> read_stop(const Body& body, std::vector<std::string>* out) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out->push_back(it->get<std::string>());
  } else if (it->is_array()) {
    if (it->size() > 4) return ProtocolError{"'stop' holds at most 4 strings", "stop"};
    for (const Body& s : *it) {
      if (!s.is_string()) return wrong_type("stop", "a string or an array of strings");
      out->push_back(s.get<std::string>());
    }
  } else {
    return wrong_type("stop", "a string or an array of strings");
  }
  for (const std::string& s : *out)
    if (s.empty()) return ProtocolError{"'stop' strings must not be empty", "stop"};
  return std::nullopt;
}

// A prompt given as token ids: [int, ...].
std::optional<ProtocolError> read_ids(const Body& array, std::vector<int32_t>* out) {
  for (const Body& t : array) {
    if (!t.is_number_integer()) return wrong_type("prompt", "a string, an array of one string, or an array of token ids");
    const int64_t v = t.is_number_unsigned() && t.get<uint64_t>() > INT32_MAX ? INT64_MAX : t.get<int64_t>();
    if (v < 0 || v > INT32_MAX) return ProtocolError{"'prompt' token id " + t.dump() + " is out of range", "prompt"};
    out->push_back(static_cast<int32_t>(v));
  }
  if (out->empty()) return ProtocolError{"'prompt' must not be an empty array", "prompt"};
  return std::nullopt;
}

std::optional<ProtocolError> read_prompt(const Body& body, CompletionRequest* out) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return ProtocolError{"'prompt' is required", "prompt"};
  const char* want = "a string, an array of one string, or an array of token ids";
  if (it->is_string()) {
    out->prompt_text = it->get<std::string>();
    return std::nullopt;
  }
  if (!it->is_array()) return wrong_type("prompt", want);
  if (it->empty()) return ProtocolError{"'prompt' must not be an empty array", "prompt"};
  const Body& first = it->front();
  if (first.is_string() || first.is_array()) {
    if (it->size() != 1)
      return ProtocolError{"'prompt' with several prompts is not supported (send one request per prompt)", "prompt"};
    if (first.is_string()) {
      out->prompt_text = first.get<std::string>();
      return std::nullopt;
    }
    return read_ids(first, &out->prompt_ids);
  }
  return read_ids(*it, &out->prompt_ids);
}

}  // namespace

namespace {

// The fields /v1/completions and /v1/chat/completions share: model, sampling,
// stop, streaming, and the OpenAI fields submoe refuses at non-neutral values.
// `max_tokens_field` is where max_tokens was read from ("" when absent).
std::optional<ProtocolError> parse_common(const Body& body, SamplingRequest* r, const char* max_tokens_field,
                                          int64_t default_max_tokens) {
  if (const auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) return wrong_type("model", "a string");
    r->model = m->get<std::string>();
  }
  int64_t max_tokens = default_max_tokens;
  if (auto e = read_int(body, max_tokens_field, 0, INT32_MAX, &max_tokens)) return e;
  r->max_tokens_given = body.contains(max_tokens_field) && !body[max_tokens_field].is_null();
  r->params.max_tokens = static_cast<int>(max_tokens);
  double temperature = 1.0, top_p = 1.0;
  if (auto e = read_number(body, "temperature", 0.0, 2.0, &temperature)) return e;
  if (auto e = read_number(body, "top_p", 0.0, 1.0, &top_p)) return e;
  if (top_p <= 0.0) return ProtocolError{"'top_p' must be greater than 0", "top_p"};
  int64_t top_k = 0;
  if (auto e = read_int(body, "top_k", 0, INT32_MAX, &top_k)) return e;
  r->params.sampling.temperature = static_cast<float>(temperature);
  r->params.sampling.top_p = static_cast<float>(top_p);
  r->params.sampling.top_k = static_cast<int>(top_k);
  int64_t seed = 0;
  if (const auto s = body.find("seed"); s != body.end() && !s->is_null()) {
    if (!s->is_number_integer()) return wrong_type("seed", "an integer");
    seed = s->is_number_unsigned() ? static_cast<int64_t>(s->get<uint64_t>()) : s->get<int64_t>();
    r->seed_given = true;
  }
  r->params.sampling.seed = r->seed_given ? static_cast<uint64_t>(seed) : std::random_device{}();
  if (auto e = read_stop(body, &r->params.stop)) return e;
  if (auto e = read_bool(body, "stream", &r->stream)) return e;
  if (const auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) return wrong_type("stream_options", "an object");
    if (!r->stream) return ProtocolError{"'stream_options' is only allowed when 'stream' is true", "stream_options"};
    for (auto it = so->begin(); it != so->end(); ++it)
      if (it.key() != "include_usage")
        return ProtocolError{"Unrecognized stream option: " + it.key(), "stream_options"};
    if (auto e = read_bool(*so, "include_usage", &r->include_usage))
      return ProtocolError{"'stream_options.include_usage' must be a boolean", "stream_options"};
  }
  if (auto e = read_bool(body, "ignore_eos", &r->params.ignore_eos)) return e;

  // Fields of the OpenAI API that submoe refuses: allowed at their neutral values
  // only; any other value is a 400 naming the field (documented in docs/serving.md).
  int64_t n = 1;
  if (auto e = read_int(body, "n", 1, 1, &n)) return ProtocolError{"only 'n' = 1 is supported", "n"};
  if (const auto b = body.find("logit_bias"); b != body.end() && !b->is_null() && !(b->is_object() && b->empty()))
    return ProtocolError{"'logit_bias' is not supported", "logit_bias"};
  for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
    double v = 0;
    if (auto e = read_number(body, penalty, -2.0, 2.0, &v)) return e;
    if (v != 0) return ProtocolError{"'" + std::string(penalty) + "' other than 0 is not supported", penalty};
  }
  if (const auto u = body.find("user"); u != body.end() && !u->is_null() && !u->is_string())
    return wrong_type("user", "a string");
  return std::nullopt;
}

std::optional<ProtocolError> unknown_field(const Body& body, const std::set<std::string>& known) {
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!known.count(it.key())) return ProtocolError{"Unrecognized request argument supplied: " + it.key(), it.key()};
  return std::nullopt;
}

}  // namespace

std::optional<ProtocolError> parse_completion_request(const Body& body, CompletionRequest* out) {
  if (!body.is_object()) return ProtocolError{"the request body must be a JSON object", ""};
  static const std::set<std::string> known = {
      "model",    "prompt", "max_tokens", "temperature", "top_p",       "top_k",  "seed",
      "stop",     "stream", "stream_options", "n",       "echo",        "logprobs", "presence_penalty",
      "frequency_penalty", "user", "ignore_eos", "best_of", "suffix", "logit_bias"};
  if (auto e = unknown_field(body, known)) return e;
  CompletionRequest r;
  if (auto e = read_prompt(body, &r)) return e;
  if (auto e = parse_common(body, &r, "max_tokens", 16)) return e;
  int64_t best_of = 1;
  if (auto e = read_int(body, "best_of", 1, 1, &best_of)) return ProtocolError{"only 'best_of' = 1 is supported", "best_of"};
  bool echo = false;
  if (auto e = read_bool(body, "echo", &echo)) return e;
  if (echo) return ProtocolError{"'echo' is not supported", "echo"};
  if (const auto l = body.find("logprobs"); l != body.end() && !l->is_null())
    return ProtocolError{"'logprobs' is not supported", "logprobs"};
  if (const auto s = body.find("suffix"); s != body.end() && !s->is_null())
    return ProtocolError{"'suffix' is not supported", "suffix"};
  *out = std::move(r);
  return std::nullopt;
}

std::optional<ProtocolError> parse_chat_request(const Body& body, ChatRequest* out) {
  if (!body.is_object()) return ProtocolError{"the request body must be a JSON object", ""};
  static const std::set<std::string> known = {
      "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed", "stop",
      "stream", "stream_options", "n", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "user",
      "ignore_eos", "logit_bias", "tools", "tool_choice", "parallel_tool_calls", "response_format",
      "chat_template_kwargs", "add_generation_prompt"};
  if (auto e = unknown_field(body, known)) return e;
  ChatRequest r;
  const auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) return ProtocolError{"'messages' is required", "messages"};
  Result<nlohmann::ordered_json> normalized = normalize_chat_messages(*messages);
  if (!normalized.is_ok()) return ProtocolError{normalized.status().message(), "messages"};
  r.messages = std::move(normalized).value();
  const bool has_max_completion = body.contains("max_completion_tokens") && !body["max_completion_tokens"].is_null();
  if (has_max_completion && body.contains("max_tokens") && !body["max_tokens"].is_null())
    return ProtocolError{"give 'max_tokens' or 'max_completion_tokens', not both", "max_completion_tokens"};
  // Without a bound, a chat completion runs to EOS or the context (OpenAI's rule).
  if (auto e = parse_common(body, &r, has_max_completion ? "max_completion_tokens" : "max_tokens", INT32_MAX)) return e;
  if (const auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) return wrong_type("tools", "an array of tool objects");
    for (const auto& tool : *t)
      if (!tool.is_object()) return wrong_type("tools", "an array of tool objects");
    if (!t->empty()) r.tools = *t;
  }
  // The template sees the tools; submoe does not parse tool calls out of the
  // output, so it cannot be made to call one.
  if (const auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (!c->is_string() || (*c != "none" && *c != "auto"))
      return ProtocolError{"only 'tool_choice' \"none\" or \"auto\" is supported", "tool_choice"};
  }
  if (const auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null() && !p->is_boolean())
    return wrong_type("parallel_tool_calls", "a boolean");
  if (const auto f = body.find("response_format"); f != body.end() && !f->is_null()) {
    if (!f->is_object() || !f->contains("type") || (*f)["type"] != "text")
      return ProtocolError{"only 'response_format' {\"type\": \"text\"} is supported", "response_format"};
  }
  bool logprobs = false;
  if (auto e = read_bool(body, "logprobs", &logprobs)) return e;
  if (logprobs) return ProtocolError{"'logprobs' is not supported", "logprobs"};
  if (const auto t = body.find("top_logprobs"); t != body.end() && !t->is_null())
    return ProtocolError{"'top_logprobs' is not supported", "top_logprobs"};
  if (const auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) return wrong_type("chat_template_kwargs", "an object");
    for (const char* reserved : {"messages", "tools", "documents", "add_generation_prompt"})
      if (k->contains(reserved))
        return ProtocolError{std::string("'chat_template_kwargs' must not set '") + reserved + "'",
                             "chat_template_kwargs"};
    r.template_kwargs = *k;
  }
  if (auto e = read_bool(body, "add_generation_prompt", &r.add_generation_prompt)) return e;
  *out = std::move(r);
  return std::nullopt;
}

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kEos:
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength:
    case FinishReason::kContext: return "length";
    default: return nullptr;
  }
}

json error_body(int http_status, const std::string& message, const std::string& param, const std::string& code) {
  const char* type = http_status == 401   ? "authentication_error"
                     : http_status == 404 ? "not_found_error"
                     : http_status == 503 ? "unavailable_error"
                     : http_status < 500  ? "invalid_request_error"
                                          : "server_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

int http_status_of(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kOk: return 200;
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kUnavailable: return 503;
    default: return 500;
  }
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace submoe::serve
