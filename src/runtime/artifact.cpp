// Artifact::open: config, dictionary, and the index of every expert's tensors
// (docs/format.md 9.2, 9.3).
#include "submoe/runtime/artifact.h"

#include <cstring>
#include <filesystem>
#include <set>

#include <algorithm>
#include <limits>
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime {
namespace {

namespace fs = std::filesystem;
using artifact::Projection;

std::string who(size_t l, size_t e) { return "layer " + std::to_string(l) + " expert " + std::to_string(e); }

}  // namespace

size_t LoadedExpert::weight_bytes() const {
  return (gate ? gate->weight_bytes() : 0) + (up ? up->weight_bytes() : 0) + (down ? down->weight_bytes() : 0);
}

Result<std::shared_ptr<const Artifact>> Artifact::open(const std::string& directory,
                                                      const ArtifactOpenOptions& options) {
  std::shared_ptr<Artifact> a(new Artifact());
  a->directory_ = directory;
  const std::string config_path = (fs::path(directory) / "config.json").string();
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(config_path));
  SUBMOE_ASSIGN_OR_RETURN(a->quant_, parse_quantization_config(text, config_path));
  SUBMOE_ASSIGN_OR_RETURN(a->config_, io::parse_hf_config(text, config_path));
  const std::string weights_path = (fs::path(directory) / artifact::kWeightsFile).string();
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> model, io::SafetensorsModel::open(weights_path));
  a->tensors_ = std::move(model);
  const auto& meta = a->tensors_->files().front()->metadata();
  const auto version = meta.find("submoe_format_version");
  if (version == meta.end())
    return corrupt_data(weights_path + ": __metadata__ has no submoe_format_version (docs/format.md 9.3)");
  if (version->second != std::to_string(a->quant_.format_version))
    return unsupported(weights_path + ": __metadata__ submoe_format_version is '" + version->second +
                       "', config.json's quantization_config.format_version is " +
                       std::to_string(a->quant_.format_version));
  SUBMOE_RETURN_IF_ERROR(a->make_codecs().with_context(config_path));
  SUBMOE_RETURN_IF_ERROR(a->index_experts().with_context(weights_path));
  if (options.checksums) {
    SUBMOE_RETURN_IF_ERROR(a->load_checksums(text));
  } else {
    a->no_checksums_reason_ = "not read";
  }
  return std::shared_ptr<const Artifact>(std::move(a));
}

Status Artifact::make_codecs() {
  const io::SafetensorsModel& m = *tensors_;
  const TensorLookup lookup = [&m](std::string_view name) { return m.find(std::string(name)); };
  std::set<std::string> shared;
  for (size_t i = 0; i < quant_.representations.size(); ++i) {
    SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const MatrixCodec> c,
                            codec_from_record(quant_.representations[i], quant_.record_paths[i], lookup));
    if (!quant_.contracts.empty())  // what the writer recorded must be what this build executes
      SUBMOE_RETURN_IF_ERROR(check_contract(quant_.contracts[i], c->contract(), quant_.contract_paths[i]));
    for (const PackedTensor& t : c->shared_tensors()) {
      if (shared.insert(t.name).second) shared_bytes_ += t.bytes.size();
      codec_tensors_.insert(t.name);
    }
    codecs_.push_back(std::move(c));
  }
  // The provenance grid of a one-codec artifact names that codec's grid
  // ("int4" is accepted for "int4-g128": early writers left the group out).
  if (codecs_.size() == 1 && !quant_.grid.empty()) {
    const std::string g = codecs_[0]->grid_name();
    if (quant_.grid != g && g.rfind(quant_.grid + "-", 0) != 0)
      return corrupt_data("quantization_config.grid '" + quant_.grid + "' does not match the representation, " +
                          codecs_[0]->summary() + " (grid " + g + ")");
  }
  const size_t L = static_cast<size_t>(std::max<int64_t>(config_.num_hidden_layers, 0));
  if (!quant_.expert_matrices.empty()) {
    if (quant_.expert_matrices.size() != L)
      return corrupt_data("quantization_config.expert_matrices has " + std::to_string(quant_.expert_matrices.size()) +
                          " layers, the model " + std::to_string(L));
    for (size_t l = 0; l < L; ++l) {
      const size_t want = config_.is_moe_layer(static_cast<int>(l)) ? static_cast<size_t>(config_.num_experts) : 0;
      if (quant_.expert_matrices[l].size() != want)
        return corrupt_data("quantization_config.expert_matrices[" + std::to_string(l) + "] has " +
                            std::to_string(quant_.expert_matrices[l].size()) + " experts, layer " + std::to_string(l) +
                            " has " + std::to_string(want) + " routed experts");
    }
  }
  return Status::ok();
}

