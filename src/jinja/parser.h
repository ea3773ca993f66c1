// Tokens to statement trees (jinja2's grammar and operator precedence: or, and,
// not, comparisons, + -, ~, * / // %, **, unary, then postfix, filters and tests).
#pragma once

#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace submoe::jinja {

// Throws jinja::Error (with the line) on a syntax error, an unknown tag, filter
// or test, or a construct submoe does not implement (named in the message).
Body parse(std::vector<Token> tokens);

}  // namespace submoe::jinja
