// JSON parsing for file headers and configs: a parse error or a key repeated
// within one object is an error (nlohmann keeps the last duplicate silently,
// which would hide a tensor or a config value).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "submoe/core/status.h"

namespace submoe::io {

// `what` names the document in error messages (e.g. "model.safetensors: header").
Result<nlohmann::json> parse_json_strict(std::string_view text, const std::string& what);

// "object", "array", "string", "integer", "number", "boolean", "null".
const char* json_type_name(const nlohmann::json& j);

}  // namespace submoe::io
