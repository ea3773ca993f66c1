// Artifact checksums (runtime/artifact_checksums.h): reading them from the
// manifest, computing them, and verifying each part when it is read.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "submoe/core/checksum.h"
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact.h"

namespace submoe::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::span<const uint8_t> as_u8(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

// The tensors outside every routed expert's byte range, in file order.
std::vector<const io::TensorView*> non_expert_tensors(const io::SafetensorsModel& m,
                                                      const std::set<const io::TensorView*>& in_experts) {
  std::vector<const io::TensorView*> out;
  for (const io::TensorView* t : m.tensors())
    if (!in_experts.count(t)) out.push_back(t);
  return out;
}

std::string expert_name(int l, int e) { return "layer " + std::to_string(l) + " expert " + std::to_string(e); }

}  // namespace

std::string Artifact::integrity_note() const {
  if (checksums_) return "";
  return "note: " + directory_ + " has no checksums (" + no_checksums_reason_ +
         "): its bytes are validated, but corruption that stays valid cannot be detected; compress it again to add "
         "them";
}

Status Artifact::load_checksums(const std::string& config_text) {
  const fs::path manifest_path = fs::path(directory_) / artifact::kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest_path, ec)) {
    no_checksums_reason_ = "no " + std::string(artifact::kManifestFile);
    return Status::ok();
  }
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(manifest_path.string()));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt_data(manifest_path.string() + ": not a JSON object");
  if (!j.contains("checksums")) {
    no_checksums_reason_ = std::string(artifact::kManifestFile) + " predates them";
    return Status::ok();
  }
  auto parsed = checksums_from_json(j.at("checksums"));
  if (!parsed.is_ok()) return parsed.status().with_context(manifest_path.string());
  ArtifactChecksums c = std::move(*parsed);

  // Small files: config.json (already read) and every listed side file.
  if (!c.files.count(std::string(artifact::kConfigFile)))
    return corrupt_data(manifest_path.string() + ": checksums.files has no config.json");
  for (const auto& [name, stored] : c.files) {
    const bool known = name == artifact::kConfigFile ||
                       std::find(std::begin(artifact::kCopiedSourceFiles), std::end(artifact::kCopiedSourceFiles),
                                 name) != std::end(artifact::kCopiedSourceFiles);
    if (!known) return corrupt_data(manifest_path.string() + ": checksums.files names an unknown file '" + name + "'");
    const std::string path = (fs::path(directory_) / name).string();
    std::string other;
    if (name != artifact::kConfigFile) {
      auto bytes = io::read_file_to_string(path);
      if (!bytes.is_ok()) return bytes.status().with_context("the manifest checksums it");
      other = std::move(*bytes);
    }
    SUBMOE_RETURN_IF_ERROR(check_checksum(stored, xxh3_64(name == artifact::kConfigFile ? config_text : other), path));
  }

  // The safetensors header.
  if (tensors_->files().size() != 1)
    return corrupt_data(directory_ + ": an artifact has exactly one " + std::string(artifact::kWeightsFile));
  const io::SafetensorsFile& file = *tensors_->files().front();
  SUBMOE_RETURN_IF_ERROR(check_checksum(c.safetensors_header, xxh3_64(file.header_bytes()), file.path() + " header"));

  // Coverage: one checksum per expert range and per other tensor, no more.
  std::set<const io::TensorView*> in_experts;
  if (c.experts.size() != experts_.size())
    return corrupt_data(manifest_path.string() + ": checksums.experts has " + std::to_string(c.experts.size()) +
                        " layers, the artifact " + std::to_string(experts_.size()));
  for (size_t l = 0; l < experts_.size(); ++l) {
    if (c.experts[l].size() != experts_[l].size())
      return corrupt_data(manifest_path.string() + ": checksums.experts[" + std::to_string(l) + "] has " +
                          std::to_string(c.experts[l].size()) + " experts, the layer " +
                          std::to_string(experts_[l].size()));
    for (const ExpertLayout& x : experts_[l])
      for (const FieldSlice& f : x.fields) in_experts.insert(f.tensor);
  }
  const auto others = non_expert_tensors(*tensors_, in_experts);
  for (const io::TensorView* t : others)
    if (!c.tensors.count(t->name))
      return corrupt_data(manifest_path.string() + ": checksums.tensors has no entry for '" + t->name + "'");
  if (c.tensors.size() != others.size()) {
    for (const auto& [name, v] : c.tensors)
      if (tensors_->find(name) == nullptr)
        return corrupt_data(manifest_path.string() + ": checksums.tensors names '" + name +
                            "', which is not in the artifact");
  }

  // Shared tensors (codebooks, dictionaries) now: every codec already read them.
  for (const auto& codec : codecs_)
    for (const PackedTensor& t : codec->shared_tensors()) {
      const io::TensorView* v = tensors_->find(t.name);
      if (v == nullptr) continue;  // make_codecs required it
      SUBMOE_RETURN_IF_ERROR(check_checksum(c.tensors.find(t.name)->second, xxh3_64(v->bytes()),
                                            file.path() + ": tensor '" + t.name + "'"));
    }
  checksums_ = std::move(c);
  return Status::ok();
}

Status Artifact::verify_dense_tensors() const {
  if (!checksums_) return Status::ok();
  for (const auto& [name, stored] : checksums_->tensors) {
    if (reads_tensor(name)) continue;  // a shared tensor, verified on open
    const io::TensorView* t = tensors_->find(name);
    SUBMOE_RETURN_IF_ERROR(check_checksum(stored, xxh3_64(t->bytes()), t->file + ": tensor '" + name + "'"));
  }
  return Status::ok();
}

Status Artifact::verify_expert(int layer, int expert, std::span<const std::byte> bytes) const {
  if (!checksums_) return Status::ok();
  const uint64_t stored = checksums_->experts[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  const ExpertByteRange& r = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)].range;
  return check_checksum(stored, xxh3_64(as_u8(bytes)),
                        r.path + ": " + expert_name(layer, expert) + " (bytes " + std::to_string(r.offset) + ".." +
                            std::to_string(r.offset + r.length) + ")");
}

Result<ArtifactChecksums> Artifact::compute_checksums() const {
  ArtifactChecksums c;
  SUBMOE_ASSIGN_OR_RETURN(const std::string config_text,
                          io::read_file_to_string((fs::path(directory_) / artifact::kConfigFile).string()));
  c.files[std::string(artifact::kConfigFile)] = xxh3_64(config_text);
  for (const std::string_view name : artifact::kCopiedSourceFiles) {
    const fs::path p = fs::path(directory_) / name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    SUBMOE_ASSIGN_OR_RETURN(const std::string bytes, io::read_file_to_string(p.string()));
    c.files[std::string(name)] = xxh3_64(bytes);
  }
  if (tensors_->files().size() != 1)
    return corrupt_data(directory_ + ": an artifact has exactly one " + std::string(artifact::kWeightsFile));
  c.safetensors_header = xxh3_64(tensors_->files().front()->header_bytes());
  std::set<const io::TensorView*> in_experts;
  c.experts.resize(experts_.size());
  for (size_t l = 0; l < experts_.size(); ++l)
    for (const ExpertLayout& x : experts_[l]) {
      for (const FieldSlice& f : x.fields) in_experts.insert(f.tensor);
      const io::TensorView* first = x.fields.front().tensor;
      c.experts[l].push_back(xxh3_64({first->data, static_cast<size_t>(x.range.length)}));
    }
  for (const io::TensorView* t : non_expert_tensors(*tensors_, in_experts)) c.tensors[t->name] = xxh3_64(t->bytes());
  return c;
}

}  // namespace submoe::runtime
