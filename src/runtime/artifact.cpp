// Artifact::open: config, dictionary, and the index of every expert's tensors
// (docs/format.md 9.2, 9.3).
#include "submoe/runtime/artifact.h"

#include <cstring>
#include <filesystem>
#include <set>

#include "submoe/codec/int_packed.h"
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime {
namespace {

namespace fs = std::filesystem;
using artifact::Projection;

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

struct FieldSpec {
  std::string_view field;
  io::DType dtype;
  std::vector<int64_t> shape;  // empty: 1-D of any length (ternary codes)
};

// The three fields of one projection [rows, cols] in file order.
std::array<FieldSpec, 3> field_specs(const QuantizationConfig& q, int64_t rows, int64_t cols) {
  if (q.representation == ExpertRepresentation::kTernaryDict) {
    return {FieldSpec{artifact::kFieldRowOffsets, io::DType::kI32, {rows + 1}},
            FieldSpec{artifact::kFieldScales, io::DType::kBF16, {rows, 2}},
            FieldSpec{artifact::kFieldCodes, io::DType::kU16, {}}};
  }
  const auto c = static_cast<uint32_t>(cols);
  const auto row_bytes = static_cast<int64_t>(intn::int_row_bytes(c, q.bits));
  const auto groups = static_cast<int64_t>(intn::int_groups_per_row(c, q.group_size));
  return {FieldSpec{artifact::kFieldQweight, io::DType::kU8, {rows, row_bytes}},
          FieldSpec{artifact::kFieldScales, io::DType::kF16, {rows, groups}},
          FieldSpec{artifact::kFieldZeros, io::DType::kU8, {rows, groups}}};
}

Status check_field(const io::TensorView& t, const FieldSpec& spec) {
  if (t.dtype != spec.dtype)
    return corrupt_data("tensor '" + t.name + "' has dtype " + std::string(io::dtype_name(t.dtype)) +
                        ", the format stores " + std::string(spec.field) + " as " +
                        std::string(io::dtype_name(spec.dtype)));
  if (spec.shape.empty()) {  // ternary codes: U16 [n], n even
    if (t.shape.size() != 1)
      return corrupt_data("tensor '" + t.name + "' has shape " + t.shape_string() + ", codes must be 1-D");
    if (t.shape[0] % 2 != 0)
      return corrupt_data("tensor '" + t.name + "' holds " + std::to_string(t.shape[0]) +
                          " codewords, the format pads codes to an even count");
    return Status::ok();
  }
  if (t.shape != spec.shape)
    return corrupt_data("tensor '" + t.name + "' has shape " + t.shape_string() + ", the config implies " +
                        shape_string(spec.shape));
  return Status::ok();
}

Result<std::shared_ptr<const TernaryCodebook>> load_codebook(const io::SafetensorsModel& m, const QuantizationConfig& q) {
  const io::TensorView* t = m.find(q.dictionary_tensor);
  if (t == nullptr)
    return not_found("model.safetensors has no dictionary tensor '" + q.dictionary_tensor +
                     "' (quantization_config.experts.dictionary_tensor)");
  const std::vector<int64_t> want = {static_cast<int64_t>(ternary::kDictEntries)};
  if (t->dtype != io::DType::kU64 || t->shape != want)
    return corrupt_data("dictionary tensor '" + t->name + "' is " + std::string(io::dtype_name(t->dtype)) + " " +
                        t->shape_string() + ", the format stores U64 [65536]");
  std::vector<ternary::DictEntry> entries(ternary::kDictEntries);
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(t->data[i * 8 + static_cast<size_t>(b)]) << (8 * b);
    entries[i].word[0] = static_cast<uint32_t>(v);
    entries[i].word[1] = static_cast<uint32_t>(v >> 32);
  }
  auto cb = TernaryCodebook::create(q.code, q.p0, entries);
  if (!cb.is_ok()) return cb.status().with_context("dictionary tensor '" + t->name + "'");
  return cb;
}

}  // namespace

size_t LoadedExpert::weight_bytes() const {
  return (gate ? gate->weight_bytes() : 0) + (up ? up->weight_bytes() : 0) + (down ? down->weight_bytes() : 0);
}

Result<std::shared_ptr<const Artifact>> Artifact::open(const std::string& directory) {
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
  if (version->second != std::to_string(artifact::kArtifactFormatVersion))
    return unsupported(weights_path + ": __metadata__ submoe_format_version is '" + version->second +
                       "', this reader handles " + std::to_string(artifact::kArtifactFormatVersion));
  if (a->quant_.representation == ExpertRepresentation::kTernaryDict) {
    auto cb = load_codebook(*a->tensors_, a->quant_);
    if (!cb.is_ok()) return cb.status().with_context(weights_path);
    a->codebook_ = std::move(cb).value();
  }
  SUBMOE_RETURN_IF_ERROR(a->index_experts().with_context(weights_path));
  return std::shared_ptr<const Artifact>(std::move(a));
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
      const std::string who = "layer " + std::to_string(l) + " expert " + std::to_string(e);
      size_t k = 0;
      const io::TensorView* prev = nullptr;
      for (Projection p : artifact::kProjections) {
        const bool down = p == Projection::kDown;
        for (const FieldSpec& spec : field_specs(quant_, down ? H : I, down ? I : H)) {
          const std::string name =
              artifact::expert_tensor_name(static_cast<int>(l), static_cast<int>(e), p, spec.field);
          const io::TensorView* t = tensors_->find(name);
          if (t == nullptr) return not_found("no tensor '" + name + "' (" + who + ")");
          SUBMOE_RETURN_IF_ERROR(check_field(*t, spec));
          if (prev != nullptr && (t->file != prev->file || t->file_offset != prev->file_offset + prev->nbytes))
            return corrupt_data(who + ": tensor '" + name + "' (offset " + std::to_string(t->file_offset) +
                                ") does not directly follow '" + prev->name + "' (ending at " +
                                std::to_string(prev->file_offset + prev->nbytes) +
                                "); an expert's tensors must be contiguous in file order (docs/format.md 9.3)");
          prev = t;
          expected.insert(name);
          layout.fields[k++].tensor = t;
        }
      }
      const io::TensorView* first = layout.fields.front().tensor;
      layout.range = {first->file, first->file_offset, prev->file_offset + prev->nbytes - first->file_offset};
      for (FieldSlice& f : layout.fields) {
        f.offset = f.tensor->file_offset - first->file_offset;
        f.nbytes = f.tensor->nbytes;
      }
    }
  }
  // Anything else under an experts prefix is a writer bug or a foreign file:
  // refuse rather than silently ignore weights.
  for (const io::TensorView* t : tensors_->tensors()) {
    if (t->name.rfind("model.layers.", 0) == 0 && t->name.find(".mlp.experts.") != std::string::npos &&
        !expected.count(t->name))
      return corrupt_data("unexpected tensor '" + t->name + "' under a routed-experts prefix (docs/format.md 9.3)");
  }
  return Status::ok();
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
