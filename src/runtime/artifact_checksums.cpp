#include "submoe/runtime/artifact_checksums.h"

#include <nlohmann/json.hpp>

#include "submoe/core/checksum.h"

namespace submoe::runtime {

using nlohmann::json;

json checksums_to_json(const ArtifactChecksums& c) {
  json files = json::object(), tensors = json::object(), experts = json::array();
  for (const auto& [name, v] : c.files) files[name] = checksum_hex(v);
  for (const auto& [name, v] : c.tensors) tensors[name] = checksum_hex(v);
  for (const auto& layer : c.experts) {
    json l = json::array();
    for (uint64_t v : layer) l.push_back(checksum_hex(v));
    experts.push_back(std::move(l));
  }
  return {{"algorithm", std::string(kChecksumAlgorithm)},
          {"files", std::move(files)},
          {"safetensors_header", checksum_hex(c.safetensors_header)},
          {"tensors", std::move(tensors)},
          {"experts", std::move(experts)}};
}

namespace {

Result<uint64_t> hex_value(const json& v, const std::string& where) {
  if (!v.is_string()) return corrupt_data("checksums." + where + " is not a string");
  auto r = parse_checksum_hex(v.get<std::string>());
  if (!r.is_ok()) return r.status().with_context("checksums." + where);
  return r;
}

Status string_map(const json& j, const std::string& key, auto* out) {
  if (!j.is_object()) return corrupt_data("checksums." + key + " is not an object");
  for (const auto& [name, v] : j.items()) {
    SUBMOE_ASSIGN_OR_RETURN(const uint64_t c, hex_value(v, key + "." + name));
    (*out)[name] = c;
  }
  return Status::ok();
}

}  // namespace

Result<ArtifactChecksums> checksums_from_json(const json& j) {
  if (!j.is_object()) return corrupt_data("checksums is not an object");
  for (const auto& [key, v] : j.items())
    if (key != "algorithm" && key != "files" && key != "safetensors_header" && key != "tensors" && key != "experts")
      return corrupt_data("checksums has an unknown key '" + key + "'");
  for (const char* key : {"algorithm", "files", "safetensors_header", "tensors", "experts"})
    if (!j.contains(key)) return corrupt_data(std::string("checksums has no '") + key + "'");
  const json& algo = j.at("algorithm");
  if (!algo.is_string() || algo.get<std::string>() != kChecksumAlgorithm)
    return unsupported("checksums.algorithm is " + algo.dump() + "; this build verifies '" +
                       std::string(kChecksumAlgorithm) + "' only");
  ArtifactChecksums c;
  SUBMOE_RETURN_IF_ERROR(string_map(j.at("files"), "files", &c.files));
  SUBMOE_ASSIGN_OR_RETURN(c.safetensors_header, hex_value(j.at("safetensors_header"), "safetensors_header"));
  SUBMOE_RETURN_IF_ERROR(string_map(j.at("tensors"), "tensors", &c.tensors));
  const json& ex = j.at("experts");
  if (!ex.is_array()) return corrupt_data("checksums.experts is not an array");
  for (size_t l = 0; l < ex.size(); ++l) {
    if (!ex[l].is_array()) return corrupt_data("checksums.experts[" + std::to_string(l) + "] is not an array");
    std::vector<uint64_t> layer;
    for (size_t e = 0; e < ex[l].size(); ++e) {
      SUBMOE_ASSIGN_OR_RETURN(const uint64_t v,
                              hex_value(ex[l][e], "experts[" + std::to_string(l) + "][" + std::to_string(e) + "]"));
      layer.push_back(v);
    }
    c.experts.push_back(std::move(layer));
  }
  return c;
}

Status check_checksum(uint64_t stored, uint64_t computed, const std::string& what) {
  if (stored == computed) return Status::ok();
  return corrupt_data(what + ": checksum mismatch (" + std::string(kChecksumAlgorithm) + " stored " +
                      checksum_hex(stored) + ", computed " + checksum_hex(computed) +
                      "): the bytes are corrupt; copy or create the artifact again");
}

}  // namespace submoe::runtime
