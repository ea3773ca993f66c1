#include "artifact_builder.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "submoe/codec/ternary_grid.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/core/bf16.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/architecture.h"

namespace submoe::runtime::testing {
namespace {

namespace fs = std::filesystem;

const ternary::TernaryDictionary& dictionary(ternary::DictKind kind, double p0) {
  static std::map<std::pair<int, double>, std::unique_ptr<ternary::TernaryDictionary>> cache;
  auto& slot = cache[{static_cast<int>(kind), p0}];
  if (!slot) {
    auto d = ternary::build_dictionary(kind, p0);
    if (!d.is_ok()) std::abort();
    slot = std::make_unique<ternary::TernaryDictionary>(std::move(d).value());
  }
  return *slot;
}

template <typename T>
std::vector<uint8_t> bytes_of(const T* p, size_t n) {
  std::vector<uint8_t> out(n * sizeof(T));
  std::memcpy(out.data(), p, out.size());
  return out;
}

std::string name_of(int l, int e, int p, const char* field) {
  static const char* kProj[3] = {"gate_proj", "up_proj", "down_proj"};
  return "model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + kProj[p] + "." + field;
}

// RTN onto QMoE's per-row ternary grid, encoded with the dictionary.
void add_ternary(const std::vector<float>& w, uint32_t rows, uint32_t cols, const ternary::TernaryDictionary& dict,
                 int l, int e, int p, ArtifactParts* parts) {
  auto grid = ternary::round_to_ternary_grid(w, rows, cols);
  if (!grid.is_ok()) std::abort();
  auto packed = ternary::encode_ternary(grid->symbols, rows, cols, grid->scales, dict);
  if (!packed.is_ok()) std::abort();
  std::vector<uint16_t> codes(packed->codes().begin(), packed->codes().end());
  if (codes.size() % 2) codes.push_back(0);
  parts->tensors.push_back({name_of(l, e, p, "row_offsets"), io::DType::kI32, {rows + 1},
                            bytes_of(packed->row_offsets().data(), rows + 1)});
  parts->tensors.push_back({name_of(l, e, p, "scales"), io::DType::kBF16, {rows, 2},
                            bytes_of(grid->scales.data(), rows)});
  parts->tensors.push_back({name_of(l, e, p, "codes"), io::DType::kU16, {static_cast<int64_t>(codes.size())},
                            bytes_of(codes.data(), codes.size())});
  std::vector<float> dec(w.size());
  for (size_t i = 0; i < w.size(); ++i) dec[i] = ternary::ternary_level(grid->symbols[i], grid->scales[i / cols]);
  parts->decoded[{l, e, p}] = std::move(dec);
}

// RTN onto an asymmetric grid per row or group (range always includes 0, scale
// rounded to f16 first), packed bit by bit as docs/format.md 9.3 words it.
void add_int(const std::vector<float>& w, uint32_t rows, uint32_t cols, uint32_t bits, uint32_t gs, int l, int e,
             int p, ArtifactParts* parts) {
  const uint32_t groups = gs == 0 ? 1 : (cols + gs - 1) / gs;
  const uint32_t span = gs == 0 ? cols : gs;
  const float maxq = static_cast<float>((1u << bits) - 1);
  const size_t row_bytes = (static_cast<size_t>(cols) * bits + 31) / 32 * 4;
  std::vector<uint8_t> q(row_bytes * rows, 0), zeros(static_cast<size_t>(rows) * groups);
  std::vector<uint16_t> scales(zeros.size());
  std::vector<float> dec(w.size());
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t c0 = g * span, c1 = std::min(cols, c0 + span);
      float lo = 0, hi = 0;
      for (uint32_t c = c0; c < c1; ++c) {
        lo = std::min(lo, w[r * cols + c]);
        hi = std::max(hi, w[r * cols + c]);
      }
      const uint16_t sh = float_to_f16_bits(hi > lo ? (hi - lo) / maxq : 1.0f);
      const float scale = f16_bits_to_float(sh);
      const float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, maxq);
      scales[r * groups + g] = sh;
      zeros[r * groups + g] = static_cast<uint8_t>(zero);
      for (uint32_t c = c0; c < c1; ++c) {
        const float code = std::clamp(std::nearbyint(w[r * cols + c] / scale) + zero, 0.0f, maxq);
        const auto ci = static_cast<uint32_t>(code);
        for (uint32_t b = 0; b < bits; ++b)
          if ((ci >> b) & 1u) {
            const size_t bit = static_cast<size_t>(c) * bits + b;
            q[r * row_bytes + bit / 8] = static_cast<uint8_t>(q[r * row_bytes + bit / 8] | (1u << (bit % 8)));
          }
        dec[r * cols + c] = scale * (code - zero);
      }
    }
  }
  parts->tensors.push_back({name_of(l, e, p, "qweight"), io::DType::kU8,
                            {rows, static_cast<int64_t>(row_bytes)}, std::move(q)});
  parts->tensors.push_back({name_of(l, e, p, "scales"), io::DType::kF16, {rows, groups},
                            bytes_of(scales.data(), scales.size())});
  parts->tensors.push_back({name_of(l, e, p, "zeros"), io::DType::kU8, {rows, groups}, std::move(zeros)});
  parts->decoded[{l, e, p}] = std::move(dec);
}

}  // namespace

