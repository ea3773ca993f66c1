#include "submoe/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace submoe::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* ValueDict::find(std::string_view key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void ValueDict::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return index < positional.size() ? &positional[index] : nullptr;
}

Value Value::tuple(ValueList l) {
  Value v(std::move(l));
  v.tuple_ = true;
  return v;
}

Value Value::make_namespace(ValueDict d) {
  Value v;
  v.v_ = std::make_shared<ValueDict>(std::move(d));
  return v;
}

Value Value::function(std::string name, std::function<Value(const CallArgs&)> call) {
  Value v;
  v.v_ = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      // Beyond int64: a float, as the value cannot be held exactly anyway.
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList list;
      list.reserve(j.size());
      for (const auto& e : j) list.push_back(from_json(e));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict dict;
      for (auto it = j.begin(); it != j.end(); ++it) dict.set(it.key(), from_json(it.value()));
      return Value(std::move(dict));
    }
    default: return none();  // binary and discarded values do not come from a parsed body
  }
}

double Value::as_double() const {
  switch (type()) {
    case Type::kBool: return as_bool() ? 1.0 : 0.0;
    case Type::kInt: return static_cast<double>(as_int());
    case Type::kFloat: return as_float();
    default: return 0.0;
  }
}

bool Value::truthy() const {
  switch (type()) {
    case Type::kUndefined:
    case Type::kNone: return false;
    case Type::kBool: return as_bool();
    case Type::kInt: return as_int() != 0;
    case Type::kFloat: return as_float() != 0.0;
    case Type::kString: return !as_string().empty();
    case Type::kList: return !as_list().empty();
    case Type::kDict: return !as_dict().items.empty();
    case Type::kNamespace:
    case Type::kFunction: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (type()) {
    case Type::kUndefined: return "Undefined";
    case Type::kNone: return "NoneType";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kFloat: return "float";
    case Type::kString: return "str";
    case Type::kList: return tuple_ ? "tuple" : "list";
    case Type::kDict: return "dict";
    case Type::kNamespace: return "Namespace";
    case Type::kFunction: return "function";
  }
  return "?";
}

std::string python_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0.0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits and exponent, then Python's layout rule.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits.push_back(c);
  // Built by appending (GCC 12's -Wrestrict misfires on operator+ chains).
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out.append(ebuf);
    return out;
  }
  if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
    return out;
  }
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    out.append(digits);
    out.append(int_digits - digits.size(), '0');
    out.append(".0");
  } else {
    out.append(digits, 0, int_digits);
    out.push_back('.');
    out.append(digits, int_digits, std::string::npos);
  }
  return out;
}

namespace {

std::string python_string_repr(const std::string& s) {
  // Python prefers single quotes unless the text holds ' and no ".
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(q)) {
          out.push_back('\\');
          out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back(q);
  return out;
}

void json_string(const std::string& s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': *out += "\\\""; continue;
      case '\\': *out += "\\\\"; continue;
      case '\n': *out += "\\n"; continue;
      case '\r': *out += "\\r"; continue;
      case '\t': *out += "\\t"; continue;
      case '\b': *out += "\\b"; continue;
      case '\f': *out += "\\f"; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      // Decode one UTF-8 sequence and write it as \uXXXX (a surrogate pair above
      // the BMP), as json.dumps(ensure_ascii=True) does.
      uint32_t cp = 0;
      int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
      cp = c & (0x3f >> extra);
      for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

bool json_value(const Value& v, const JsonFormat& f, int depth, std::string* out) {
  const std::string item_sep = f.item_separator ? *f.item_separator : f.indent >= 0 ? "," : ", ";
  auto newline = [&](int d) {
    if (f.indent < 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(f.indent) * static_cast<size_t>(d), ' ');
  };
  switch (v.type()) {
    case Value::Type::kNone: *out += "null"; return true;
    case Value::Type::kBool: *out += v.as_bool() ? "true" : "false"; return true;
    case Value::Type::kInt: *out += std::to_string(v.as_int()); return true;
    case Value::Type::kFloat: {
      const double x = v.as_float();
      *out += std::isnan(x) ? "NaN" : std::isinf(x) ? (x > 0 ? "Infinity" : "-Infinity") : python_float_repr(x);
      return true;
    }
    case Value::Type::kString: json_string(v.as_string(), f.ensure_ascii, out); return true;
    case Value::Type::kList: {
      const ValueList& list = v.as_list();
      if (list.empty()) {
        *out += "[]";
        return true;
      }
      out->push_back('[');
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) *out += item_sep;
        newline(depth + 1);
        if (!json_value(list[i], f, depth + 1, out)) return false;
      }
      newline(depth);
      out->push_back(']');
      return true;
    }
    case Value::Type::kDict:
    case Value::Type::kNamespace: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.mapping().items) items.push_back(&item);
      if (f.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (items.empty()) {
        *out += "{}";
        return true;
      }
      out->push_back('{');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += item_sep;
        newline(depth + 1);
        json_string(items[i]->first, f.ensure_ascii, out);
        *out += f.key_separator;
        if (!json_value(items[i]->second, f, depth + 1, out)) return false;
      }
      newline(depth);
      out->push_back('}');
      return true;
    }
    default: return false;
  }
}

// {'k': v, ...} as Python prints a dict.
std::string dict_repr(const ValueDict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.items) {
    if (!first) out += ", ";
    first = false;
    out += python_string_repr(k);
    out += ": ";
    out += v.repr();
  }
  out += "}";
  return out;
}

}  // namespace

bool to_python_json(const Value& v, const JsonFormat& format, std::string* out) {
  return json_value(v, format, 0, out);
}

std::string Value::str() const {
  switch (type()) {
    case Type::kUndefined: return "";
    case Type::kString: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (type()) {
    case Type::kUndefined: return "";
    case Type::kNone: return "None";
    case Type::kBool: return as_bool() ? "True" : "False";
    case Type::kInt: return std::to_string(as_int());
    case Type::kFloat: return python_float_repr(as_float());
    case Type::kString: return python_string_repr(as_string());
    case Type::kList: {
      std::string out = tuple_ ? "(" : "[";
      const ValueList& list = as_list();
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) out += ", ";
        out += list[i].repr();
      }
      if (tuple_ && list.size() == 1) out += ",";
      out += tuple_ ? ")" : "]";
      return out;
    }
    case Type::kDict: return dict_repr(as_dict());
    case Type::kNamespace: return "<Namespace " + dict_repr(namespace_dict()) + ">";
    case Type::kFunction: return "<function " + as_function().name + ">";
  }
  return "";
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
      const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return true;
    case Value::Type::kString: return a.as_string() == b.as_string();
    case Value::Type::kList: {
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Type::kDict: {
      const ValueDict& x = a.as_dict();
      const ValueDict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Type::kNamespace: return &a.namespace_dict() == &b.namespace_dict();
    case Value::Type::kFunction: return &a.as_function() == &b.as_function();
    default: return false;
  }
}

}  // namespace submoe::jinja
