// Strict parse of quantization_config (docs/format.md 9.2).
#include "submoe/runtime/quantization_config.h"

#include "submoe/model/model_weights.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "io/json_strict.h"
#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime {
namespace {

using nlohmann::json;

// Error helpers naming "<source>: quantization_config.<key>".
struct Keys {
  std::string prefix;
  Status bad(const std::string& key, const std::string& what) const {
    return corrupt_data(prefix + "." + key + " " + what);
  }
  Status type(const std::string& key, const char* want, const json& v) const {
    return bad(key, std::string("must be ") + want + ", got " + io::json_type_name(v));
  }
};

Result<std::string> get_string(const json& o, const char* key, const Keys& k) {
  if (!o.contains(key)) return k.bad(key, "is missing");
  const json& v = o.at(key);
  if (!v.is_string()) return k.type(key, "a string", v);
  return v.get<std::string>();
}

Result<int64_t> get_integer(const json& o, const char* key, const Keys& k) {
  if (!o.contains(key)) return k.bad(key, "is missing");
  const json& v = o.at(key);
  if (!v.is_number_integer()) return k.type(key, "an integer", v);
  return v.get<int64_t>();
}

Result<double> get_number(const json& o, const char* key, const Keys& k) {
  if (!o.contains(key)) return k.bad(key, "is missing");
  const json& v = o.at(key);
  if (!v.is_number()) return k.type(key, "a number", v);
  return v.get<double>();
}

// A key's path without the file name ("quantization_config.representations[0]"):
// the opener adds the file once when it reports an error of a record.
std::string relative_path(const Keys& k, const std::string& where) {
  return "quantization_config" + where.substr(k.prefix.size());
}

// Version 2: "representations" (non-empty array of records) and the optional
// "expert_matrices" ([layer][expert] -> [gate, up, down] record indices).
Status parse_representations(const json& qc, const Keys& k, QuantizationConfig* q) {
  if (!qc.contains("representations")) return k.bad("representations", "is missing");
  const json& reprs = qc.at("representations");
  if (!reprs.is_array() || reprs.empty()) return k.type("representations", "a non-empty array of objects", reprs);
  for (size_t i = 0; i < reprs.size(); ++i) {
    const std::string where = k.prefix + ".representations[" + std::to_string(i) + "]";
    if (!reprs[i].is_object()) return corrupt_data(where + " must be an object, got " + io::json_type_name(reprs[i]));
    q->representations.push_back(reprs[i]);
    q->record_paths.push_back(relative_path(k, where));
  }
  if (qc.contains("contracts")) {  // one per record (runtime/repr_contract.h); checked when the codecs are made
    const json& c = qc.at("contracts");
    if (!c.is_array() || c.size() != reprs.size())
      return corrupt_data(k.prefix + ".contracts must be an array of " + std::to_string(reprs.size()) +
                          " objects (one per representation record), got " +
                          (c.is_array() ? std::to_string(c.size()) + " entries" : io::json_type_name(c)));
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string where = k.prefix + ".contracts[" + std::to_string(i) + "]";
      if (!c[i].is_object()) return corrupt_data(where + " must be an object, got " + io::json_type_name(c[i]));
      q->contracts.push_back(c[i]);
      q->contract_paths.push_back(relative_path(k, where));
    }
  }
  if (!qc.contains("expert_matrices")) return Status::ok();
  const json& m = qc.at("expert_matrices");
  if (!m.is_array()) return k.type("expert_matrices", "an array (per layer) of arrays (per expert)", m);
  for (size_t l = 0; l < m.size(); ++l) {
    const std::string where = k.prefix + ".expert_matrices[" + std::to_string(l) + "]";
    if (!m[l].is_array()) return corrupt_data(where + " must be an array, got " + io::json_type_name(m[l]));
    std::vector<ExpertMatrixReprs> layer;
    for (size_t e = 0; e < m[l].size(); ++e) {
      const json& x = m[l][e];
      const std::string we = where + "[" + std::to_string(e) + "]";
      if (!x.is_array() || x.size() != 3)
        return corrupt_data(we + " must be [gate, up, down] record indices, got " + x.dump());
      ExpertMatrixReprs r{};
      for (size_t p = 0; p < 3; ++p) {
        if (!x[p].is_number_unsigned() || x[p].get<uint64_t>() >= q->representations.size())
          return corrupt_data(we + "[" + std::to_string(p) + "] = " + x[p].dump() + " is not an index into the " +
                              std::to_string(q->representations.size()) + " representations");
        r[p] = static_cast<uint32_t>(x[p].get<uint64_t>());
      }
      layer.push_back(r);
    }
    q->expert_matrices.push_back(std::move(layer));
  }
  return Status::ok();
}

