// The values a Jinja template computes with, with Python's semantics where a chat
// template can tell the difference: dicts keep insertion order (tojson of a tool
// schema prints its keys as the request gave them), ints and floats are distinct
// (1 prints "1", 1.0 prints "1.0"), None prints "None", and an undefined value
// prints nothing, is false and iterates as empty, as jinja2's default Undefined.
// Lists and dicts are immutable once built (transformers renders chat templates in
// jinja2's ImmutableSandboxedEnvironment); only namespace() objects change.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace submoe::jinja {

class Value;
using ValueList = std::vector<Value>;
// Insertion-ordered string-keyed map.
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);  // replaces an existing key in place
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The keyword argument `name`, else positional[index], else null.
  const Value* get(size_t index, std::string_view name) const;
};

// A callable: a built-in function (range, namespace, raise_exception, ...) or a
// template macro. Throws jinja::Error (internal to the engine) on bad arguments.
struct Function {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

struct Undefined {
  std::string name;  // what was looked up, for error messages
};
struct None {};

class Value {
 public:
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string name = {}) { return Value(Undefined{std::move(name)}); }
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}                                   // NOLINT(google-explicit-constructor)
  Value(int64_t i) : v_(i) {}                                // NOLINT(google-explicit-constructor)
  Value(int i) : v_(static_cast<int64_t>(i)) {}              // NOLINT(google-explicit-constructor)
  Value(double f) : v_(f) {}                                 // NOLINT(google-explicit-constructor)
  Value(std::string s) : v_(std::move(s)) {}                 // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(std::string(s)) {}               // NOLINT(google-explicit-constructor)
  Value(ValueList l) : v_(std::make_shared<const ValueList>(std::move(l))) {}  // NOLINT
  Value(ValueDict d) : v_(std::make_shared<const ValueDict>(std::move(d))) {}  // NOLINT
  // A Python tuple: a list that prints as (a, b) (dict.items(), (a, b) literals).
  static Value tuple(ValueList l);
  static Value make_namespace(ValueDict d);
  static Value function(std::string name, std::function<Value(const CallArgs&)> call);

  // JSON (as a request body holds it) to a value: objects keep their key order.
  static Value from_json(const nlohmann::ordered_json& j);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_undefined() const { return type() == Type::kUndefined; }
  bool is_none() const { return type() == Type::kNone; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_float() const { return type() == Type::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return type() == Type::kString; }
  bool is_list() const { return type() == Type::kList; }  // lists and tuples
  bool is_tuple() const { return is_list() && tuple_; }
  bool is_dict() const { return type() == Type::kDict; }
  bool is_namespace() const { return type() == Type::kNamespace; }
  bool is_mapping() const { return is_dict() || is_namespace(); }
  bool is_function() const { return type() == Type::kFunction; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // A number as a double (bools count as 0 and 1, as in Python).
  double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(v_); }
  const ValueDict& as_dict() const { return *std::get<std::shared_ptr<const ValueDict>>(v_); }
  ValueDict& namespace_dict() const { return *std::get<std::shared_ptr<ValueDict>>(v_); }
  // The entries of a dict or a namespace.
  const ValueDict& mapping() const { return is_dict() ? as_dict() : namespace_dict(); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(v_); }
  const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

  // Python's bool(x).
  bool truthy() const;
  // What {{ x }} prints: Python's str(x); undefined prints "".
  std::string str() const;
  // Python's repr(x) (how a list prints its strings: ['a', 'b']).
  std::string repr() const;
  // Python's type name ("str", "int", "dict", ...), for error messages.
  const char* type_name() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<const ValueList>,
               std::shared_ptr<const ValueDict>, std::shared_ptr<ValueDict>, std::shared_ptr<const Function>>
      v_;
  bool tuple_ = false;
};

// Python's ==, as jinja2 compares (1 == 1.0 == True; lists and dicts by content).
bool equal(const Value& a, const Value& b);

struct JsonFormat {
  int indent = -1;  // < 0: one line
  std::optional<std::string> item_separator;  // none: Python's default, ", " on one line, "," when indented
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
// Python's json.dumps(x, ...) with transformers' tojson defaults (ensure_ascii
// off). Returns false (and leaves *out partial) for a value JSON cannot hold
// (undefined, a function).
bool to_python_json(const Value& v, const JsonFormat& format, std::string* out);

// Python's repr(float): the shortest text that reads back as the same double,
// "1.0" for integral values, scientific below 1e-4 and from 1e16 ("1e-05", "1e+16").
std::string python_float_repr(double f);

}  // namespace submoe::jinja
