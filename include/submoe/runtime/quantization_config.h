// config.json's "quantization_config" of a compressed artifact (docs/format.md
// 9.2), parsed strictly: every key the format defines is type-checked, the
// "experts" object must hold exactly the keys of its representation, and each
// error names the key. Keys outside the format at the top level are ignored
// (provenance a later writer may add); format_version decides compatibility.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/status.h"

namespace submoe::runtime {

enum class ExpertRepresentation { kTernaryDict, kInt };
// "ternary_dict" / "int" (artifact_format.h)
const char* representation_name(ExpertRepresentation r);

struct QuantizationConfig {
  int format_version = 0;
  ExpertRepresentation representation = ExpertRepresentation::kTernaryDict;
  // ternary_dict
  ternary::DictKind code = ternary::DictKind::kQmoe;
  double p0 = 0.0;
  std::string dictionary_tensor;
  // int
  uint32_t bits = 0;
  uint32_t group_size = 0;  // 0 = one group per row
  // Provenance, when written.
  std::string method;  // "gptq" / "rtn"
  std::string grid;    // "ternary", "int3", "int4-g128", ...
  std::optional<double> damp;
  std::optional<int64_t> expert_group;
  std::optional<bool> act_order;
  std::optional<bool> true_sequential;
  std::vector<std::string> modules_not_converted;

  // One line, e.g. "ternary_dict (qmoe, p0 0.885), gptq, grid ternary" or
  // "int (4 bits, group 128), rtn".
  std::string summary() const;
};

// Parses the whole config.json text and reads its "quantization_config"
// (kNotFound when absent; kUnsupported for another quant_method or format
// version; kCorruptData naming the key otherwise). `source` names the file.
Result<QuantizationConfig> parse_quantization_config(std::string_view config_json, std::string_view source);

// Whether `directory` holds a config.json whose quantization_config.quant_method
// is "submoe". Never fails: anything unreadable is "no" (opening then reports why).
bool is_artifact(const std::string& directory);

}  // namespace submoe::runtime
