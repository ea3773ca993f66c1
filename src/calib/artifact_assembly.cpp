#include "artifact_assembly.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "layer_packer.h"
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::calib::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json quantization_config(const CompressOptions& o, const AssemblyInputs& in) {
  json q;
  q["quant_method"] = std::string(artifact::kQuantMethod);
  q["format_version"] = artifact::kArtifactFormatVersion;
  q["representations"] = json::array();
  for (const auto& c : in.codecs) q["representations"].push_back(c->record());
  if (!in.records.empty()) {
    json m = json::array();
    for (const auto& layer : in.records) {
      json l = json::array();
      for (uint32_t r : layer) l.push_back({r, r, r});
      m.push_back(l);
    }
    q["expert_matrices"] = m;
  }
  q["method"] = o.method == QuantMethod::kGptq ? "gptq" : "rtn";
  q["grid"] = in.codecs.size() == 1 ? in.codecs[0]->grid_name() : "mixed";
  q["damp"] = o.damp;
  q["expert_group"] = o.expert_group;
  q["act_order"] = o.act_order;
  q["true_sequential"] = o.true_sequential;
  q["tensor_names"] = "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}";
  q["modules_not_converted"] = {"embed_tokens", "self_attn", "router", "norms", "shared_expert", "dense_mlp",
                                "lm_head"};
  return q;
}

// Source tensors in order, minus the routed experts; their element count and bytes.
struct DenseSet {
  std::vector<const io::TensorView*> tensors;
  uint64_t weights = 0, bytes = 0;
};

DenseSet dense_tensors(const io::SafetensorsModel& src, const std::vector<std::string>& expert_names) {
  const std::set<std::string> skip(expert_names.begin(), expert_names.end());
  DenseSet d;
  for (const io::TensorView* t : src.tensors()) {
    if (skip.count(t->name)) continue;
    d.tensors.push_back(t);
    d.weights += static_cast<uint64_t>(t->numel());
    d.bytes += t->nbytes;
  }
  return d;
}

}  // namespace

Status assemble_artifact(const AssemblyInputs& in, CompressSummary* summary) {
  const CompressOptions& o = *in.options;
  const DenseSet dense = dense_tensors(*in.source, in.expert_tensor_names);
  io::SafetensorsWriter w;
  // Shared tensors first (each name once), then dense, then experts (docs/format.md 9.3).
  std::vector<PackedTensor> shared;
  std::set<std::string> shared_names;
  uint64_t shared_bytes = 0;
  for (const auto& c : in.codecs)
    for (PackedTensor& t : c->shared_tensors())
      if (shared_names.insert(t.name).second) {
        shared_bytes += t.bytes.size();
        shared.push_back(std::move(t));
      }
  for (const PackedTensor& t : shared) SUBMOE_RETURN_IF_ERROR(w.add_borrowed(t.name, t.dtype, t.shape, t.bytes));
  for (const io::TensorView* t : dense.tensors)
    SUBMOE_RETURN_IF_ERROR(w.add_borrowed(t->name, t->dtype, t->shape, t->bytes()));
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
  json ledger = {{"expert_weights", summary->expert_weights},
                 {"expert_bytes", expert_bytes},
                 {"expert_packed_bytes_without_shared", packed_bytes},
                 {"shared_tensor_bytes", shared_bytes},
                 {"expert_bits_per_weight", summary->expert_bits_per_weight},
                 {"expert_bits_per_weight_without_shared", ew > 0 ? 8.0 * static_cast<double>(packed_bytes) / ew : 0},
                 {"dense_weights", dense.weights},
                 {"dense_bytes", dense.bytes},
                 {"model_bits_per_weight", summary->model_bits_per_weight},
                 {"compression_vs_bf16_experts", summary->compression_vs_bf16_experts},
                 {"compression_vs_bf16_model", summary->compression_vs_bf16_model}};

  w.set_metadata("format", "pt");
  w.set_metadata("submoe_format_version", std::to_string(artifact::kArtifactFormatVersion));
  w.set_metadata("submoe_provenance", in.provenance_json);
  w.set_metadata("submoe_ledger", ledger.dump());
  SUBMOE_RETURN_IF_ERROR(w.write(o.out_dir + "/" + std::string(artifact::kWeightsFile)));

  // config.json = source config + quantization_config.
  SUBMOE_ASSIGN_OR_RETURN(std::string cfg_text, io::read_file_to_string(o.model_dir + "/config.json"));
  json cfg = json::parse(cfg_text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object()) return corrupt_data("'" + o.model_dir + "/config.json' is not a JSON object");
  cfg["quantization_config"] = quantization_config(o, in);
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
                   {"format_version", artifact::kArtifactFormatVersion},
                   {"quantization_config", quantization_config(o, in)},
                   {"provenance", json::parse(in.provenance_json)},
                   {"ledger", ledger},
                   {"checksums", runtime::checksums_to_json(sums)}};
  return io::write_file_atomic(o.out_dir + "/" + std::string(artifact::kManifestFile), manifest.dump(2) + "\n");
}

}  // namespace submoe::calib::detail
