// jinja2's built-in filters and tests, transformers' tojson, and the global
// functions chat templates call.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <map>
#include <set>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/string_ops.h"
#include "jinja/utf8.h"

namespace submoe::jinja {
namespace {

constexpr int64_t kMaxRange = int64_t{1} << 20;

const Value kNone = Value::none();

// By value: `fallback` is often a temporary.
Value arg(const CallArgs& args, size_t index, const char* name, const Value& fallback = kNone) {
  const Value* v = args.get(index, name);
  return v ? *v : fallback;
}

bool flag(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = args.get(index, name);
  return v && !v->is_none() && !v->is_undefined() ? v->truthy() : fallback;
}

int64_t length_of(const Value& v, int line) {
  switch (v.type()) {
    case Value::Type::kString: return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Type::kList: return static_cast<int64_t>(v.as_list().size());
    case Value::Type::kDict:
    case Value::Type::kNamespace: return static_cast<int64_t>(v.mapping().items.size());
    case Value::Type::kUndefined: return 0;
    default: throw Error(line, std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

const std::string& need_string(const Value& v, const char* filter, int line) {
  if (!v.is_string()) throw Error(line, std::string("the filter '") + filter + "' needs a string, got " + v.type_name());
  return v.as_string();
}

// The attribute `path` ("a.b", "0") of an item, as jinja2's make_attrgetter.
Value attribute_of(const Value& item, const std::string& path, int line) {
  Value v = item;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    // jinja2 reads an all-digit part as an index (short enough to be one).
    const bool numeric = !part.empty() && part.size() <= 18 &&
                         std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = numeric ? get_item(v, Value(static_cast<int64_t>(std::stoll(part))), line) : get_item(v, Value(part), line);
    if (dot == std::string::npos) return v;
    if (v.is_undefined()) return v;
    start = dot + 1;
  }
}

// Sort key for sort / unique / dictsort / min / max: strings fold case unless
// case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(ascii_lower(v.as_string())) : v;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keyword = args.keyword;
  return rest;
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& subject, const CallArgs& args, bool want, bool by_attribute, int line) {
  ValueList out;
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    const Value a = arg(args, next++, "attribute");
    if (!a.is_string()) throw Error(line, "selectattr / rejectattr need an attribute name");
    attribute = a.as_string();
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) throw Error(line, "the test of select / reject must be a name");
    test = args.positional[next++].as_string();
    if (!has_test(test)) throw Error(line, "no test named '" + test + "'");
  }
  CallArgs test_args;
  for (size_t i = next; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  for (const Value& item : iterate(subject, line)) {
    const Value probe = by_attribute ? attribute_of(item, attribute, line) : item;
    const bool pass = test.empty() ? probe.truthy() : apply_test(test, probe, test_args, line);
    if (pass == want) out.push_back(item);
  }
  return Value(std::move(out));
}

Value to_json(const Value& subject, const CallArgs& args, int line) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonFormat f;
  f.ensure_ascii = flag(args, 0, "ensure_ascii", false);
  const Value indent = arg(args, 1, "indent");
  if (indent.is_int()) f.indent = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64));
  if (indent.is_string()) throw Error(line, "tojson: a string indent is not supported");
  const Value separators = arg(args, 2, "separators");
  if (separators.is_list()) {
    const ValueList& s = separators.as_list();
    if (s.size() != 2 || !s[0].is_string() || !s[1].is_string())
      throw Error(line, "tojson: separators must be a pair of strings");
    f.item_separator = s[0].as_string();
    f.key_separator = s[1].as_string();
  }
  f.sort_keys = flag(args, 3, "sort_keys", false);
  std::string out;
  if (!to_python_json(subject, f, &out))
    throw Error(line, std::string("Object of type ") + subject.type_name() + " is not JSON serializable");
  return Value(std::move(out));
}

