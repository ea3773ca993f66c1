#include "submoe/jinja/template.h"

#include <unordered_map>
#include <vector>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace submoe::jinja {

struct Template::Program {
  Body body;
};

namespace {

enum class Flow { kNormal, kBreak, kContinue };

// Walks the statement tree once per render. Scopes: the globals at the bottom, one
// scope per loop iteration and per macro call on top; `set` writes the innermost
// scope, so an assignment inside a loop does not leak out of it (jinja2's rule;
// the templates use namespace() to carry state out of loops).
class Renderer {
 public:
  Renderer(const TemplateOptions& options, const ValueDict& variables) : o_(options) {
    scopes_.emplace_back();
    for (const auto& [k, v] : variables.items) scopes_.back()[k] = v;
  }

  Flow render(const Body& body, std::string* out) {
    for (const StmtPtr& s : body) {
      const Flow f = render(*s, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

 private:
  void step(int line) {
    if (++steps_ > o_.max_steps)
      throw Error(line, "the template ran more than " + std::to_string(o_.max_steps) + " steps");
  }

  void emit(std::string_view text, std::string* out, int line) {
    if (out->size() + text.size() > o_.max_output_bytes)
      throw Error(line, "the template's output exceeds " + std::to_string(o_.max_output_bytes) + " bytes");
    out->append(text);
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    if (const Value* g = builtin_global(name)) return *g;
    return Value::undefined(name);
  }

  void assign(const std::vector<std::string>& targets, const Value& v, int line) {
    if (targets.size() == 1) {
      scopes_.back()[targets[0]] = v;
      return;
    }
    if (!v.is_list()) throw Error(line, std::string("cannot unpack a non-sequence ") + v.type_name());
    const ValueList& items = v.as_list();
    if (items.size() != targets.size())
      throw Error(line, (items.size() > targets.size() ? "too many" : "not enough") +
                            std::string(" values to unpack (expected ") + std::to_string(targets.size()) + ", got " +
                            std::to_string(items.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i) scopes_.back()[targets[i]] = items[i];
  }

  struct ScopeGuard {
    Renderer* r;
    explicit ScopeGuard(Renderer* renderer) : r(renderer) { r->scopes_.emplace_back(); }
    ~ScopeGuard() { r->scopes_.pop_back(); }
  };

  Flow render(const Stmt& s, std::string* out) {
    step(s.line);
    switch (s.kind) {
      case Stmt::Kind::kText: emit(s.text, out, s.line); return Flow::kNormal;
      case Stmt::Kind::kOutput: emit(eval(*s.expr).str(), out, s.line); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return render(body, out);
        return render(s.else_body, out);
      case Stmt::Kind::kFor: return render_for(s, out);
      case Stmt::Kind::kSet: {
        const Value v = eval(*s.expr);
        if (s.attribute) {
          const Value target = lookup(s.targets[0]);
          if (!target.is_namespace())
            throw Error(s.line, "cannot assign the attribute '" + s.targets[1] + "' of '" + s.targets[0] +
                                    "': only namespace() objects have assignable attributes");
          target.namespace_dict().set(s.targets[1], v);
        } else {
          assign(s.targets, v, s.line);
        }
        return Flow::kNormal;
      }
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        render(s.body, &captured);
        scopes_.back()[s.targets[0]] = Value(std::move(captured));
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: scopes_.back()[s.name] = make_macro(s); return Flow::kNormal;
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kScope: return render(s.body, out);
    }
    return Flow::kNormal;
  }

  // Each iteration (and each test of the `if` filter) gets a fresh scope: an
  // assignment in the body lasts until the end of that iteration, as in jinja2.
  Flow render_for(const Stmt& s, std::string* out) {
    const ValueList all = iterate(eval(*s.expr), s.line);
    ValueList items;
    if (s.filter) {
      for (const Value& item : all) {
        ScopeGuard scope(this);
        assign(s.targets, item, s.line);
        if (eval(*s.filter).truthy()) items.push_back(item);
      }
    } else {
      items = all;
    }
    if (items.empty()) return render(s.else_body, out);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(s.line);
      ScopeGuard scope(this);
      const Value& item = items[static_cast<size_t>(i)];
      assign(s.targets, item, s.line);
      ValueDict loop;
      loop.set("index0", Value(i));
      loop.set("index", Value(i + 1));
      loop.set("revindex0", Value(n - 1 - i));
      loop.set("revindex", Value(n - i));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == n - 1));
      loop.set("length", Value(n));
      loop.set("depth", Value(1));
      loop.set("depth0", Value(0));
      loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("loop.previtem"));
      loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("loop.nextitem"));
      loop.set("cycle", Value::function("loop.cycle", [i](const CallArgs& args) {
                 if (args.positional.empty()) throw Error(0, "loop.cycle() needs at least one value");
                 return args.positional[static_cast<size_t>(i) % args.positional.size()];
               }));
      scopes_.back()["loop"] = Value(std::move(loop));
      if (render(s.body, out) == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Value make_macro(const Stmt& s) {
    const Stmt* macro = &s;
    return Value::function(s.name, [this, macro](const CallArgs& args) {
      if (++call_depth_ > o_.max_call_depth) {
        --call_depth_;
        throw Error(macro->line, "macros nest deeper than " + std::to_string(o_.max_call_depth) + " calls");
      }
      struct DepthRelease {
        int* d;
        ~DepthRelease() { --*d; }
      } release{&call_depth_};
      if (args.positional.size() > macro->params.size())
        throw Error(macro->line, "the macro '" + macro->name + "' takes " + std::to_string(macro->params.size()) +
                                     " arguments, got " + std::to_string(args.positional.size()));
      ScopeGuard scope(this);
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const auto& [name, fallback] = macro->params[i];
        const Value* given = args.get(i, name);
        scopes_.back()[name] = given ? *given : fallback ? eval(*fallback) : Value::undefined(name);
      }
      for (const auto& [k, v] : args.keyword) {
        bool known = false;
        for (const auto& p : macro->params) known = known || p.first == k;
        if (!known) throw Error(macro->line, "the macro '" + macro->name + "' has no parameter '" + k + "'");
      }
      std::string out;
      render(macro->body, &out);
      return Value(std::move(out));
    });
  }

  CallArgs eval_args(const Expr& e, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  // Errors thrown by built-ins carry line 0: give them the caller's line.
  template <typename F>
  auto at_line(int line, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.line() != 0) throw;
      throw Error(line, e.what());
    }
  }

