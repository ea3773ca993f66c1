// The parsed template: expressions and statements as plain trees the renderer
// walks. One node type each, with a kind and the fields that kind uses (listed per
// kind), so the renderer is one switch per tree and the parser builds nodes
// without a class per construct.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "submoe/jinja/value.h"

namespace submoe::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,      // value
    kName,         // name
    kList,         // args: the items; name "tuple" for a tuple
    kDict,         // args: key, value, key, value, ...
    kGetAttr,      // args[0].name
    kGetItem,      // args[0][args[1]]
    kSlice,        // args[0][args[1]:args[2]:args[3]], each bound may be null
    kCall,         // args[0](args[1..], kwargs)
    kFilter,       // args[0] | name(args[1..], kwargs)
    kTest,         // args[0] is [not] name(args[1..])
    kNegate,       // -args[0]
    kPlus,         // +args[0]
    kNot,          // not args[0]
    kBinary,       // args[0] name args[1]; name is + - * / // % ** ~
    kAnd,          // args[0] and args[1]
    kOr,           // args[0] or args[1]
    kCompare,      // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
    kConditional,  // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;

  Expr(Kind k, int l) : kind(k), line(l) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (condition, body) in order; else_body
    kFor,       // for targets in expr [if filter]: body; else_body when nothing iterated
    kSet,       // targets = expr; attribute: targets[0].targets[1] = expr
    kSetBlock,  // {% set targets[0] %}body{% endset %}
    kMacro,     // {% macro name(params) %}body{% endmacro %}
    kBreak,
    kContinue,
    kScope,     // body rendered in place ({% generation %} of transformers' AssistantTracker)
  };
  Kind kind;
  int line = 0;
  std::string text;
  std::string name;
  std::vector<std::string> targets;
  bool attribute = false;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // a null default means none

  Stmt(Kind k, int l) : kind(k), line(l) {}
};

}  // namespace submoe::jinja
