// Strict reading of a representation record (a JSON object of
// quantization_config): typed getters whose errors name "<where>.<key>".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "submoe/core/status.h"

namespace submoe::runtime::repr {

struct RecordKeys {
  const nlohmann::json& record;
  std::string where;  // e.g. "config.json: quantization_config.experts"

  Status bad(const std::string& key, const std::string& what) const;
  Status type(const std::string& key, const char* want) const;
  Result<std::string> string(const char* key) const;
  Result<int64_t> integer(const char* key) const;
  Result<double> number(const char* key) const;
  // Every key of the record is in `allowed`.
  Status only(const std::set<std::string>& allowed) const;
};

}  // namespace submoe::runtime::repr
