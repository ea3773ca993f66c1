// The compression job's working directory (DIR/.submoe-work): job identity,
// per-layer checkpoints of packed experts, and the hidden states after the
// last finished layer. Every file is written atomically, so after a kill -9 the
// directory holds only complete files and --resume continues from the last
// layer whose checkpoint and hidden states both exist.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::calib::detail {

class WorkDir {
 public:
  explicit WorkDir(std::string out_dir);

  const std::string& path() const { return path_; }
  bool exists() const;
  Status create() const;
  Status remove() const;

  // job.json: the inputs and options that determine the artifact's bytes.
  Status write_job(const std::string& job_json) const;
  Result<std::string> read_job() const;

  std::string layer_file(size_t layer) const;   // packed experts of a sparse layer
  std::string hidden_file(size_t layer) const;  // hidden states after layer

  // Saves the hidden states after `layer` [tokens, hidden] and removes older ones.
  Status save_hidden(size_t layer, const std::vector<float>& h, size_t tokens, size_t hidden) const;
  Status load_hidden(size_t layer, std::vector<float>* h, size_t tokens, size_t hidden) const;
  // Highest layer with saved hidden states whose sparse-layer checkpoint exists
  // (and every earlier sparse layer's), or nullopt.
  std::optional<size_t> last_complete_layer(const std::vector<bool>& sparse) const;

 private:
  std::string path_;
};

}  // namespace submoe::calib::detail