  Value call(const Value& callee, const CallArgs& args, const std::string& what, int line) {
    if (callee.is_function()) return at_line(line, [&] { return callee.as_function().call(args); });
    if (callee.is_undefined()) throw Error(line, "'" + what + "' is undefined");
    throw Error(line, std::string("'") + callee.type_name() + "' object is not callable");
  }

  Value eval(const Expr& e) {
    step(e.line);
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kList: {
        ValueList items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a));
        return e.name == "tuple" ? Value::tuple(std::move(items)) : Value(std::move(items));
      }
      case Expr::Kind::kDict: {
        ValueDict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value k = eval(*e.args[i]);
          if (!k.is_string()) throw Error(e.line, "dict keys must be strings, got " + std::string(k.type_name()));
          d.set(k.as_string(), eval(*e.args[i + 1]));
        }
        return Value(std::move(d));
      }
      case Expr::Kind::kGetAttr: return get_attr(eval(*e.args[0]), e.name, e.line);
      case Expr::Kind::kGetItem: return get_item(eval(*e.args[0]), eval(*e.args[1]), e.line);
      case Expr::Kind::kSlice: {
        const Value subject = eval(*e.args[0]);
        Value bounds[3];
        for (int i = 0; i < 3; ++i) bounds[i] = e.args[1 + i] ? eval(*e.args[1 + i]) : Value::none();
        return slice(subject, bounds[0], bounds[1], bounds[2], e.line);
      }
      case Expr::Kind::kCall: {
        const Expr& callee = *e.args[0];
        if (callee.kind == Expr::Kind::kGetAttr) {
          const Value subject = eval(*callee.args[0]);
          if (subject.is_undefined()) throw_undefined(subject, e.line);
          const CallArgs args = eval_args(e, 1);
          Value result;
          if (at_line(e.line, [&] { return call_method(subject, callee.name, args, e.line, &result); })) return result;
          const Value attr = get_attr(subject, callee.name, e.line);
          if (attr.is_undefined())
            throw Error(e.line, std::string("'") + subject.type_name() + "' object has no attribute '" + callee.name + "'");
          return call(attr, args, callee.name, e.line);
        }
        const Value f = eval(callee);
        return call(f, eval_args(e, 1), callee.kind == Expr::Kind::kName ? callee.name : "the callee", e.line);
      }
      case Expr::Kind::kFilter: {
        const Value subject = eval(*e.args[0]);
        const CallArgs args = eval_args(e, 1);
        return at_line(e.line, [&] { return apply_filter(e.name, subject, args, e.line); });
      }
      case Expr::Kind::kTest: {
        const Value subject = eval(*e.args[0]);
        const CallArgs args = eval_args(e, 1);
        const bool r = at_line(e.line, [&] { return apply_test(e.name, subject, args, e.line); });
        return Value(r != e.negated);
      }
      case Expr::Kind::kNegate:
      case Expr::Kind::kPlus: {
        const Value v = eval(*e.args[0]);
        if (v.is_undefined()) throw_undefined(v, e.line);
        if (!v.is_number())
          throw Error(e.line, std::string("bad operand type for unary ") + (e.kind == Expr::Kind::kNegate ? "-" : "+") +
                                  ": '" + v.type_name() + "'");
        if (e.kind == Expr::Kind::kPlus) return v.is_bool() ? Value(static_cast<int64_t>(v.as_bool())) : v;
        if (v.is_float()) return Value(-v.as_float());
        const int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
        if (x == INT64_MIN) throw Error(e.line, "integer overflow in the template's arithmetic");
        return Value(-x);
      }
      case Expr::Kind::kNot: return Value(!eval(*e.args[0]).truthy());
      case Expr::Kind::kBinary: {
        const Value a = eval(*e.args[0]);
        const Value b = eval(*e.args[1]);
        return binary_op(e.name, a, b, e.line);
      }
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? eval(*e.args[1]) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? a : eval(*e.args[1]);
      }
      case Expr::Kind::kCompare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          if (!compare_op(e.ops[i], left, right, e.line)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kConditional:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined();
    }
    return Value::undefined();
  }

  const TemplateOptions& o_;
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace

Result<Template> Template::parse(std::string_view source, const TemplateOptions& options) {
  try {
    LexerOptions lexer_options;
    lexer_options.trim_blocks = options.trim_blocks;
    lexer_options.lstrip_blocks = options.lstrip_blocks;
    lexer_options.keep_trailing_newline = options.keep_trailing_newline;
    auto program = std::make_shared<Program>();
    program->body = jinja::parse(tokenize(source, lexer_options));
    Template t;
    t.program_ = std::move(program);
    t.options_ = options;
    return t;
  } catch (const Error& e) {
    return invalid_argument("line " + std::to_string(e.line()) + ": " + e.what());
  }
}

Result<std::string> Template::render(const ValueDict& variables, RenderFailure* failure) const {
  RenderFailure f;
  try {
    Renderer renderer(options_, variables);
    std::string out;
    renderer.render(program_->body, &out);
    return out;
  } catch (const RaisedByTemplate& e) {
    f.raised_by_template = true;
    f.message = e.what();
  } catch (const Error& e) {
    f.line = e.line();
    f.message = e.what();
  } catch (const std::bad_alloc&) {
    f.message = "out of memory while rendering the template";
  }
  if (failure) *failure = f;
  return invalid_argument(f.raised_by_template ? f.message : "line " + std::to_string(f.line) + ": " + f.message);
}

}  // namespace submoe::jinja
