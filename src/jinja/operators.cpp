// Python's operators, item and attribute access, slicing and iteration, as
// jinja2 evaluates them in its sandbox.
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/utf8.h"

namespace submoe::jinja {
namespace {

// Caps on what one operation may build: a template that repeats a string a
// billion times is an error, not an out-of-memory abort.
constexpr size_t kMaxBuiltBytes = size_t{64} << 20;
constexpr size_t kMaxBuiltItems = size_t{1} << 20;

bool int_like(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }

[[noreturn]] void unsupported_operands(std::string_view op, const Value& a, const Value& b, int line) {
  throw Error(line, "unsupported operand type(s) for " + std::string(op) + ": '" + a.type_name() + "' and '" +
                        b.type_name() + "'");
}

// Integer arithmetic without wrapping: `op` is one of the __builtin_*_overflow.
template <typename Op>
Value checked(Op op, int64_t a, int64_t b, int line) {
  int64_t r = 0;
  if (op(a, b, &r)) throw Error(line, "integer overflow in the template's arithmetic");
  return Value(r);
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t n, int line) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value(ValueList{});
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (s.size() * static_cast<size_t>(n) > kMaxBuiltBytes || static_cast<size_t>(n) > kMaxBuiltBytes)
      throw Error(line, "a repeated string would exceed 64 MiB");
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const ValueList& l = seq.as_list();
  if (l.size() * static_cast<size_t>(n) > kMaxBuiltItems || static_cast<size_t>(n) > kMaxBuiltItems)
    throw Error(line, "a repeated list would exceed 2^20 items");
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), l.begin(), l.end());
  return Value(std::move(out));
}

int three_way(const Value& a, const Value& b, std::string_view op, int line) {
  if (a.is_number() && b.is_number()) {
    if (int_like(a) && int_like(b)) return int_of(a) < int_of(b) ? -1 : int_of(a) > int_of(b) ? 1 : 0;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i])) continue;
      return three_way(x[i], y[i], op, line);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) throw_undefined(a, line);
  if (b.is_undefined()) throw_undefined(b, line);
  throw Error(line, "'" + std::string(op) + "' not supported between instances of '" + a.type_name() + "' and '" +
                        b.type_name() + "'");
}

bool contains(const Value& container, const Value& item, int line) {
  switch (container.type()) {
    case Value::Type::kString:
      if (!item.is_string())
        throw Error(line, std::string("'in <string>' requires string as left operand, not ") + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kList:
      for (const Value& v : container.as_list())
        if (equal(v, item)) return true;
      return false;
    case Value::Type::kDict:
    case Value::Type::kNamespace:
      return item.is_string() && container.mapping().find(item.as_string()) != nullptr;
    case Value::Type::kUndefined: return false;  // jinja2's Undefined iterates as empty
    default: throw Error(line, std::string("argument of type '") + container.type_name() + "' is not iterable");
  }
}

// Python's slice index adjustment for a sequence of length n.
void adjust_slice(int64_t n, const Value& start_v, const Value& stop_v, int64_t step, int64_t* start, int64_t* stop,
                  int line) {
  auto bound = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    if (!int_like(v)) throw Error(line, "slice indices must be integers or None");
    int64_t x = int_of(v);
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  *start = bound(start_v, step < 0 ? n - 1 : 0);
  *stop = bound(stop_v, step < 0 ? -1 : n);
}

}  // namespace

[[noreturn]] void throw_undefined(const Value& v, int line) {
  const std::string& name = v.is_undefined() ? v.undefined_name() : std::string();
  throw Error(line, name.empty() ? "a value is undefined" : "'" + name + "' is undefined");
}

Value binary_op(std::string_view op, const Value& a, const Value& b, int line) {
  if (op == "~") {
    std::string s = a.str();
    s += b.str();
    return Value(std::move(s));
  }
  if (a.is_undefined()) throw_undefined(a, line);
  if (b.is_undefined()) throw_undefined(b, line);
  if (op == "+") {
    if (int_like(a) && int_like(b)) return checked(add_overflows, int_of(a), int_of(b), line);
    if (a.is_number() && b.is_number()) return Value(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > kMaxBuiltBytes)
        throw Error(line, "a joined string would exceed 64 MiB");
      std::string s = a.as_string();
      s += b.as_string();
      return Value(std::move(s));
    }
    if (a.is_list() && b.is_list()) {
      ValueList l = a.as_list();
      l.insert(l.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(l));
    }
    if (a.is_string())
      throw Error(line, std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
    if (a.is_list())
      throw Error(line, std::string("can only concatenate list (not \"") + b.type_name() + "\") to list");
    unsupported_operands(op, a, b, line);
  }
  if (op == "*") {
    if (int_like(a) && int_like(b)) return checked(mul_overflows, int_of(a), int_of(b), line);
    if (a.is_number() && b.is_number()) return Value(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && int_like(b)) return repeat(a, int_of(b), line);
    if (int_like(a) && (b.is_string() || b.is_list())) return repeat(b, int_of(a), line);
    unsupported_operands(op, a, b, line);
  }
  if (!a.is_number() || !b.is_number()) {
    if (op == "%" && a.is_string()) throw Error(line, "string formatting with '%' is not supported");
    unsupported_operands(op, a, b, line);
  }
  const bool ints = int_like(a) && int_like(b);
  if (op == "-") {
    if (ints) return checked(sub_overflows, int_of(a), int_of(b), line);
    return Value(a.as_double() - b.as_double());
  }
  if (op == "/") {
    if (b.as_double() == 0.0) throw Error(line, "division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0.0) throw Error(line, op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      const int64_t x = int_of(a), y = int_of(b);
      if (x == INT64_MIN && y == -1) throw Error(line, "integer overflow in the template's arithmetic");
      if (op == "//") return Value(floor_div(x, y));
      return Value(x - floor_div(x, y) * y);
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "//") return Value(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  if (op == "**") {
    if (ints && int_of(b) >= 0) {
      int64_t base = int_of(a), e = int_of(b), acc = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(acc, base, &acc)) throw Error(line, "integer overflow in the template's arithmetic");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base))
          throw Error(line, "integer overflow in the template's arithmetic");
      }
      return Value(acc);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  throw Error(line, "unknown operator '" + std::string(op) + "'");
}

