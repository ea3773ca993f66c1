#include "artifact_assembly.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <utility>

#include "layer_packer.h"
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::calib::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The artifact's representation records: the experts' (in their record order),
// then each packed dense class's codec unless an equal record is already there.
struct Records {
  std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs;
  std::map<model::DenseClass, uint32_t> dense;  // class -> record index
};

Records artifact_records(const AssemblyInputs& in) {
  Records r;
  r.codecs = in.codecs;
  if (in.dense == nullptr) return r;
  for (const auto& [cls, codec] : in.dense->codecs) {
    uint32_t index = 0;
    while (index < r.codecs.size() && r.codecs[index]->record() != codec->record()) ++index;
    if (index == r.codecs.size()) r.codecs.push_back(codec);
    r.dense[cls] = index;
  }
  return r;
}

json quantization_config(const CompressOptions& o, const AssemblyInputs& in, const Records& records) {
  json q;
  q["quant_method"] = std::string(artifact::kQuantMethod);
  q["format_version"] = records.dense.empty() ? artifact::kDenseBf16FormatVersion : artifact::kArtifactFormatVersion;
  q["representations"] = json::array();
  q["contracts"] = json::array();
  for (const auto& c : records.codecs) {
    q["representations"].push_back(c->record());
    q["contracts"].push_back(c->contract().to_json());
  }
  if (!in.records.empty()) {
    json m = json::array();
    for (const auto& layer : in.records) {
      json l = json::array();
      for (uint32_t r : layer) l.push_back({r, r, r});
      m.push_back(l);
    }
    q["expert_matrices"] = m;
  }
  if (!records.dense.empty()) {
    json d = json::object();
    for (const auto& [cls, index] : records.dense) d[model::dense_class_name(cls)] = index;
    q["dense_weights"] = d;
  }
  q["method"] = o.method == QuantMethod::kGptq ? "gptq" : "rtn";
  q["grid"] = in.codecs.size() == 1 ? in.codecs[0]->grid_name() : "mixed";
  q["damp"] = o.damp;
  q["expert_group"] = o.expert_group;
  q["act_order"] = o.act_order;
  q["true_sequential"] = o.true_sequential;
  q["tensor_names"] = "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}";
  // What stays in the source dtype (HF convention), packed dense classes left out.
  const std::pair<const char*, model::DenseClass> modules[] = {{"self_attn", model::DenseClass::kAttention},
                                                               {"router", model::DenseClass::kRouter},
                                                               {"shared_expert", model::DenseClass::kSharedExpert},
                                                               {"dense_mlp", model::DenseClass::kDenseMlp},
                                                               {"lm_head", model::DenseClass::kLmHead}};
  json kept = {"embed_tokens", "norms"};
  for (const auto& [module, cls] : modules)
    if (!records.dense.count(cls)) kept.push_back(module);
  q["modules_not_converted"] = kept;
  return q;
}

// Source tensors in order, minus the routed experts, each packed (its fields)
// or as it is; per class (the dense projections' classes, "other" for
// embeddings, norms and biases) their weights and stored bytes.
struct DenseSet {
  struct Entry {
    const io::TensorView* source = nullptr;
    std::vector<PackedTensor> fields;  // empty: the source tensor itself
  };
  std::vector<Entry> tensors;
  uint64_t weights = 0, bytes = 0;
  struct ClassTotals {
    std::string representation;
    uint64_t weights = 0, bytes = 0;
  };
  std::map<std::string, ClassTotals> classes;
};

Result<DenseSet> dense_tensors(const io::SafetensorsModel& src, const std::vector<std::string>& expert_names,
                               const DensePlan* plan) {
  const std::set<std::string> skip(expert_names.begin(), expert_names.end());
  std::map<std::string, model::DenseClass> class_of;
  if (plan != nullptr)
    for (const DenseProjection& p : plan->projections) class_of.emplace(p.name, p.cls);
  DenseSet d;
  for (const io::TensorView* t : src.tensors()) {
    // FP8 block scales are read through their weights, which are stored
    // dequantized (BF16) when not packed: an artifact holds no FP8.
    if (skip.count(t->name) || t->is_block_scale) continue;
    DenseSet::Entry e{t, {}};
    const auto cls = class_of.find(t->name);
    const runtime::MatrixCodec* codec = nullptr;
    if (cls != class_of.end()) {
      const auto c = plan->codecs.find(cls->second);
      if (c != plan->codecs.end()) codec = c->second.get();
    }
    uint64_t bytes = t->nbytes;
    if (codec != nullptr || t->block_scale != nullptr) {
      if (codec != nullptr) {
        SUBMOE_ASSIGN_OR_RETURN(e.fields, pack_dense_tensor(*t, *codec));
      } else {
        SUBMOE_ASSIGN_OR_RETURN(e.fields, dequantized_bf16_tensor(*t));
      }
      bytes = 0;
      for (const PackedTensor& f : e.fields) bytes += f.bytes.size();
    }
    DenseSet::ClassTotals& c = d.classes[cls == class_of.end() ? "other" : model::dense_class_name(cls->second)];
    c.representation = codec != nullptr ? codec->summary() : "source dtype";
    c.weights += static_cast<uint64_t>(t->numel());
    c.bytes += bytes;
    d.weights += static_cast<uint64_t>(t->numel());
    d.bytes += bytes;
    d.tensors.push_back(std::move(e));
  }
  return d;
}

}  // namespace

