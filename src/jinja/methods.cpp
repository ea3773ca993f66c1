// The Python str and dict methods chat templates call. Case mapping covers ASCII
// only (Python maps all of Unicode); whitespace is Python's ASCII whitespace.
#include <string_view>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/string_ops.h"
#include "jinja/utf8.h"

namespace submoe::jinja {
namespace {

const std::string& string_arg(const CallArgs& args, size_t index, const char* name, const char* method, int line) {
  const Value* v = args.get(index, name);
  if (!v || !v->is_string())
    throw Error(line, std::string(method) + "() argument must be str, not " + (v ? v->type_name() : "nothing"));
  return v->as_string();
}

// Optional string argument: null when absent or None.
const std::string* optional_string(const CallArgs& args, size_t index, const char* name, const char* method,
                                   int line) {
  const Value* v = args.get(index, name);
  if (!v || v->is_none() || v->is_undefined()) return nullptr;
  if (!v->is_string())
    throw Error(line, std::string(method) + "() argument must be str or None, not " + v->type_name());
  return &v->as_string();
}

int64_t int_arg(const CallArgs& args, size_t index, const char* name, int64_t fallback, int line) {
  const Value* v = args.get(index, name);
  if (!v || v->is_none() || v->is_undefined()) return fallback;
  if (!v->is_int() && !v->is_bool())
    throw Error(line, std::string("'") + v->type_name() + "' object cannot be interpreted as an integer");
  return v->is_bool() ? v->as_bool() : v->as_int();
}

// prefix may be a str or a tuple (list) of str.
bool affix_matches(const std::string& s, const Value& affix, bool prefix, const char* method, int line) {
  auto one = [&](const Value& a) {
    if (!a.is_string())
      throw Error(line, std::string(method) + " first arg must be str or a tuple of str, not " + a.type_name());
    const std::string& p = a.as_string();
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.as_list())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

Value string_list(std::vector<std::string> parts) {
  ValueList out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return Value(std::move(out));
}

bool string_method(const std::string& s, std::string_view name, const CallArgs& args, int line, Value* out) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const std::string* chars = optional_string(args, 0, "chars", std::string(name).c_str(), line);
    *out = Value(strip(s, chars, name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    const std::string* sep = optional_string(args, 0, "sep", std::string(name).c_str(), line);
    if (sep && sep->empty()) throw Error(line, "empty separator");
    *out = string_list(split(s, sep, int_arg(args, 1, "maxsplit", -1, line), name == "rsplit"));
  } else if (name == "splitlines") {
    *out = string_list(split_lines(s));
  } else if (name == "startswith" || name == "endswith") {
    const Value* affix = args.get(0, "prefix");
    if (!affix) throw Error(line, std::string(name) + "() takes at least 1 argument (0 given)");
    *out = Value(affix_matches(s, *affix, name == "startswith", std::string(name).c_str(), line));
  } else if (name == "upper") {
    *out = Value(ascii_upper(s));
  } else if (name == "lower") {
    *out = Value(ascii_lower(s));
  } else if (name == "title") {
    *out = Value(title_case(s));
  } else if (name == "capitalize") {
    *out = Value(capitalize(s));
  } else if (name == "replace") {
    *out = Value(replace(s, string_arg(args, 0, "old", "replace", line), string_arg(args, 1, "new", "replace", line),
                         int_arg(args, 2, "count", -1, line)));
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const std::string& sub = string_arg(args, 0, "sub", std::string(name).c_str(), line);
    const size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos && (name == "index" || name == "rindex")) throw Error(line, "substring not found");
    *out = Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(code_point_count(s.substr(0, at))));
  } else if (name == "count") {
    const std::string& sub = string_arg(args, 0, "sub", "count", line);
    int64_t n = 0;
    if (sub.empty()) {
      n = static_cast<int64_t>(code_point_count(s)) + 1;
    } else {
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    }
    *out = Value(n);
  } else if (name == "join") {
    const Value* items = args.get(0, "iterable");
    if (!items) throw Error(line, "join() takes exactly one argument (0 given)");
    std::string joined;
    bool first = true;
    for (const Value& item : iterate(*items, line)) {
      if (!item.is_string())
        throw Error(line, std::string("sequence item: expected str instance, ") + item.type_name() + " found");
      if (!first) joined += s;
      first = false;
      joined += item.as_string();
    }
    *out = Value(std::move(joined));
  } else if (name == "removeprefix" || name == "removesuffix") {
    const std::string& a = string_arg(args, 0, "prefix", std::string(name).c_str(), line);
    std::string r = s;
    if (name == "removeprefix" && s.compare(0, a.size(), a) == 0) r = s.substr(a.size());
    if (name == "removesuffix" && !a.empty() && s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0)
      r = s.substr(0, s.size() - a.size());
    *out = Value(std::move(r));
  } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "isupper" ||
             name == "islower") {
    *out = Value(ascii_class(s, name));
  } else {
    return false;
  }
  return true;
}

bool dict_method(const Value& d, std::string_view name, const CallArgs& args, int line, Value* out) {
  const ValueDict& dict = d.mapping();
  if (name == "items") {
    ValueList items;
    for (const auto& [k, v] : dict.items) items.push_back(Value::tuple(ValueList{Value(k), v}));
    *out = Value(std::move(items));
  } else if (name == "keys") {
    ValueList keys;
    for (const auto& item : dict.items) keys.emplace_back(item.first);
    *out = Value(std::move(keys));
  } else if (name == "values") {
    ValueList values;
    for (const auto& item : dict.items) values.push_back(item.second);
    *out = Value(std::move(values));
  } else if (name == "get") {
    const Value* key = args.get(0, "key");
    if (!key) throw Error(line, "get expected at least 1 argument, got 0");
    const Value* fallback = args.get(1, "default");
    const Value* found = key->is_string() ? dict.find(key->as_string()) : nullptr;
    *out = found ? *found : fallback ? *fallback : Value::none();
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool call_method(const Value& subject, std::string_view name, const CallArgs& args, int line, Value* out) {
  if (subject.is_string()) return string_method(subject.as_string(), name, args, line, out);
  if (subject.is_dict()) return dict_method(subject, name, args, line, out);
  if (subject.is_list() && (name == "index" || name == "count")) {
    const Value* x = args.get(0, "value");
    if (!x) throw Error(line, std::string(name) + "() takes exactly one argument (0 given)");
    const ValueList& l = subject.as_list();
    int64_t n = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!equal(l[i], *x)) continue;
      if (name == "index") {
        *out = Value(static_cast<int64_t>(i));
        return true;
      }
      ++n;
    }
    if (name == "index") throw Error(line, x->repr() + " is not in list");
    *out = Value(n);
    return true;
  }
  return false;
}

}  // namespace submoe::jinja
