// libFuzzer target: the Jinja engine of chat templates (jinja/template.h) and
// ChatTemplate's variables. The input is a template's source (at most 16 KiB).
// If it parses, it is rendered over fixed conversations (plain, tool calls,
// non-string content, an empty list) with a small step and output budget.
// Beyond "no crash, no hang, no sanitizer report":
//   - rendering is deterministic (the same input renders the same text or the
//     same error twice);
//   - an error is always kInvalidArgument with a message;
//   - the output respects the output budget.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "submoe/jinja/template.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

jinja::ValueDict variables(int which) {
  static const char* kConversations[] = {
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ✓"}],
          "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null})",
      R"({"messages": [{"role": "user", "content": "Weather?"},
                       {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
                         "function": {"name": "get", "arguments": {"city": "Paris", "n": [1, 2.5, true]}}}]},
                       {"role": "tool", "content": "22 C"}],
          "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}],
          "add_generation_prompt": false})",
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}, {"role": 5}], "enable_thinking": false})",
      R"({"messages": []})",
  };
  const auto j = nlohmann::ordered_json::parse(kConversations[which]);
  return jinja::Value::from_json(j).as_dict();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (16u << 10)) return 0;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  jinja::TemplateOptions options;
  options.max_steps = 200000;
  options.max_output_bytes = 1u << 20;
  Result<jinja::Template> t = jinja::Template::parse(source, options);
  if (!t.is_ok()) {
    fuzz::require(t.status().code() == ErrorCode::kInvalidArgument && !t.status().message().empty());
    return 0;
  }
  for (int which = 0; which < 4; ++which) {
    const jinja::ValueDict vars = variables(which);
    Result<std::string> a = t->render(vars);
    Result<std::string> b = t->render(vars);
    fuzz::require(a.is_ok() == b.is_ok());
    if (a.is_ok()) {
      fuzz::require(*a == *b);
      fuzz::require(a->size() <= options.max_output_bytes);
    } else {
      fuzz::require(a.status().code() == ErrorCode::kInvalidArgument && !a.status().message().empty());
      fuzz::require(a.status().message() == b.status().message());
    }
  }
  return 0;
}