std::string fixture_dir(const std::string& name) { return std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/" + name; }

Result<ArtifactParts> build_artifact_parts(const ArtifactSpec& spec) {
  const std::string dir = fixture_dir(spec.fixture);
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig cfg, io::load_hf_config(dir));
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> src, io::SafetensorsModel::open(dir));
  const io::ArchitectureDescriptor& arch = io::architecture_descriptor(cfg.architecture);
  ArtifactParts parts;
  parts.fixture = spec.fixture;
  {
    std::ifstream f(dir + "/config.json");
    std::stringstream ss;
    ss << f.rdbuf();
    parts.config = nlohmann::json::parse(ss.str());
  }
  nlohmann::json qc = {{"quant_method", "submoe"}, {"format_version", 1}, {"method", "rtn"}, {"damp", 0.1},
                       {"expert_group", 16}, {"act_order", false}, {"true_sequential", false},
                       {"tensor_names",
                        "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}"},
                       {"modules_not_converted", {"embed_tokens", "self_attn", "router", "norms", "lm_head"}}};
  const nlohmann::json int_record = {{"representation", "int"}, {"bits", spec.bits}, {"group_size", spec.group_size}};
  const nlohmann::json ternary_record = {{"representation", "ternary_dict"},
                                         {"code", ternary::dict_kind_name(spec.code)},
                                         {"p0", spec.p0},
                                         {"dictionary_tensor", "submoe.ternary_dict.entries"}};
  if (spec.mixed_v2) {
    qc["format_version"] = 2;
    qc["representations"] = {ternary_record, int_record};
    nlohmann::json m = nlohmann::json::array();
    for (int l = 0; l < cfg.num_hidden_layers; ++l) {
      nlohmann::json layer = nlohmann::json::array();
      if (cfg.is_moe_layer(l))
        for (int e = 0; e < cfg.num_experts; ++e) layer.push_back({e % 2, (e + 1) % 2, e % 2});
      m.push_back(layer);
    }
    qc["expert_matrices"] = m;
    qc["grid"] = "mixed";
  }
  if (spec.ternary || spec.mixed_v2) {
    if (!spec.mixed_v2) qc["experts"] = ternary_record;
    qc["grid"] = spec.mixed_v2 ? "mixed" : "ternary";
    const ternary::TernaryDictionary& d = dictionary(spec.code, spec.p0);
    std::vector<uint64_t> entries(ternary::kDictEntries);
    for (size_t i = 0; i < entries.size(); ++i)
      entries[i] = uint64_t{d.entries()[i].word[0]} | (uint64_t{d.entries()[i].word[1]} << 32);
    parts.tensors.push_back({"submoe.ternary_dict.entries", io::DType::kU64, {ternary::kDictEntries},
                             bytes_of(entries.data(), entries.size())});
  } else {
    qc["experts"] = int_record;
    qc["grid"] = "int" + std::to_string(spec.bits);
  }
  parts.config["quantization_config"] = qc;
  parts.metadata = {{"format", "pt"}, {"submoe_format_version", spec.mixed_v2 ? "2" : "1"}};

  // Routed expert weights by hub name, and the same in (layer, expert, projection) order.
  std::map<std::string, ExpertKey> expert_names;
  std::map<ExpertKey, std::string> by_key;
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    if (!cfg.is_moe_layer(l)) continue;
    for (int e = 0; e < cfg.num_experts; ++e)
      for (int p = 0; p < 3; ++p) {
        const std::string n = io::expert_tensor_name(arch, l, e, static_cast<io::ExpertProjection>(p));
        expert_names[n] = {l, e, p};
        by_key[{l, e, p}] = n;
      }
  }
  for (const io::TensorView* t : src->tensors()) {
    if (expert_names.count(t->name)) continue;
    parts.tensors.push_back({t->name, t->dtype, t->shape, std::vector<uint8_t>(t->data, t->data + t->nbytes)});
  }
  for (const auto& [key, name] : by_key) {
    const auto [l, e, p] = key;
    const io::TensorView* t = src->find(name);
    if (t == nullptr) return not_found(name);
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, io::to_f32(*t));
    const auto rows = static_cast<uint32_t>(t->shape[0]), cols = static_cast<uint32_t>(t->shape[1]);
    parts.shapes[key] = {rows, cols};
    if (spec.mixed_v2 ? (e + p) % 2 == 0 : spec.ternary) {
      add_ternary(w, rows, cols, dictionary(spec.code, spec.p0), l, e, p, &parts);
    } else {
      add_int(w, rows, cols, spec.bits, spec.group_size, l, e, p, &parts);
    }
  }
  return parts;
}