Status assemble_artifact(const AssemblyInputs& in, CompressSummary* summary) {
  const CompressOptions& o = *in.options;
  const Records records = artifact_records(in);
  SUBMOE_ASSIGN_OR_RETURN(const DenseSet dense, dense_tensors(*in.source, in.expert_tensor_names, in.dense));
  io::SafetensorsWriter w;
  // Shared tensors first (each name once), then dense, then experts (docs/format.md 9.3).
  std::vector<PackedTensor> shared;
  std::set<std::string> shared_names;
  uint64_t shared_bytes = 0;
  for (const auto& c : records.codecs)
    for (PackedTensor& t : c->shared_tensors())
      if (shared_names.insert(t.name).second) {
        shared_bytes += t.bytes.size();
        shared.push_back(std::move(t));
      }
  for (const PackedTensor& t : shared) SUBMOE_RETURN_IF_ERROR(w.add_borrowed(t.name, t.dtype, t.shape, t.bytes));
  for (const DenseSet::Entry& e : dense.tensors) {
    if (e.fields.empty()) {
      SUBMOE_RETURN_IF_ERROR(w.add_borrowed(e.source->name, e.source->dtype, e.source->shape, e.source->bytes()));
      continue;
    }
    for (const PackedTensor& f : e.fields) SUBMOE_RETURN_IF_ERROR(w.add_borrowed(f.name, f.dtype, f.shape, f.bytes));
  }
  std::vector<std::unique_ptr<io::SafetensorsFile>> layer_files;
  uint64_t packed_bytes = 0;
  for (size_t l : in.sparse_layers) {
    SUBMOE_ASSIGN_OR_RETURN(auto f, io::SafetensorsFile::open(in.work->layer_file(l)));
    for (const io::TensorView& t : f->tensors()) {
      SUBMOE_RETURN_IF_ERROR(w.add_borrowed(t.name, t.dtype, t.shape, t.bytes()));
      packed_bytes += t.nbytes;
    }
    layer_files.push_back(std::move(f));
  }

  // Ledger. Shared tensors are stored once with the experts and counted with them.
  const uint64_t expert_bytes = packed_bytes + shared_bytes;
  summary->expert_bytes = expert_bytes;
  summary->dense_weights = dense.weights;
  summary->dense_bytes = dense.bytes;
  const double ew = static_cast<double>(summary->expert_weights);
  summary->expert_bits_per_weight = ew > 0 ? 8.0 * static_cast<double>(expert_bytes) / ew : 0;
  const double all_w = ew + static_cast<double>(dense.weights);
  summary->model_bits_per_weight = 8.0 * static_cast<double>(expert_bytes + dense.bytes) / all_w;
  summary->compression_vs_bf16_experts = 16.0 / summary->expert_bits_per_weight;
  summary->compression_vs_bf16_model = 16.0 / summary->model_bits_per_weight;
  json dense_classes = json::object();
  for (const auto& [name, c] : dense.classes)
    dense_classes[name] = {{"representation", c.representation},
                           {"weights", c.weights},
                           {"bytes", c.bytes},
                           {"bits_per_weight", c.weights > 0 ? 8.0 * static_cast<double>(c.bytes) / static_cast<double>(c.weights) : 0.0}};
  json ledger = {{"expert_weights", summary->expert_weights},
                 {"expert_bytes", expert_bytes},
                 {"expert_packed_bytes_without_shared", packed_bytes},
                 {"shared_tensor_bytes", shared_bytes},
                 {"expert_bits_per_weight", summary->expert_bits_per_weight},
                 {"expert_bits_per_weight_without_shared", ew > 0 ? 8.0 * static_cast<double>(packed_bytes) / ew : 0},
                 {"dense_weights", dense.weights},
                 {"dense_bytes", dense.bytes},
                 {"dense_classes", dense_classes},
                 {"model_bits_per_weight", summary->model_bits_per_weight},
                 {"compression_vs_bf16_experts", summary->compression_vs_bf16_experts},
                 {"compression_vs_bf16_model", summary->compression_vs_bf16_model}};

  w.set_metadata("format", "pt");
  const json qc = quantization_config(o, in, records);
  w.set_metadata("submoe_format_version", std::to_string(qc["format_version"].get<int>()));
  w.set_metadata("submoe_provenance", in.provenance_json);
  w.set_metadata("submoe_ledger", ledger.dump());
  SUBMOE_RETURN_IF_ERROR(w.write(o.out_dir + "/" + std::string(artifact::kWeightsFile)));

  // config.json = source config + quantization_config.
  SUBMOE_ASSIGN_OR_RETURN(std::string cfg_text, io::read_file_to_string(o.model_dir + "/config.json"));
  json cfg = json::parse(cfg_text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object()) return corrupt_data("'" + o.model_dir + "/config.json' is not a JSON object");
  cfg["quantization_config"] = qc;
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(o.out_dir + "/config.json", cfg.dump(2) + "\n"));

  for (const std::string_view name : artifact::kCopiedSourceFiles) {
    const std::string from = o.model_dir + "/" + std::string(name);
    std::error_code ec;
    if (!fs::is_regular_file(from, ec)) continue;
    SUBMOE_ASSIGN_OR_RETURN(std::string bytes, io::read_file_to_string(from));
    SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(o.out_dir + "/" + std::string(name), bytes));
  }

  // The manifest comes last: its checksums are of the files as written,
  // read back (so they also catch a write that did not land as intended).
  SUBMOE_ASSIGN_OR_RETURN(auto written, runtime::Artifact::open(o.out_dir, {.checksums = false}));
  SUBMOE_ASSIGN_OR_RETURN(const runtime::ArtifactChecksums sums, written->compute_checksums());
  json manifest = {{"format", "submoe artifact"},
                   {"format_version", qc["format_version"]},
                   {"quantization_config", qc},
                   {"provenance", json::parse(in.provenance_json)},
                   {"ledger", ledger},
                   {"checksums", runtime::checksums_to_json(sums)}};
  return io::write_file_atomic(o.out_dir + "/" + std::string(artifact::kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace submoe::calib::detail
