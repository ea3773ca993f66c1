// Template source to tokens, with jinja2's whitespace rules applied here so the
// parser sees final text: "{%-" / "-%}" strip whitespace on that side,
// trim_blocks drops the first newline after a block or comment tag, lstrip_blocks
// drops the spaces and tabs before a block or comment tag that starts a line
// ("{%+" opts out), newlines are normalized to "\n" and one trailing newline of
// the template is removed (keep_trailing_newline off), as transformers renders
// chat templates (trim_blocks and lstrip_blocks on).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace submoe::jinja {

struct Token {
  enum class Type { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEnd };
  Type type;
  std::string text;  // text, name, operator, the decoded string, or the number's digits
  int line;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws jinja::Error on an unterminated tag, comment or string, or a character
// that starts no token.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace submoe::jinja
