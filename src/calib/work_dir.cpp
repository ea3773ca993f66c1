#include "work_dir.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::calib::detail {
namespace fs = std::filesystem;

namespace {
std::string numbered(const std::string& dir, const char* stem, size_t layer) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s_%04zu.safetensors", stem, layer);
  return dir + "/" + buf;
}
}  // namespace

WorkDir::WorkDir(std::string out_dir) : path_(std::move(out_dir) + "/.submoe-work") {}

bool WorkDir::exists() const {
  std::error_code ec;
  return fs::is_directory(path_, ec);
}

Status WorkDir::create() const {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) return io_error("cannot create '" + path_ + "': " + ec.message());
  return Status::ok();
}

Status WorkDir::remove() const {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) return io_error("cannot remove '" + path_ + "': " + ec.message());
  return Status::ok();
}

Status WorkDir::write_job(const std::string& job_json) const { return io::write_file_atomic(path_ + "/job.json", job_json); }

Result<std::string> WorkDir::read_job() const { return io::read_file_to_string(path_ + "/job.json"); }

std::string WorkDir::layer_file(size_t layer) const { return numbered(path_, "layer", layer); }
std::string WorkDir::hidden_file(size_t layer) const { return numbered(path_, "hidden", layer); }

Status WorkDir::save_hidden(size_t layer, const std::vector<float>& h, size_t tokens, size_t hidden) const {
  io::SafetensorsWriter w;
  SUBMOE_RETURN_IF_ERROR(w.add_borrowed("hidden", io::DType::kF32,
                                        {static_cast<int64_t>(tokens), static_cast<int64_t>(hidden)},
                                        {reinterpret_cast<const uint8_t*>(h.data()), h.size() * sizeof(float)}));
  SUBMOE_RETURN_IF_ERROR(w.write(hidden_file(layer)));
  // Older hidden states are no longer needed (only the newest is resumed from).
  for (size_t l = 0; l < layer; ++l) {
    std::error_code ec;
    fs::remove(hidden_file(l), ec);
  }
  return Status::ok();
}

Status WorkDir::load_hidden(size_t layer, std::vector<float>* h, size_t tokens, size_t hidden) const {
  SUBMOE_ASSIGN_OR_RETURN(auto file, io::SafetensorsFile::open(hidden_file(layer)));
  const io::TensorView* t = file->find("hidden");
  if (!t || t->dtype != io::DType::kF32 || t->shape != std::vector<int64_t>{static_cast<int64_t>(tokens),
                                                                             static_cast<int64_t>(hidden)})
  {
    std::string msg = "'";
    msg += hidden_file(layer);
    msg += "' does not hold hidden states of shape [" + std::to_string(tokens) + ", " + std::to_string(hidden) + "]";
    return corrupt_data(msg);
  }
  h->resize(tokens * hidden);
  std::memcpy(h->data(), t->data, h->size() * sizeof(float));
  return Status::ok();
}

std::optional<size_t> WorkDir::last_complete_layer(const std::vector<bool>& sparse) const {
  std::optional<size_t> last;
  for (size_t l = 0; l < sparse.size(); ++l) {
    std::error_code ec;
    if (sparse[l] && !fs::exists(layer_file(l), ec)) break;
    if (fs::exists(hidden_file(l), ec)) last = l;
  }
  return last;
}

}  // namespace submoe::calib::detail
