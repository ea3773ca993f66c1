#include "jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "jinja/builtins.h"
#include "jinja/error.h"

namespace submoe::jinja {
namespace {

// Deeper nesting than this is refused rather than risking the stack on a hostile
// template ("((((...").
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_template() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  using Type = Token::Type;

  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool at_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).type == Type::kOp && peek(ahead).text == op;
  }
  bool at_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).type == Type::kName && peek(ahead).text == name;
  }
  [[noreturn]] void fail(const std::string& message) const { throw Error(peek().line, message); }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case Type::kEnd: return "the end of the template";
      case Type::kBlockEnd: return "'%}'";
      case Type::kVarEnd: return "'}}'";
      case Type::kText: return "text";
      case Type::kString: return "a string";
      case Type::kInt:
      case Type::kFloat: return "the number " + t.text;
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!at_op(op)) fail(std::string("expected '") + op + "', found " + describe(peek()));
    next();
  }
  std::string expect_name(const char* what) {
    if (peek().type != Type::kName) fail(std::string("expected ") + what + ", found " + describe(peek()));
    return next().text;
  }
  void expect_block_end(const std::string& tag) {
    if (peek().type != Type::kBlockEnd)
      fail("expected '%}' to close '" + tag + "', found " + describe(peek()));
    next();
  }

  struct DepthGuard {
    int* depth;
    DepthGuard(int* d, int line) : depth(d) {
      if (++*depth > kMaxDepth) throw Error(line, "the template nests deeper than " + std::to_string(kMaxDepth));
    }
    ~DepthGuard() { --*depth; }
  };

  // Statements up to a block tag named in `ends` (consumed up to its name; *end
  // says which) or the end of the template (only when `ends` is empty).
  Body parse_body(const std::set<std::string>& ends, std::string* end) {
    DepthGuard guard(&depth_, peek().line);
    Body body;
    for (;;) {
      const Token& t = peek();
      switch (t.type) {
        case Type::kEnd:
          if (!ends.empty()) {
            std::string want;
            for (const std::string& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
            fail("the template ended while looking for " + want);
          }
          *end = "";
          return body;
        case Type::kText: {
          auto s = std::make_unique<Stmt>(Stmt::Kind::kText, t.line);
          s->text = next().text;
          body.push_back(std::move(s));
          break;
        }
        case Type::kVarBegin: {
          next();
          auto s = std::make_unique<Stmt>(Stmt::Kind::kOutput, t.line);
          s->expr = parse_tuple();
          if (peek().type != Type::kVarEnd) fail("expected '}}', found " + describe(peek()));
          next();
          body.push_back(std::move(s));
          break;
        }
        case Type::kBlockBegin: {
          if (peek(1).type == Type::kName && ends.count(peek(1).text)) {
            next();
            *end = next().text;
            return body;
          }
          next();
          body.push_back(parse_statement());
          break;
        }
        default: fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const int line = peek().line;
    const std::string tag = expect_name("a tag name after '{%'");
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside a for loop");
      expect_block_end(tag);
      return std::make_unique<Stmt>(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, line);
    }
    if (tag == "generation") {
      expect_block_end(tag);
      auto s = std::make_unique<Stmt>(Stmt::Kind::kScope, line);
      std::string end;
      s->body = parse_body({"endgeneration"}, &end);
      expect_block_end(end);
      return s;
    }
    static const std::set<std::string> unsupported = {"extends", "block", "include", "import", "from", "call",
                                                      "filter", "with", "autoescape", "do", "trans"};
    if (unsupported.count(tag)) throw Error(line, "the tag '" + tag + "' is not supported by submoe's Jinja engine");
    throw Error(line, "unknown tag '" + tag + "'");
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kIf, line);
    ExprPtr cond = parse_expression();
    expect_block_end("if");
    for (;;) {
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, &end);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_expression();
        expect_block_end("elif");
        continue;
      }
      if (end == "else") {
        expect_block_end("else");
        s->else_body = parse_body({"endif"}, &end);
      }
      expect_block_end(end);
      return s;
    }
  }

  std::vector<std::string> parse_targets(const char* what) {
    std::vector<std::string> names;
    const bool parenthesized = at_op("(");
    if (parenthesized) next();
    names.push_back(expect_name(what));
    while (at_op(",")) {
      next();
      if (peek().type != Type::kName) break;  // a trailing comma
      names.push_back(next().text);
    }
    if (parenthesized) expect_op(")");
    return names;
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kFor, line);
    s->targets = parse_targets("a loop variable after 'for'");
    if (!at_name("in")) fail("expected 'in' after the loop variable, found " + describe(peek()));
    next();
    s->expr = parse_tuple(/*with_condition=*/false);
    if (at_name("if")) {
      next();
      s->filter = parse_expression();
    }
    if (at_name("recursive")) fail("recursive for loops are not supported");
    expect_block_end("for");
    ++loop_depth_;
    std::string end;
    s->body = parse_body({"else", "endfor"}, &end);
    --loop_depth_;
    if (end == "else") {
      expect_block_end("else");
      s->else_body = parse_body({"endfor"}, &end);
    }
    expect_block_end(end);
    return s;
  }

  StmtPtr parse_set(int line) {
    if (peek().type == Type::kName && at_op(".", 1)) {
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSet, line);
      s->attribute = true;
      s->targets.push_back(next().text);
      next();
      s->targets.push_back(expect_name("an attribute name after '.'"));
      expect_op("=");
      s->expr = parse_tuple();
      expect_block_end("set");
      return s;
    }
    std::vector<std::string> targets = parse_targets("a variable name after 'set'");
    if (at_op("=")) {
      next();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSet, line);
      s->targets = std::move(targets);
      s->expr = parse_tuple();
      expect_block_end("set");
      return s;
    }
    if (targets.size() != 1) fail("a block set assigns one variable");
    if (at_op("|")) fail("filters on a block set are not supported");
    expect_block_end("set");
    auto s = std::make_unique<Stmt>(Stmt::Kind::kSetBlock, line);
    s->targets = std::move(targets);
    std::string end;
    s->body = parse_body({"endset"}, &end);
    expect_block_end(end);
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kMacro, line);
    s->name = expect_name("a macro name");
    expect_op("(");
    while (!at_op(")")) {
      std::string param = expect_name("a parameter name");
      ExprPtr def;
      if (at_op("=")) {
        next();
        def = parse_expression();
      }
      s->params.emplace_back(std::move(param), std::move(def));
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
    expect_block_end("macro");
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    s->body = parse_body({"endmacro"}, &end);
    loop_depth_ = saved_loop_depth;
    expect_block_end(end);
    return s;
  }

  ExprPtr node(Expr::Kind kind, int line) { return std::make_unique<Expr>(kind, line); }

  // An integer token's value; beyond int64 is an error (Python would take it).
  static int64_t integer_literal(const Token& t) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (errno == ERANGE || end == t.text.c_str() || *end != '\0')
      throw Error(t.line, "the integer " + t.text.substr(0, 40) + (t.text.size() > 40 ? "..." : "") +
                              " is out of range");
    return static_cast<int64_t>(v);
  }

  // Expressions separated by commas form a tuple (a list here).
  ExprPtr parse_tuple(bool with_condition = true) {
    const int line = peek().line;
    ExprPtr first = with_condition ? parse_expression() : parse_or();
    if (!at_op(",")) return first;
    auto list = node(Expr::Kind::kList, line);
    list->name = "tuple";
    list->args.push_back(std::move(first));
    while (at_op(",")) {
      next();
      if (peek().type == Type::kBlockEnd || peek().type == Type::kVarEnd || at_op(")")) break;
      list->args.push_back(with_condition ? parse_expression() : parse_or());
    }
    return list;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(&depth_, peek().line);
    ExprPtr e = parse_or();
    while (at_name("if")) {
      const int line = next().line;
      auto c = node(Expr::Kind::kConditional, line);
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (at_name("else")) {
        next();
        otherwise = parse_expression();
      }
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(Expr::Kind kind, ExprPtr l, ExprPtr r, int line, std::string op = {}) {
    auto b = node(kind, line);
    b->name = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      const int line = next().line;
      e = binary(Expr::Kind::kOr, std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      const int line = next().line;
      e = binary(Expr::Kind::kAnd, std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(&depth_, peek().line);
      auto n = node(Expr::Kind::kNot, next().line);
      n->args.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    for (;;) {
      std::string op;
      if (peek().type == Type::kOp &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::kCompare, line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& t = next();
      e = binary(Expr::Kind::kBinary, std::move(e), parse_concat(), t.line, t.text);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      const int line = next().line;
      e = binary(Expr::Kind::kBinary, std::move(e), parse_math2(), line, "~");
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& t = next();
      e = binary(Expr::Kind::kBinary, std::move(e), parse_pow(), t.line, t.text);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    while (at_op("**")) {
      const int line = next().line;
      e = binary(Expr::Kind::kBinary, std::move(e), parse_unary(), line, "**");
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    DepthGuard guard(&depth_, peek().line);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& t = next();
      e = node(t.text == "-" ? Expr::Kind::kNegate : Expr::Kind::kPlus, t.line);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.type) {
      case Type::kName: {
        next();
        auto e = node(Expr::Kind::kLiteral, t.line);
        if (t.text == "true" || t.text == "True") {
          e->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case Type::kString: {
        auto e = node(Expr::Kind::kLiteral, t.line);
        std::string s;
        while (peek().type == Type::kString) s += next().text;  // adjacent literals join
        e->value = Value(std::move(s));
        return e;
      }
      case Type::kInt: {
        next();
        auto e = node(Expr::Kind::kLiteral, t.line);
        e->value = Value(integer_literal(t));
        return e;
      }
      case Type::kFloat: {
        next();
        auto e = node(Expr::Kind::kLiteral, t.line);
        e->value = Value(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case Type::kOp:
        if (t.text == "(") {
          next();
          if (at_op(")")) {
            next();
            auto empty = node(Expr::Kind::kList, t.line);
            empty->name = "tuple";
            return empty;
          }
          ExprPtr e = parse_tuple();
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = node(Expr::Kind::kList, t.line);
          while (!at_op("]")) {
            e->args.push_back(parse_expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = node(Expr::Kind::kDict, t.line);
          while (!at_op("}")) {
            e->args.push_back(parse_expression());
            expect_op(":");
            e->args.push_back(parse_expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("}");
          return e;
        }
        break;
      default: break;
    }
    fail("expected an expression, found " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        const int line = next().line;
        auto a = node(Expr::Kind::kGetAttr, line);
        if (peek().type == Type::kInt) {
          // x.0 is x[0]
          a->kind = Expr::Kind::kGetItem;
          auto index = node(Expr::Kind::kLiteral, line);
          index->value = Value(integer_literal(next()));
          a->args.push_back(std::move(e));
          a->args.push_back(std::move(index));
        } else {
          a->name = expect_name("an attribute name after '.'");
          a->args.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (at_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr subject) {
    const int line = next().line;  // '['
    ExprPtr bounds[3];
    int part = 0;
    bool is_slice = false;
    for (;;) {
      if (at_op("]")) break;
      if (at_op(":")) {
        next();
        is_slice = true;
        if (++part > 2) fail("a slice has at most three parts");
        continue;
      }
      if (bounds[part]) fail("expected ':' or ']' in a subscript, found " + describe(peek()));
      bounds[part] = parse_expression();
    }
    expect_op("]");
    if (!is_slice) {
      if (!bounds[0]) fail("an empty subscript '[]'");
      auto g = node(Expr::Kind::kGetItem, line);
      g->args.push_back(std::move(subject));
      g->args.push_back(std::move(bounds[0]));
      return g;
    }
    auto s = node(Expr::Kind::kSlice, line);
    s->args.push_back(std::move(subject));
    for (auto& b : bounds) s->args.push_back(std::move(b));
    return s;
  }

  // "(" args ")" after the callee / filter / test, into e->args[1..] and kwargs.
  void parse_arguments(Expr* e) {
    expect_op("(");
    while (!at_op(")")) {
      if (at_op("*") || at_op("**")) fail("*args and **kwargs in calls are not supported");
      if (peek().type == Type::kName && at_op("=", 1)) {
        std::string key = next().text;
        next();
        e->kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e->kwargs.empty()) fail("a positional argument after a keyword argument");
        e->args.push_back(parse_expression());
      }
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = node(Expr::Kind::kCall, peek().line);
    c->args.push_back(std::move(callee));
    parse_arguments(c.get());
    return c;
  }

  ExprPtr parse_filters(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        const int line = next().line;
        auto f = node(Expr::Kind::kFilter, line);
        f->name = expect_name("a filter name after '|'");
        if (!has_filter(f->name)) throw Error(line, "no filter named '" + f->name + "'");
        f->args.push_back(std::move(e));
        if (at_op("(")) parse_arguments(f.get());
        e = std::move(f);
      } else if (at_name("is")) {
        const int line = next().line;
        auto t = node(Expr::Kind::kTest, line);
        if (at_name("not")) {
          next();
          t->negated = true;
        }
        t->name = expect_name("a test name after 'is'");
        if (!has_test(t->name)) throw Error(line, "no test named '" + t->name + "'");
        t->args.push_back(std::move(e));
        if (at_op("(")) {
          parse_arguments(t.get());
        } else if (starts_test_argument()) {
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas false`: a test takes one argument without
  // parentheses when an operand follows (not a keyword that continues the outer
  // expression).
  bool starts_test_argument() const {
    const Token& t = peek();
    if (t.type == Type::kString || t.type == Type::kInt || t.type == Type::kFloat) return true;
    if (t.type == Type::kOp) return t.text == "[" || t.text == "{";
    if (t.type != Type::kName) return false;
    static const std::set<std::string> keywords = {"else", "or", "and", "if", "in", "not", "is"};
    return !keywords.count(t.text);
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace submoe::jinja