Value indent_filter(const std::string& s, const CallArgs& args, int line) {
  const Value width = arg(args, 0, "width", Value(4));
  std::string indention;
  if (width.is_string()) {
    indention = width.as_string();
  } else if (width.is_int()) {
    indention.assign(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 256)), ' ');
  } else {
    throw Error(line, "indent: width must be an integer or a string");
  }
  const bool first = flag(args, 1, "first", false);
  const bool blank = flag(args, 2, "blank", false);
  std::vector<std::string> lines = split_lines(s + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += indention;
    out += lines[i];
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

Value number_filter(const Value& v, const CallArgs& args, bool want_int, int line) {
  const Value fallback = arg(args, 0, "default", want_int ? Value(0) : Value(0.0));
  if (v.is_bool()) return want_int ? Value(static_cast<int64_t>(v.as_bool())) : Value(v.as_bool() ? 1.0 : 0.0);
  if (v.is_int()) return want_int ? v : Value(static_cast<double>(v.as_int()));
  if (v.is_float()) {
    if (!want_int) return v;
    if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return fallback;
    return Value(static_cast<int64_t>(v.as_float()));
  }
  if (v.is_string()) {
    const std::string t = strip(v.as_string(), nullptr, true, true);
    if (t.empty()) return fallback;
    char* end = nullptr;
    errno = 0;
    if (want_int) {
      const long long x = std::strtoll(t.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return Value(static_cast<int64_t>(x));
      // jinja2 falls back to float("3.7") then int()
      const double d = std::strtod(t.c_str(), &end);
      if (*end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
      return fallback;
    }
    const double d = std::strtod(t.c_str(), &end);
    return *end == '\0' ? Value(d) : fallback;
  }
  (void)line;
  return fallback;
}

Value sorted(const Value& subject, const CallArgs& args, int line) {
  const bool reverse = flag(args, 0, "reverse", false);
  const bool case_sensitive = flag(args, 1, "case_sensitive", false);
  const Value attribute = arg(args, 2, "attribute");
  ValueList items = iterate(subject, line);
  auto key = [&](const Value& v) {
    return sort_key(attribute.is_string() ? attribute_of(v, attribute.as_string(), line) : v, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? compare_op("<", key(b), key(a), line) : compare_op("<", key(a), key(b), line);
  });
  return Value(std::move(items));
}

// min / max: the first item no other beats under `op` (">" for max).
Value extremum(const Value& v, const CallArgs& args, const char* op, int line) {
  ValueList items = iterate(v, line);
  if (items.empty()) return Value::undefined(op[0] == '>' ? "max" : "min");
  const bool cs = flag(args, 0, "case_sensitive", false);
  const Value attribute = arg(args, 1, "attribute");
  auto key = [&](const Value& x) {
    return sort_key(attribute.is_string() ? attribute_of(x, attribute.as_string(), line) : x, cs);
  };
  Value best = items[0];
  for (const Value& x : items)
    if (compare_op(op, key(x), key(best), line)) best = x;
  return best;
}

using FilterFn = Value (*)(const Value&, const CallArgs&, int);

// A table with jinja2's second names for some entries ("d" for "default", ...).
template <typename Table>
Table with_aliases(Table table, std::initializer_list<std::pair<const char*, const char*>> aliases) {
  for (const auto& [alias, name] : aliases) table[alias] = table.at(name);
  return table;
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> table = with_aliases<std::map<std::string, FilterFn, std::less<>>>({
      {"abs",
       [](const Value& v, const CallArgs&, int line) -> Value {
         if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         if (v.is_number()) return Value(std::fabs(v.as_double()));
         throw Error(line, std::string("bad operand type for abs(): '") + v.type_name() + "'");
       }},
      {"capitalize", [](const Value& v, const CallArgs&, int line) { return Value(capitalize(need_string(v, "capitalize", line))); }},
      {"length", [](const Value& v, const CallArgs&, int line) { return Value(length_of(v, line)); }},
      {"default",
       [](const Value& v, const CallArgs& args, int) {
         const bool boolean = flag(args, 1, "boolean", false);
         if (v.is_undefined() || (boolean && !v.truthy())) return arg(args, 0, "default_value", Value(std::string()));
         return v;
       }},
      {"dictsort",
       [](const Value& v, const CallArgs& args, int line) {
         if (!v.is_mapping()) throw Error(line, "dictsort needs a dict");
         const bool case_sensitive = flag(args, 0, "case_sensitive", false);
         const Value by = arg(args, 1, "by", Value("key"));
         const bool reverse = flag(args, 2, "reverse", false);
         const size_t index = by.is_string() && by.as_string() == "value" ? 1 : 0;
         ValueList items;
         for (const auto& [k, val] : v.mapping().items) items.push_back(Value::tuple(ValueList{Value(k), val}));
         std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
           const Value ka = sort_key(a.as_list()[index], case_sensitive);
           const Value kb = sort_key(b.as_list()[index], case_sensitive);
           return reverse ? compare_op("<", kb, ka, line) : compare_op("<", ka, kb, line);
         });
         return Value(std::move(items));
       }},
      {"escape",
       [](const Value& v, const CallArgs&, int) {
         std::string out;
         for (char c : v.str()) {
           switch (c) {
             case '&': out += "&amp;"; break;
             case '<': out += "&lt;"; break;
             case '>': out += "&gt;"; break;
             case '"': out += "&#34;"; break;
             case '\'': out += "&#39;"; break;
             default: out.push_back(c);
           }
         }
         return Value(std::move(out));
       }},
      {"first",
       [](const Value& v, const CallArgs&, int line) {
         ValueList items = iterate(v, line);
         return items.empty() ? Value::undefined("first") : items.front();
       }},
      {"last",
       [](const Value& v, const CallArgs&, int line) {
         ValueList items = iterate(v, line);
         return items.empty() ? Value::undefined("last") : items.back();
       }},
      {"float", [](const Value& v, const CallArgs& args, int line) { return number_filter(v, args, false, line); }},
      {"int", [](const Value& v, const CallArgs& args, int line) { return number_filter(v, args, true, line); }},
      {"indent", [](const Value& v, const CallArgs& args, int line) { return indent_filter(v.str(), args, line); }},
      {"items",
       [](const Value& v, const CallArgs&, int line) {
         if (v.is_undefined()) return Value(ValueList{});
         if (!v.is_mapping()) throw Error(line, std::string("the filter 'items' needs a mapping, got ") + v.type_name());
         ValueList items;
         for (const auto& [k, val] : v.mapping().items) items.push_back(Value::tuple(ValueList{Value(k), val}));
         return Value(std::move(items));
       }},
      {"join",
       [](const Value& v, const CallArgs& args, int line) {
         const Value sep = arg(args, 0, "d", Value(std::string()));
         const Value attribute = arg(args, 1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : iterate(v, line)) {
           if (!first) out += sep.str();
           first = false;
           out += (attribute.is_string() ? attribute_of(item, attribute.as_string(), line) : item).str();
         }
         return Value(std::move(out));
       }},
      {"list", [](const Value& v, const CallArgs&, int line) { return Value(iterate(v, line)); }},
      {"lower", [](const Value& v, const CallArgs&, int) { return Value(ascii_lower(v.str())); }},
      {"upper", [](const Value& v, const CallArgs&, int) { return Value(ascii_upper(v.str())); }},
      {"title", [](const Value& v, const CallArgs&, int) { return Value(title_case(v.str())); }},
      {"map",
       [](const Value& v, const CallArgs& args, int line) {
         ValueList out;
         const Value* attribute = args.get(SIZE_MAX, "attribute");
         if (attribute) {
           if (!attribute->is_string()) throw Error(line, "map: attribute must be a string");
           const Value* fallback = args.get(SIZE_MAX, "default");
           for (const Value& item : iterate(v, line)) {
             Value x = attribute_of(item, attribute->as_string(), line);
             out.push_back(x.is_undefined() && fallback ? *fallback : x);
           }
           return Value(std::move(out));
         }
         const Value name = arg(args, 0, "filter");
         if (!name.is_string() || !has_filter(name.as_string()))
           throw Error(line, "map needs a filter name or attribute=");
         const CallArgs rest = rest_args(args, 1);
         for (const Value& item : iterate(v, line)) out.push_back(apply_filter(name.as_string(), item, rest, line));
         return Value(std::move(out));
       }},
      {"max", [](const Value& v, const CallArgs& args, int line) { return extremum(v, args, ">", line); }},
      {"min", [](const Value& v, const CallArgs& args, int line) { return extremum(v, args, "<", line); }},
      {"reject", [](const Value& v, const CallArgs& args, int line) { return select_items(v, args, false, false, line); }},
      {"rejectattr", [](const Value& v, const CallArgs& args, int line) { return select_items(v, args, false, true, line); }},
      {"select", [](const Value& v, const CallArgs& args, int line) { return select_items(v, args, true, false, line); }},
      {"selectattr", [](const Value& v, const CallArgs& args, int line) { return select_items(v, args, true, true, line); }},
      {"replace",
       [](const Value& v, const CallArgs& args, int line) {
         const Value old = arg(args, 0, "old");
         const Value with = arg(args, 1, "new");
         const Value count = arg(args, 2, "count");
         if (!old.is_string() || !with.is_string()) throw Error(line, "replace needs two strings");
         return Value(replace(v.str(), old.as_string(), with.as_string(), count.is_int() ? count.as_int() : -1));
       }},
      {"reverse",
       [](const Value& v, const CallArgs&, int line) {
         if (v.is_string()) {
           ValueList cps = iterate(v, line);
           std::string out;
           for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += it->as_string();
           return Value(std::move(out));
         }
         ValueList items = iterate(v, line);
         std::reverse(items.begin(), items.end());
         return Value(std::move(items));
       }},
      {"round",
       [](const Value& v, const CallArgs& args, int line) {
         if (!v.is_number()) throw Error(line, "round needs a number");
         const Value precision = arg(args, 0, "precision", Value(0));
         const Value method = arg(args, 1, "method", Value("common"));
         const double scale = std::pow(10.0, static_cast<double>(precision.is_int() ? precision.as_int() : 0));
         const double x = v.as_double() * scale;
         const std::string m = method.is_string() ? method.as_string() : "common";
         double r;
         if (m == "ceil") {
           r = std::ceil(x);
         } else if (m == "floor") {
           r = std::floor(x);
         } else if (m == "common") {
           r = std::nearbyint(x);  // Python's round(): half to even
         } else {
           throw Error(line, "round: method must be 'common', 'ceil' or 'floor'");
         }
         return Value(r / scale);
       }},
      {"safe", [](const Value& v, const CallArgs&, int) { return v; }},
      {"sort", [](const Value& v, const CallArgs& args, int line) { return sorted(v, args, line); }},
      {"string", [](const Value& v, const CallArgs&, int) { return Value(v.str()); }},
      {"sum",
       [](const Value& v, const CallArgs& args, int line) {
         const Value attribute = arg(args, 0, "attribute");
         Value total = arg(args, 1, "start", Value(0));
         for (const Value& item : iterate(v, line))
           total = binary_op("+", total, attribute.is_string() ? attribute_of(item, attribute.as_string(), line) : item, line);
         return total;
       }},
      {"tojson", [](const Value& v, const CallArgs& args, int line) { return to_json(v, args, line); }},
      {"trim",
       [](const Value& v, const CallArgs& args, int line) {
         const Value chars = arg(args, 0, "chars");
         if (!chars.is_none() && !chars.is_string()) throw Error(line, "trim: chars must be a string");
         return Value(strip(v.str(), chars.is_string() ? &chars.as_string() : nullptr, true, true));
       }},
      {"unique",
       [](const Value& v, const CallArgs& args, int line) {
         const bool cs = flag(args, 0, "case_sensitive", false);
         const Value attribute = arg(args, 1, "attribute");
         ValueList out, seen;
         for (const Value& item : iterate(v, line)) {
           const Value k = sort_key(attribute.is_string() ? attribute_of(item, attribute.as_string(), line) : item, cs);
           if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) continue;
           seen.push_back(k);
           out.push_back(item);
         }
         return Value(std::move(out));
       }},
      {"wordcount",
       [](const Value& v, const CallArgs&, int) {
         int64_t n = 0;
         bool in_word = false;
         for (unsigned char c : v.str()) {
           const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
           if (word && !in_word) ++n;
           in_word = word;
         }
         return Value(n);
       }},
  }, {{"count", "length"}, {"d", "default"}, {"e", "escape"}});
  return table;
}