const MatrixCodec& Artifact::expert_codec(int layer, int expert, artifact::Projection p) const {
  const ExpertLayout& x = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  return *codecs_[x.codec[static_cast<size_t>(p)]];
}

std::vector<uint64_t> Artifact::expert_field_bytes(int layer, int expert, artifact::Projection p) const {
  const ExpertLayout& x = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  std::vector<uint64_t> sizes;
  for (uint32_t i = x.first_field[static_cast<size_t>(p)]; i < x.first_field[static_cast<size_t>(p) + 1]; ++i)
    sizes.push_back(x.fields[i].nbytes);
  return sizes;
}

std::string Artifact::summary() const {
  std::string s;
  std::set<std::string> seen;
  for (const auto& c : codecs_) {
    const std::string one = c->summary();
    if (!seen.insert(one).second) continue;
    s += (s.empty() ? "" : " + ") + one;
  }
  if (!quant_.method.empty()) s += ", " + quant_.method;
  if (!quant_.grid.empty()) s += ", grid " + quant_.grid;
  return s;
}

Status Artifact::index_experts() {
  const int64_t H = config_.hidden_size, I = config_.moe_intermediate_size;
  if (H <= 0 || I <= 0) return corrupt_data("config gives expert shape [" + std::to_string(I) + ", " + std::to_string(H) + "]");
  const auto L = static_cast<size_t>(config_.num_hidden_layers);
  const auto E = static_cast<size_t>(config_.num_experts);
  experts_.assign(L, {});
  std::set<std::string> expected;
  for (size_t l = 0; l < L; ++l) {
    if (!config_.is_moe_layer(static_cast<int>(l))) continue;
    experts_[l].resize(E);
    for (size_t e = 0; e < E; ++e) {
      ExpertLayout& layout = experts_[l][e];
      const io::TensorView* prev = nullptr;
      for (Projection p : artifact::kProjections) {
        const auto pi = static_cast<size_t>(p);
        const bool down = p == Projection::kDown;
        const auto rows = static_cast<uint32_t>(down ? H : I), cols = static_cast<uint32_t>(down ? I : H);
        layout.codec[pi] = quant_.record_of(l, e, pi);
        const MatrixCodec& codec = *codecs_[layout.codec[pi]];
        layout.first_field[pi] = static_cast<uint32_t>(layout.fields.size());
        SUBMOE_RETURN_IF_ERROR(codec.check_shape(rows, cols).with_context(who(l, e) + " " +
                                                                          std::string(artifact::projection_name(p))));
        for (const FieldSpec& spec : codec.fields(rows, cols)) {
          const std::string name =
              artifact::expert_tensor_name(static_cast<int>(l), static_cast<int>(e), p, spec.name);
          const io::TensorView* t = tensors_->find(name);
          if (t == nullptr) return not_found("no tensor '" + name + "' (" + who(l, e) + ")");
          SUBMOE_RETURN_IF_ERROR(check_field(*t, spec));
          if (prev != nullptr && (t->file != prev->file || t->file_offset != prev->file_offset + prev->nbytes))
            return corrupt_data(who(l, e) + ": tensor '" + name + "' (offset " + std::to_string(t->file_offset) +
                                ") does not directly follow '" + prev->name + "' (ending at " +
                                std::to_string(prev->file_offset + prev->nbytes) +
                                "); an expert's tensors must be contiguous in file order (docs/format.md 9.3)");
          prev = t;
          expected.insert(name);
          codec_tensors_.insert(name);
          layout.fields.push_back({0, 0, t});
        }
      }
      layout.first_field[3] = static_cast<uint32_t>(layout.fields.size());
      if (layout.fields.empty()) return corrupt_data(who(l, e) + ": its representations declare no fields");
      const io::TensorView* first = layout.fields.front().tensor;
      layout.range = {first->file, first->file_offset, prev->file_offset + prev->nbytes - first->file_offset};
      for (FieldSlice& f : layout.fields) {
        f.offset = f.tensor->file_offset - first->file_offset;
        f.nbytes = f.tensor->nbytes;
      }
    }
  }
  // Anything else under a routed expert's prefix (".mlp.experts.<index>.") is
  // a writer bug or a foreign file: refuse rather than silently ignore weights.
  // Per-layer expert tensors without an index (GPT-OSS's experts.*_bias) are
  // dense weights: the weight loader reads them or refuses them as unused.
  constexpr std::string_view kExperts = ".mlp.experts.";
  for (const io::TensorView* t : tensors_->tensors()) {
    const size_t at = t->name.find(kExperts);
    const size_t next = at + kExperts.size();
    if (t->name.rfind("model.layers.", 0) == 0 && at != std::string::npos && next < t->name.size() &&
        t->name[next] >= '0' && t->name[next] <= '9' && !expected.count(t->name))
      return corrupt_data("unexpected tensor '" + t->name + "' under a routed-experts prefix (docs/format.md 9.3)");
  }
  return Status::ok();
}

