// Strict parse of quantization_config (docs/format.md 9.2).
#include "submoe/runtime/quantization_config.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "io/json_strict.h"
#include "submoe/codec/int_packed.h"
#include "submoe/io/file_util.h"
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

Status only_keys(const json& o, const std::set<std::string>& allowed, const Keys& k) {
  for (const auto& [key, v] : o.items())
    if (!allowed.count(key)) return k.bad(key, "is not a key of this representation");
  return Status::ok();
}

Status parse_experts(const json& e, const Keys& k, QuantizationConfig* q) {
  const Keys ek{k.prefix + ".experts"};
  SUBMOE_ASSIGN_OR_RETURN(const std::string repr, get_string(e, "representation", ek));
  if (repr == artifact::kReprTernaryDict) {
    q->representation = ExpertRepresentation::kTernaryDict;
    SUBMOE_RETURN_IF_ERROR(only_keys(e, {"representation", "code", "p0", "dictionary_tensor"}, ek));
    SUBMOE_ASSIGN_OR_RETURN(const std::string code, get_string(e, "code", ek));
    if (!ternary::parse_dict_kind(code, &q->code)) return ek.bad("code", "'" + code + "' is not qmoe or tunstall");
    SUBMOE_ASSIGN_OR_RETURN(q->p0, get_number(e, "p0", ek));
    if (!(q->p0 >= 0.0 && q->p0 <= 1.0)) return ek.bad("p0", "= " + std::to_string(q->p0) + " is outside [0, 1]");
    SUBMOE_ASSIGN_OR_RETURN(q->dictionary_tensor, get_string(e, "dictionary_tensor", ek));
    if (q->dictionary_tensor.empty()) return ek.bad("dictionary_tensor", "is empty");
    return Status::ok();
  }
  if (repr == artifact::kReprInt) {
    q->representation = ExpertRepresentation::kInt;
    SUBMOE_RETURN_IF_ERROR(only_keys(e, {"representation", "bits", "group_size"}, ek));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t bits, get_integer(e, "bits", ek));
    if (bits < intn::kMinBits || bits > intn::kMaxBits) return ek.bad("bits", "= " + std::to_string(bits) + ", must be 2, 3 or 4");
    SUBMOE_ASSIGN_OR_RETURN(const int64_t gs, get_integer(e, "group_size", ek));
    if (gs != 0 && gs != 32 && gs != 64 && gs != 128)
      return ek.bad("group_size", "= " + std::to_string(gs) + ", must be 0, 32, 64 or 128");
    q->bits = static_cast<uint32_t>(bits);
    q->group_size = static_cast<uint32_t>(gs);
    return Status::ok();
  }
  return ek.bad("representation", "'" + repr + "' is not ternary_dict or int");
}

// Keys the format defines beside "experts": type-checked when present.
Status parse_provenance(const json& qc, const Keys& k, QuantizationConfig* q) {
  if (qc.contains("method")) {
    SUBMOE_ASSIGN_OR_RETURN(q->method, get_string(qc, "method", k));
  }
  if (qc.contains("grid")) {
    SUBMOE_ASSIGN_OR_RETURN(q->grid, get_string(qc, "grid", k));
    const bool ternary = q->representation == ExpertRepresentation::kTernaryDict;
    if (ternary ? q->grid != "ternary" : q->grid.rfind("int", 0) != 0)
      return k.bad("grid", "'" + q->grid + "' does not match experts.representation " +
                               representation_name(q->representation));
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

const char* representation_name(ExpertRepresentation r) {
  return r == ExpertRepresentation::kInt ? "int" : "ternary_dict";
}

std::string QuantizationConfig::summary() const {
  char buf[160];
  if (representation == ExpertRepresentation::kTernaryDict) {
    std::snprintf(buf, sizeof buf, "ternary_dict (%s, p0 %.4g)", ternary::dict_kind_name(code), p0);
  } else if (group_size == 0) {
    std::snprintf(buf, sizeof buf, "int (%u bits, per row)", bits);
  } else {
    std::snprintf(buf, sizeof buf, "int (%u bits, group %u)", bits, group_size);
  }
  std::string s = buf;
  if (!method.empty()) s += ", " + method;
  if (!grid.empty()) s += ", grid " + grid;
  return s;
}

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
  if (version != artifact::kArtifactFormatVersion)
    return unsupported(k.prefix + ".format_version is " + std::to_string(version) + ", this reader handles " +
                       std::to_string(artifact::kArtifactFormatVersion));
  q.format_version = static_cast<int>(version);
  if (!qc.contains("experts")) return k.bad("experts", "is missing");
  const json& experts = qc.at("experts");
  if (!experts.is_object()) return k.type("experts", "an object", experts);
  SUBMOE_RETURN_IF_ERROR(parse_experts(experts, k, &q));
  SUBMOE_RETURN_IF_ERROR(parse_provenance(qc, k, &q));
  return q;
}

bool is_artifact(const std::string& directory) {
  const std::string path = (std::filesystem::path(directory) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  auto text = io::read_file_to_string(path);
  if (!text.is_ok()) return false;
  const json root = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return false;
  const auto qc = root.find("quantization_config");
  if (qc == root.end() || !qc->is_object()) return false;
  const auto m = qc->find("quant_method");
  return m != qc->end() && m->is_string() && m->get<std::string>() == artifact::kQuantMethod;
}

}  // namespace submoe::runtime