// Version 3: "dense_weights" {class: record index}, each class named once.
Status parse_dense_weights(const json& qc, const Keys& k, QuantizationConfig* q) {
  if (!qc.contains("dense_weights")) return Status::ok();
  if (q->format_version < 3) return k.bad("dense_weights", "needs format_version 3");
  const json& d = qc.at("dense_weights");
  if (!d.is_object()) return k.type("dense_weights", "an object {class: representation index}", d);
  for (const auto& [name, index] : d.items()) {
    const std::string where = k.prefix + ".dense_weights." + name;
    auto cls = model::parse_dense_class(name);
    if (!cls.is_ok()) return corrupt_data(where + ": " + cls.status().message());
    if (!index.is_number_unsigned() || index.get<uint64_t>() >= q->representations.size())
      return corrupt_data(where + " = " + index.dump() + " is not an index into the " +
                          std::to_string(q->representations.size()) + " representations");
    q->dense_weights.emplace_back(name, static_cast<uint32_t>(index.get<uint64_t>()));
  }
  return Status::ok();
}

// Keys the format defines beside "experts": type-checked when present.
Status parse_provenance(const json& qc, const Keys& k, QuantizationConfig* q) {
  if (qc.contains("method")) {
    SUBMOE_ASSIGN_OR_RETURN(q->method, get_string(qc, "method", k));
  }
  if (qc.contains("grid")) {
    SUBMOE_ASSIGN_OR_RETURN(q->grid, get_string(qc, "grid", k));
  }
  if (qc.contains("damp")) {
    SUBMOE_ASSIGN_OR_RETURN(q->damp, get_number(qc, "damp", k));
  }
  if (qc.contains("expert_group")) {
    SUBMOE_ASSIGN_OR_RETURN(q->expert_group, get_integer(qc, "expert_group", k));
  }
  for (const char* key : {"act_order", "true_sequential"}) {
    if (!qc.contains(key)) continue;
    const json& v = qc.at(key);
    if (!v.is_boolean()) return k.type(key, "a boolean", v);
    (std::string(key) == "act_order" ? q->act_order : q->true_sequential) = v.get<bool>();
  }
  if (qc.contains("tensor_names")) {
    SUBMOE_ASSIGN_OR_RETURN(const std::string names, get_string(qc, "tensor_names", k));
    constexpr std::string_view kScheme =
        "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}";
    if (names != kScheme) return k.bad("tensor_names", "'" + names + "' is not the format's scheme '" + std::string(kScheme) + "'");
  }
  if (qc.contains("modules_not_converted")) {
    const json& v = qc.at("modules_not_converted");
    if (!v.is_array()) return k.type("modules_not_converted", "an array of strings", v);
    for (const json& m : v) {
      if (!m.is_string()) return k.type("modules_not_converted", "an array of strings", v);
      q->modules_not_converted.push_back(m.get<std::string>());
    }
  }
  return Status::ok();
}

}  // namespace

Result<QuantizationConfig> parse_quantization_config(std::string_view config_json, std::string_view source) {
  SUBMOE_ASSIGN_OR_RETURN(const json root, io::parse_json_strict(config_json, std::string(source)));
  if (!root.is_object()) return corrupt_data(std::string(source) + ": not a JSON object");
  if (!root.contains("quantization_config"))
    return not_found(std::string(source) + " has no quantization_config (not a submoe artifact)");
  const Keys k{std::string(source) + ": quantization_config"};
  const json& qc = root.at("quantization_config");
  if (!qc.is_object()) return corrupt_data(k.prefix + " must be an object, got " + io::json_type_name(qc));
  SUBMOE_ASSIGN_OR_RETURN(const std::string method, get_string(qc, "quant_method", k));
  if (method != artifact::kQuantMethod)
    return unsupported(k.prefix + ".quant_method is '" + method + "', this reader handles 'submoe'");
  QuantizationConfig q;
  SUBMOE_ASSIGN_OR_RETURN(const int64_t version, get_integer(qc, "format_version", k));
  if (version < artifact::kOldestReadableFormatVersion || version > artifact::kArtifactFormatVersion)
    return unsupported(k.prefix + ".format_version is " + std::to_string(version) + ", this reader handles " +
                       std::to_string(artifact::kOldestReadableFormatVersion) + " to " +
                       std::to_string(artifact::kArtifactFormatVersion));
  q.format_version = static_cast<int>(version);
  if (version == 1) {
    if (!qc.contains("experts")) return k.bad("experts", "is missing");
    const json& experts = qc.at("experts");
    if (!experts.is_object()) return k.type("experts", "an object", experts);
    q.representations.push_back(experts);
    q.record_paths.push_back("quantization_config.experts");
  } else {
    SUBMOE_RETURN_IF_ERROR(parse_representations(qc, k, &q));
  }
  SUBMOE_RETURN_IF_ERROR(parse_dense_weights(qc, k, &q));
  SUBMOE_RETURN_IF_ERROR(parse_provenance(qc, k, &q));
  return q;
}

bool is_artifact(const std::string& directory) {
  json qc;
  if (!io::read_quantization_config(directory, &qc)) return false;
  const auto m = qc.find("quant_method");
  return m != qc.end() && m->is_string() && m->get<std::string>() == artifact::kQuantMethod;
}

}  // namespace submoe::runtime