Result<model::DenseOverride> Artifact::dense_op(const std::string& name, model::DenseClass cls, int64_t rows,
                                                int64_t cols, ExecutionMode mode) const {
  const std::string cname = model::dense_class_name(cls);
  const auto it = std::find_if(quant_.dense_weights.begin(), quant_.dense_weights.end(),
                               [&](const auto& d) { return d.first == cname; });
  if (it == quant_.dense_weights.end()) return model::DenseOverride{};
  const MatrixCodec& codec = *codecs_[it->second];
  const std::string what = "tensor '" + name + "' (quantization_config.dense_weights." + cname + ": " + codec.summary() + ")";
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  if (rows <= 0 || cols <= 0 || rows > kMax || cols > kMax)
    return corrupt_data(what + ": shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  const auto r = static_cast<uint32_t>(rows), c = static_cast<uint32_t>(cols);
  SUBMOE_RETURN_IF_ERROR(codec.check_shape(r, c).with_context(what));
  model::DenseOverride out;
  std::vector<std::span<const std::byte>> bytes;
  for (const FieldSpec& spec : codec.fields(r, c)) {
    const std::string field = name + "." + spec.name;
    const io::TensorView* t = tensors_->find(field);
    if (t == nullptr) return corrupt_data(what + ": no field tensor '" + field + "'");
    SUBMOE_RETURN_IF_ERROR(check_field(*t, spec).with_context(what));
    out.tensors.push_back(t);
    bytes.push_back(std::as_bytes(t->bytes()));
  }
  auto op = codec.make_op(r, c, bytes, mode);
  if (!op.is_ok()) return op.status().with_context(what);
  out.op = std::move(op).value();
  return out;
}

bool Artifact::has_expert(int layer, int expert) const {
  return layer >= 0 && static_cast<size_t>(layer) < experts_.size() && expert >= 0 &&
         static_cast<size_t>(expert) < experts_[static_cast<size_t>(layer)].size();
}

Result<ExpertByteRange> Artifact::expert_byte_range(int layer, int expert) const {
  if (!has_expert(layer, expert))
    return invalid_argument("artifact has no routed expert " + std::to_string(expert) + " in layer " +
                            std::to_string(layer));
  return experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)].range;
}

}  // namespace submoe::runtime
