// The OpenAI HTTP API's request and response bodies, as submoe serves them
// (the completions conventions of llama.cpp's llama-server,
// vLLM and the OpenAI reference; docs/serving.md lists the fields). Parsing is
// strict: a field of the wrong type, an out-of-range value or an unknown field is
// an error naming the field, as OpenAI answers "Unrecognized request argument".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "submoe/core/status.h"
#include "submoe/serve/generation.h"

namespace submoe::serve {

// What both routes read: the model name, sampling and stop parameters, streaming.
struct SamplingRequest {
  std::string model;                  // "" when absent
  GenerationParams params;
  bool max_tokens_given = false;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool seed_given = false;
};

struct CompletionRequest : SamplingRequest {
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;    // when the prompt was given as token ids
};

struct ChatRequest : SamplingRequest {
  nlohmann::ordered_json messages;           // checked and normalized (normalize_chat_messages)
  nlohmann::ordered_json tools;              // null, or the tool schemas for the template
  nlohmann::ordered_json template_kwargs;    // null, or chat_template_kwargs (vLLM's extension)
  bool add_generation_prompt = true;         // extension: false continues the last message's role
};

// A parse error: the message and the offending field ("" for the body itself).
struct ProtocolError {
  std::string message;
  std::string param;
};

// POST /v1/completions body. Defaults as OpenAI's: max_tokens 16, temperature 1,
// top_p 1; top_k (0 = off) and ignore_eos are extensions.
std::optional<ProtocolError> parse_completion_request(const nlohmann::ordered_json& body, CompletionRequest* out);

// POST /v1/chat/completions body: messages (required), max_tokens or
// max_completion_tokens (default: until EOS or the context), the sampling fields
// of completions, tools (passed to the template), tool_choice "none" / "auto",
// response_format text, chat_template_kwargs and add_generation_prompt
// (extensions, as vLLM).
std::optional<ProtocolError> parse_chat_request(const nlohmann::ordered_json& body, ChatRequest* out);

// OpenAI's finish_reason: "stop" (EOS or a stop string), "length" (max_tokens or
// the context).
const char* openai_finish_reason(FinishReason reason);

// {"error": {"message", "type", "param", "code"}}: type invalid_request_error
// for 4xx, server_error for 5xx (and "unavailable" 503s).
nlohmann::json error_body(int http_status, const std::string& message, const std::string& param = {},
                          const std::string& code = {});

// The HTTP status of a Status returned by the engine: invalid argument 400, not
// found 404, unavailable 503, anything else 500.
int http_status_of(const Status& status);

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};
nlohmann::json usage_json(const Usage& usage);

}  // namespace submoe::serve
