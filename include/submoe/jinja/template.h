// A Jinja template engine for chat templates: the subset of jinja2 that the chat
// templates of Hugging Face tokenizers use (docs/serving.md lists it): text with
// {{ }}, {% %} and {# #} tags and their whitespace control; if / elif / else,
// for (with loop.*, else, an if filter, break / continue), set (plain, tuple,
// namespace attribute, block), macro, raw and transformers' generation block;
// Python's operators, literals, slices and str / dict methods; jinja2's filters
// and tests; range, namespace, dict and raise_exception. Rendering follows
// transformers' apply_chat_template environment: trim_blocks and lstrip_blocks
// on, no autoescape, tojson as json.dumps(ensure_ascii=False).
//
// A template is data from a model directory or a user's file: anything outside
// the subset, a syntax error, a runaway loop or an oversized output is an error
// naming the line, never a crash or a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "submoe/core/status.h"
#include "submoe/jinja/value.h"

namespace submoe::jinja {

struct TemplateOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
  size_t max_output_bytes = size_t{16} << 20;
  uint64_t max_steps = 20'000'000;  // statements and expressions evaluated
  int max_call_depth = 64;          // nested macro calls
};

// Why a render failed, beside the Status message.
struct RenderFailure {
  bool raised_by_template = false;  // raise_exception(message): the template refused its input
  int line = 0;                     // 0 when raised_by_template
  std::string message;              // the template's message, or what failed
};


class Template {
 public:
  // kInvalidArgument "line N: ..." for a syntax error or a construct outside the
  // subset (an unknown filter or test is one: jinja2 refuses those at compile time too).
  static Result<Template> parse(std::string_view source, const TemplateOptions& options = {});

  // Renders with `variables` as the template's globals (transformers passes
  // messages, tools, add_generation_prompt, bos_token, eos_token, ...). Errors
  // are kInvalidArgument: "line N: message", or the template's own message for
  // raise_exception; *failure (when given) says which.
  Result<std::string> render(const ValueDict& variables, RenderFailure* failure = nullptr) const;

 private:
  struct Program;
  std::shared_ptr<const Program> program_;
  TemplateOptions options_;
};

}  // namespace submoe::jinja
