#include "runtime/repr/record_keys.h"

#include "io/json_strict.h"

namespace submoe::runtime::repr {

Status RecordKeys::bad(const std::string& key, const std::string& what) const {
  return corrupt_data(where + "." + key + " " + what);
}

Status RecordKeys::type(const std::string& key, const char* want) const {
  return bad(key, std::string("must be ") + want + ", got " + io::json_type_name(record.at(key)));
}

Result<std::string> RecordKeys::string(const char* key) const {
  if (!record.contains(key)) return bad(key, "is missing");
  if (!record.at(key).is_string()) return type(key, "a string");
  return record.at(key).get<std::string>();
}

Result<int64_t> RecordKeys::integer(const char* key) const {
  if (!record.contains(key)) return bad(key, "is missing");
  if (!record.at(key).is_number_integer()) return type(key, "an integer");
  return record.at(key).get<int64_t>();
}

Result<double> RecordKeys::number(const char* key) const {
  if (!record.contains(key)) return bad(key, "is missing");
  if (!record.at(key).is_number()) return type(key, "a number");
  return record.at(key).get<double>();
}

Status RecordKeys::only(const std::set<std::string>& allowed) const {
  for (const auto& [key, v] : record.items())
    if (!allowed.count(key)) return bad(key, "is not a key of this representation");
  return Status::ok();
}

}  // namespace submoe::runtime::repr