using TestFn = bool (*)(const Value&, const CallArgs&, int);

bool integer_arg(const CallArgs& args, int line, int64_t* out) {
  const Value a = arg(args, 0, "num");
  if (!a.is_int()) throw Error(line, "divisibleby needs an integer");
  *out = a.as_int();
  return true;
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> table = with_aliases<std::map<std::string, TestFn, std::less<>>>({
      {"defined", [](const Value& v, const CallArgs&, int) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&, int) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&, int) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&, int) { return v.is_bool(); }},
      {"false", [](const Value& v, const CallArgs&, int) { return v.is_bool() && !v.as_bool(); }},
      {"true", [](const Value& v, const CallArgs&, int) { return v.is_bool() && v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&, int) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&, int) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&, int) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&, int) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&, int) { return v.is_dict(); }},
      {"iterable",
       [](const Value& v, const CallArgs&, int) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"sequence", [](const Value& v, const CallArgs&, int) { return v.is_list() || v.is_dict() || v.is_string(); }},
      {"callable", [](const Value& v, const CallArgs&, int) { return v.is_function(); }},
      {"sameas",
       [](const Value& v, const CallArgs& args, int) {
         const Value o = arg(args, 0, "other");
         return v.type() == o.type() && equal(v, o);
       }},
      {"eq", [](const Value& v, const CallArgs& args, int) { return equal(v, arg(args, 0, "b")); }},
      {"ne", [](const Value& v, const CallArgs& args, int) { return !equal(v, arg(args, 0, "b")); }},
      {"lt", [](const Value& v, const CallArgs& args, int line) { return compare_op("<", v, arg(args, 0, "b"), line); }},
      {"le", [](const Value& v, const CallArgs& args, int line) { return compare_op("<=", v, arg(args, 0, "b"), line); }},
      {"gt", [](const Value& v, const CallArgs& args, int line) { return compare_op(">", v, arg(args, 0, "b"), line); }},
      {"ge", [](const Value& v, const CallArgs& args, int line) { return compare_op(">=", v, arg(args, 0, "b"), line); }},
      {"in", [](const Value& v, const CallArgs& args, int line) { return compare_op("in", v, arg(args, 0, "seq"), line); }},
      {"even", [](const Value& v, const CallArgs&, int) { return v.is_int() && v.as_int() % 2 == 0; }},
      {"odd", [](const Value& v, const CallArgs&, int) { return v.is_int() && v.as_int() % 2 != 0; }},
      {"divisibleby",
       [](const Value& v, const CallArgs& args, int line) {
         int64_t n = 0;
         integer_arg(args, line, &n);
         if (n == 0) throw Error(line, "integer division or modulo by zero");
         return v.is_int() && v.as_int() % n == 0;
       }},
      {"lower", [](const Value& v, const CallArgs&, int) { return v.is_string() && ascii_lower(v.as_string()) == v.as_string(); }},
      {"upper", [](const Value& v, const CallArgs&, int) { return v.is_string() && ascii_upper(v.as_string()) == v.as_string(); }},
      {"escaped", [](const Value&, const CallArgs&, int) { return false; }},
  }, {{"equalto", "eq"}, {"==", "eq"}, {"!=", "ne"}, {"lessthan", "lt"}, {"greaterthan", "gt"}});
  return table;
}