Result<std::string> write_artifact(const ArtifactParts& parts) {
  std::string tmpl = (fs::temp_directory_path() / "submoe-runtime-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return io_error("mkdtemp failed");
  io::SafetensorsWriter w;
  for (const TensorPart& t : parts.tensors) SUBMOE_RETURN_IF_ERROR(w.add(t.name, t.dtype, t.shape, t.bytes));
  for (const auto& [k, v] : parts.metadata) w.set_metadata(k, v);
  io::SafetensorsWriter::Options o;
  o.fsync = false;
  SUBMOE_RETURN_IF_ERROR(w.write(tmpl + "/model.safetensors", o));
  std::ofstream(tmpl + "/config.json") << parts.config.dump(2);
  const std::string fixture = fixture_dir(parts.fixture);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"}) {
    std::error_code ec;
    fs::copy_file(fixture + "/" + f, tmpl + "/" + f, ec);
  }
  return tmpl;
}

BuiltArtifact::~BuiltArtifact() {
  std::error_code ec;
  if (!dir.empty()) fs::remove_all(dir, ec);
}

std::string spec_name(const ArtifactSpec& spec) {
  if (spec.mixed_v2)
    return spec.fixture + "-v2-ternary-int" + std::to_string(spec.bits) + "-g" + std::to_string(spec.group_size);
  if (spec.ternary) return spec.fixture + "-ternary-" + ternary::dict_kind_name(spec.code);
  return spec.fixture + "-int" + std::to_string(spec.bits) + "-g" + std::to_string(spec.group_size);
}

const BuiltArtifact& cached_artifact(const ArtifactSpec& spec) {
  static std::map<std::string, std::unique_ptr<BuiltArtifact>> cache;
  auto& slot = cache[spec_name(spec) + "-" + std::to_string(spec.p0)];
  if (!slot) {
    auto parts = build_artifact_parts(spec);
    if (!parts.is_ok()) {
      ADD_FAILURE() << parts.status().to_string();
      std::abort();
    }
    auto dir = write_artifact(*parts);
    if (!dir.is_ok()) {
      ADD_FAILURE() << dir.status().to_string();
      std::abort();
    }
    slot = std::make_unique<BuiltArtifact>();
    slot->parts = std::move(parts).value();
    slot->dir = std::move(dir).value();
  }
  return *slot;
}

int find_part(const ArtifactParts& parts, const std::string& name) {
  for (size_t i = 0; i < parts.tensors.size(); ++i)
    if (parts.tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::vector<int32_t>> fixture_prompts(const std::string& fixture) {
  std::ifstream f(fixture_dir(fixture) + "/golden.json");
  const nlohmann::json g = nlohmann::json::parse(f);
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : g.at("prompts")) out.push_back(p.at("input_ids").get<std::vector<int32_t>>());
  return out;
}

}  // namespace submoe::runtime::testing
