// Typed, strict access to the keys of one config.json object, for the config
// parser and the architecture descriptors (src/io/arch/): a key of the wrong JSON
// type is an error naming the source and the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "json_strict.h"
#include "submoe/core/status.h"

namespace submoe::io {

// Typed access to one JSON object; every error names the source and the key
// (with the enclosing object as a prefix, e.g. "rope_scaling.factor").
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& obj, std::string source, std::string prefix)
      : obj_(obj), source_(std::move(source)), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return obj_.contains(key); }
  bool present(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  const nlohmann::json& at(const char* key) const { return obj_.at(key); }

  Status error(const char* key, const std::string& what) const {
    return invalid_argument(source_ + ": '" + prefix_ + key + "' " + what);
  }
  Status wrong_type(const char* key, const char* expected) const {
    return error(key, std::string("must be ") + expected + ", got a JSON " + json_type_name(obj_.at(key)));
  }

  // Absent keeps *out; null is an error (these fields have no None in HF).
  Status get_int(const char* key, int64_t* out) const {
    if (!has(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_number_integer()) return wrong_type(key, "an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return error(key, "is out of range");
    *out = v.get<int64_t>();
    return Status::ok();
  }
  // Absent or null -> nullopt (when absent, *out keeps its default).
  Status get_opt_int(const char* key, std::optional<int64_t>* out) const {
    if (!has(key)) return Status::ok();
    if (obj_.at(key).is_null()) {
      *out = std::nullopt;
      return Status::ok();
    }
    int64_t v = 0;
    SUBMOE_RETURN_IF_ERROR(get_int(key, &v));
    *out = v;
    return Status::ok();
  }
  // JSON integers are accepted for numbers (hub files write 10000 for 1e4).
  Status get_double(const char* key, double* out) const {
    if (!has(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_number()) return wrong_type(key, "a number");
    *out = v.get<double>();
    if (!std::isfinite(*out)) return error(key, "is not finite");
    return Status::ok();
  }
  Status get_opt_double(const char* key, std::optional<double>* out) const {
    if (!has(key)) return Status::ok();
    if (obj_.at(key).is_null()) {
      *out = std::nullopt;
      return Status::ok();
    }
    double v = 0;
    SUBMOE_RETURN_IF_ERROR(get_double(key, &v));
    *out = v;
    return Status::ok();
  }
  Status get_bool(const char* key, bool* out) const {
    if (!has(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_boolean()) return wrong_type(key, "a boolean");
    *out = v.get<bool>();
    return Status::ok();
  }
  Status get_string(const char* key, std::string* out) const {
    if (!has(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_string()) return wrong_type(key, "a string");
    *out = v.get<std::string>();
    return Status::ok();
  }
  // Absent or null -> empty list.
  Status get_int_list(const char* key, std::vector<int64_t>* out) const {
    if (!present(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_array()) return wrong_type(key, "a list of integers");
    out->clear();
    for (const nlohmann::json& e : v) {
      if (!e.is_number_integer()) return error(key, std::string("must be a list of integers, holds a JSON ") + json_type_name(e));
      out->push_back(e.get<int64_t>());
    }
    return Status::ok();
  }
  Status get_string_list(const char* key, std::vector<std::string>* out) const {
    if (!present(key)) return Status::ok();
    const nlohmann::json& v = obj_.at(key);
    if (!v.is_array()) return wrong_type(key, "a list of strings");
    out->clear();
    for (const nlohmann::json& e : v) {
      if (!e.is_string()) return error(key, std::string("must be a list of strings, holds a JSON ") + json_type_name(e));
      out->push_back(e.get<std::string>());
    }
    return Status::ok();
  }

  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& obj_;
  std::string source_;
  std::string prefix_;
};

}  // namespace submoe::io