ValueDict namespace_entries(const CallArgs& args, int line) {
  ValueDict d;
  for (const Value& p : args.positional) {
    if (!p.is_mapping()) throw Error(line, "namespace() takes a dict and keyword arguments");
    for (const auto& [k, v] : p.mapping().items) d.set(k, v);
  }
  for (const auto& [k, v] : args.keyword) d.set(k, v);
  return d;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) != 0; }
bool has_test(std::string_view name) { return tests().count(name) != 0; }

Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args, int line) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw Error(line, "no filter named '" + std::string(name) + "'");
  return it->second(subject, args, line);
}

bool apply_test(std::string_view name, const Value& subject, const CallArgs& args, int line) {
  const auto it = tests().find(name);
  if (it == tests().end()) throw Error(line, "no test named '" + std::string(name) + "'");
  return it->second(subject, args, line);
}

const Value* builtin_global(std::string_view name) {
  static const std::map<std::string, Value, std::less<>> globals = {
      {"range", Value::function("range",
                                [](const CallArgs& args) {
                                  std::vector<int64_t> bounds;
                                  for (const Value& v : args.positional) {
                                    if (!v.is_int() && !v.is_bool())
                                      throw Error(0, std::string("range() needs integers, got ") + v.type_name());
                                    bounds.push_back(v.is_bool() ? v.as_bool() : v.as_int());
                                  }
                                  if (bounds.empty() || bounds.size() > 3)
                                    throw Error(0, "range() takes 1 to 3 integers");
                                  const int64_t start = bounds.size() == 1 ? 0 : bounds[0];
                                  const int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
                                  const int64_t step = bounds.size() == 3 ? bounds[2] : 1;
                                  if (step == 0) throw Error(0, "range() arg 3 must not be zero");
                                  ValueList out;
                                  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                                    if (static_cast<int64_t>(out.size()) >= kMaxRange)
                                      throw Error(0, "range() of more than 2^20 numbers");
                                    out.emplace_back(i);
                                  }
                                  return Value(std::move(out));
                                })},
      {"namespace",
       Value::function("namespace", [](const CallArgs& args) { return Value::make_namespace(namespace_entries(args, 0)); })},
      {"dict", Value::function("dict", [](const CallArgs& args) { return Value(namespace_entries(args, 0)); })},
      {"raise_exception", Value::function("raise_exception",
                                          [](const CallArgs& args) -> Value {
                                            // The user sees this message: never an empty one
                                            // (raise_exception(''), or an undefined argument).
                                            const Value* m = args.get(0, "message");
                                            std::string message = m ? m->str() : std::string();
                                            if (message.empty()) message = "raise_exception() without a message";
                                            throw RaisedByTemplate(message);
                                          })},
  };
  const auto it = globals.find(name);
  return it == globals.end() ? nullptr : &it->second;
}

}  // namespace submoe::jinja
