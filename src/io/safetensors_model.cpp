// SafetensorsModel: one file, or shards tied together by model.safetensors.index.json.
#include <algorithm>
#include <filesystem>
#include <set>

#include "json_strict.h"
#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

namespace fs = std::filesystem;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// Shard names come from a file we did not write: keep them inside the directory.
Status check_shard_name(const std::string& shard) {
  const fs::path p(shard);
  if (shard.empty() || p.is_absolute()) return corrupt_data("shard name '" + shard + "' is not a relative file name");
  for (const auto& part : p)
    if (part == "..") return corrupt_data("shard name '" + shard + "' leaves the model directory");
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::open(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return not_found(path + ": no such file or directory");

  std::string index_path;
  std::string single_path;
  std::string directory;
  if (fs::is_directory(st)) {
    directory = path;
    const fs::path idx = fs::path(path) / kIndexName;
    const fs::path one = fs::path(path) / kSingleName;
    if (fs::exists(idx, ec)) {
      index_path = idx.string();
    } else if (fs::exists(one, ec)) {
      single_path = one.string();
    } else {
      std::string msg = path;
      msg.append(": directory holds neither ").append(kIndexName).append(" nor ").append(kSingleName);
      return not_found(std::move(msg));
    }
  } else {
    directory = fs::path(path).parent_path().string();
    if (directory.empty()) directory.assign(1, '.');  // not = ".": GCC 12 -Wrestrict false positive
    if (fs::path(path).extension() == ".json") {
      index_path = path;
    } else {
      single_path = path;
    }
  }

  std::unique_ptr<SafetensorsModel> m(new SafetensorsModel());
  m->directory_ = directory;

  if (!single_path.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(single_path));
    m->files_.push_back(std::move(file));
    for (const TensorView& t : m->files_.back()->tensors()) {
      m->tensors_.push_back(&t);
      m->by_name_.emplace(t.name, &t);
    }
    SUBMOE_RETURN_IF_ERROR(m->attach_fp8_block_scales());
    return m;
  }

  SUBMOE_ASSIGN_OR_RETURN(const std::string text, read_file_to_string(index_path));
  SUBMOE_ASSIGN_OR_RETURN(const nlohmann::json index, parse_json_strict(text, index_path));
  if (!index.is_object()) return corrupt_data(index_path + ": not a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end()) return corrupt_data(index_path + ": missing 'weight_map'");
  if (!wm->is_object())
    return corrupt_data(index_path + ": 'weight_map' is a JSON " + json_type_name(*wm) + ", not an object");

  std::map<std::string, std::string> weight_map;  // tensor -> shard
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      return corrupt_data(index_path + ": weight_map entry '" + tensor + "' is a JSON " + json_type_name(shard) +
                          ", not a file name");
    const std::string& name = shard.get_ref<const std::string&>();
    Status s = check_shard_name(name);
    if (!s.is_ok()) return s.with_context(index_path);
    weight_map.emplace(tensor, name);
    shards.insert(name);
  }
  if (weight_map.empty()) return corrupt_data(index_path + ": 'weight_map' is empty");

  // Shards in sorted order (model-00001-of-N first); tensors in file order within.
  std::map<std::string, const SafetensorsFile*> shard_files;
  for (const std::string& shard : shards) {
    const std::string shard_path = (fs::path(directory) / shard).string();
    auto file = SafetensorsFile::open(shard_path);
    if (!file.is_ok()) return file.status().with_context(index_path + ": shard '" + shard + "'");
    m->files_.push_back(std::move(file).value());
    shard_files[shard] = m->files_.back().get();
  }
  for (const auto& [tensor, shard] : weight_map) {
    if (shard_files.at(shard)->find(tensor) == nullptr)
      return corrupt_data(index_path + ": tensor '" + tensor + "' is mapped to shard '" + shard +
                          "', which does not contain it");
  }
  for (const auto& file : m->files_) {
    for (const TensorView& t : file->tensors()) {
      const auto [it, inserted] = m->by_name_.emplace(t.name, &t);
      if (!inserted)
        return corrupt_data(index_path + ": tensor '" + t.name + "' is stored in both '" + it->second->file +
                            "' and '" + file->path() + "'");
      const auto w = weight_map.find(t.name);
      if (w == weight_map.end())
        return corrupt_data(index_path + ": tensor '" + t.name + "' in shard '" + file->path() +
                            "' is not listed in 'weight_map'");
      m->tensors_.push_back(&t);
    }
  }
  SUBMOE_RETURN_IF_ERROR(m->attach_fp8_block_scales());
  return m;
}

const TensorView* SafetensorsModel::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

uint64_t SafetensorsModel::bytes_on_disk() const {
  uint64_t total = 0;
  for (const auto& f : files_) total += f->file_size();
  return total;
}

}  // namespace submoe::io
