#include "json_strict.h"

#include <set>
#include <vector>

namespace submoe::io {

Result<nlohmann::json> parse_json_strict(std::string_view text, const std::string& what) {
  using json = nlohmann::json;
  // One set of seen keys per open object; arrays push an empty marker so the
  // stack depth follows the document.
  std::vector<std::set<std::string>> seen;
  std::string duplicate;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        seen.emplace_back();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!seen.empty()) seen.pop_back();
        break;
      case json::parse_event_t::key:
        if (!seen.empty() && parsed.is_string()) {
          const std::string& k = parsed.get_ref<const std::string&>();
          if (!seen.back().insert(k).second && duplicate.empty()) duplicate = k;
        }
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  json result;
  try {
    result = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    return corrupt_data(what + ": malformed JSON: " + e.what());
  }
  if (!duplicate.empty()) return corrupt_data(what + ": duplicate key '" + duplicate + "'");
  return result;
}

const char* json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::null: return "null";
    default: return "invalid";
  }
}

}  // namespace submoe::io
