// jinja2's built-in filters, tests and global functions, the Python methods chat
// templates call on strings and dicts (message.content.split('</think>'),
// message.get('x')), and the operators' Python semantics. Every function throws
// jinja::Error with a message in Python's words on a wrong type.
#pragma once

#include <string>
#include <string_view>

#include "submoe/jinja/value.h"

namespace submoe::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args, int line);
bool apply_test(std::string_view name, const Value& subject, const CallArgs& args, int line);
// A method of a str, dict or list: found (true) and *out set, or false when the
// type has no such method.
bool call_method(const Value& subject, std::string_view name, const CallArgs& args, int line, Value* out);

// range, namespace, dict, raise_exception (transformers' global); null when
// `name` is none of them.
const Value* builtin_global(std::string_view name);

// Binary operators: + - * / // % ** ~, and comparisons == != < > <= >= in, not in.
Value binary_op(std::string_view op, const Value& a, const Value& b, int line);
bool compare_op(std::string_view op, const Value& a, const Value& b, int line);

// Items of an iterable as a for loop sees them: a list's items, a dict's keys, a
// string's characters; undefined iterates as empty. Throws for anything else.
ValueList iterate(const Value& v, int line);

// x[i] / x.name as jinja2's getitem / getattr: undefined when absent; throws when
// x itself is undefined.
Value get_item(const Value& subject, const Value& key, int line);
Value get_attr(const Value& subject, const std::string& name, int line);
Value slice(const Value& subject, const Value& start, const Value& stop, const Value& step, int line);

// "'x' is undefined" for an undefined value.
[[noreturn]] void throw_undefined(const Value& v, int line);

}  // namespace submoe::jinja
