// config.json's "quantization_config" of a compressed artifact (docs/format.md
// 9.2), parsed strictly: every key the format defines is type-checked and each
// error names the key; the representation records are checked by their
// registry entries (runtime/representation.h) when the artifact opens. Keys
// outside the format at the top level are ignored (provenance a later writer
// may add); format_version (1 or 2) decides compatibility.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::runtime {

// The representation of each routed-expert projection, as recorded:
// indices into QuantizationConfig::representations.
using ExpertMatrixReprs = std::array<uint32_t, 3>;  // gate, up, down

struct QuantizationConfig {
  int format_version = 0;
  // The representation records (docs/format.md 9.2), each read strictly by its
  // registry entry when the artifact opens (runtime/representation.h):
  // version 1's single "experts" object, or version 2's "representations".
  std::vector<nlohmann::json> representations;
  // Where each record sits, for messages ("quantization_config.representations[0]";
  // the opener prefixes the file).
  std::vector<std::string> record_paths;
  // Version 2+'s optional "contracts": one object per record (the writer's
  // ReprContract, runtime/repr_contract.h), checked against this build's codec
  // when the artifact opens; empty for artifacts written before them.
  std::vector<nlohmann::json> contracts;
  std::vector<std::string> contract_paths;
  // Version 2's "expert_matrices": [layer][expert] -> indices; layers without
  // routed experts hold an empty array. Empty: every matrix uses record 0.
  std::vector<std::vector<ExpertMatrixReprs>> expert_matrices;
  // Version 3's "dense_weights": {class name (model::dense_class_name) -> record
  // index}; the classes whose projections are stored packed.
  std::vector<std::pair<std::string, uint32_t>> dense_weights;
  // Provenance, when written.
  std::string method;  // "gptq" / "rtn"
  std::string grid;    // "ternary", "int3", "int4-g128", "mixed", ...
  std::optional<double> damp;
  std::optional<int64_t> expert_group;
  std::optional<bool> act_order;
  std::optional<bool> true_sequential;
  std::vector<std::string> modules_not_converted;

  // Index of the record of (layer, expert, projection p).
  uint32_t record_of(size_t layer, size_t expert, size_t p) const {
    return expert_matrices.empty() ? 0u : expert_matrices[layer][expert][p];
  }
};

// Parses the whole config.json text and reads its "quantization_config"
// (kNotFound when absent; kUnsupported for another quant_method or format
// version; kCorruptData naming the key otherwise). `source` names the file.
Result<QuantizationConfig> parse_quantization_config(std::string_view config_json, std::string_view source);

// Whether `directory` holds a config.json whose quantization_config.quant_method
// is "submoe". Never fails: anything unreadable is "no" (opening then reports why).
bool is_artifact(const std::string& directory);

}  // namespace submoe::runtime