bool compare_op(std::string_view op, const Value& a, const Value& b, int line) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(b, a, line);
  if (op == "not in") return !contains(b, a, line);
  const int c = three_way(a, b, op, line);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  if (op == ">=") return c >= 0;
  throw Error(line, "unknown comparison '" + std::string(op) + "'");
}

ValueList iterate(const Value& v, int line) {
  switch (v.type()) {
    case Value::Type::kList: return v.as_list();
    case Value::Type::kDict:
    case Value::Type::kNamespace: {
      ValueList keys;
      for (const auto& item : v.mapping().items) keys.emplace_back(item.first);
      return keys;
    }
    case Value::Type::kString: {
      const std::string& s = v.as_string();
      const std::vector<size_t> offsets = code_point_offsets(s);
      ValueList chars;
      for (size_t i = 0; i + 1 < offsets.size(); ++i) chars.emplace_back(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
      return chars;
    }
    case Value::Type::kUndefined: return {};
    default: throw Error(line, std::string("'") + v.type_name() + "' object is not iterable");
  }
}

Value get_attr(const Value& subject, const std::string& name, int line) {
  if (subject.is_undefined()) throw_undefined(subject, line);
  if (subject.is_mapping()) {
    if (const Value* v = subject.mapping().find(name)) return *v;
  }
  return Value::undefined(name);
}

// The name an out-of-range index reports: "[3]".
std::string index_name(int64_t i) {
  std::string name = "[";
  name.append(std::to_string(i));
  name.push_back(']');
  return name;
}

Value get_item(const Value& subject, const Value& key, int line) {
  if (subject.is_undefined()) throw_undefined(subject, line);
  if (subject.is_mapping()) {
    if (key.is_string())
      if (const Value* v = subject.mapping().find(key.as_string())) return *v;
    return Value::undefined(key.is_string() ? key.as_string() : key.repr());
  }
  if ((subject.is_list() || subject.is_string()) && int_like(key)) {
    int64_t i = int_of(key);
    if (subject.is_list()) {
      const ValueList& l = subject.as_list();
      const int64_t n = static_cast<int64_t>(l.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(index_name(int_of(key)));
      return l[static_cast<size_t>(i)];
    }
    const std::string& s = subject.as_string();
    const std::vector<size_t> offsets = code_point_offsets(s);
    const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined(index_name(int_of(key)));
    const size_t k = static_cast<size_t>(i);
    return Value(s.substr(offsets[k], offsets[k + 1] - offsets[k]));
  }
  return Value::undefined(key.is_string() ? key.as_string() : key.repr());
}

Value slice(const Value& subject, const Value& start_v, const Value& stop_v, const Value& step_v, int line) {
  if (subject.is_undefined()) throw_undefined(subject, line);
  int64_t step = 1;
  if (!step_v.is_none() && !step_v.is_undefined()) {
    if (!int_like(step_v)) throw Error(line, "slice indices must be integers or None");
    step = int_of(step_v);
    if (step == 0) throw Error(line, "slice step cannot be zero");
  }
  if (subject.is_list()) {
    const ValueList& l = subject.as_list();
    int64_t start, stop;
    adjust_slice(static_cast<int64_t>(l.size()), start_v, stop_v, step, &start, &stop, line);
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(l[static_cast<size_t>(i)]);
    return Value(std::move(out));
  }
  if (subject.is_string()) {
    const std::string& s = subject.as_string();
    const std::vector<size_t> offsets = code_point_offsets(s);
    int64_t start, stop;
    adjust_slice(static_cast<int64_t>(offsets.size()) - 1, start_v, stop_v, step, &start, &stop, line);
    std::string out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      const size_t k = static_cast<size_t>(i);
      out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
    }
    return Value(std::move(out));
  }
  throw Error(line, std::string("'") + subject.type_name() + "' object is not subscriptable");
}

}  // namespace submoe::jinja
