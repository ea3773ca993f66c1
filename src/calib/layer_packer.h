// Packs quantized expert matrices into the artifact's tensors (docs/format.md
// 9.3) through their representation's encoder, and collects one layer's
// tensors, in artifact order, for its checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "submoe/io/safetensors.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/representation.h"

namespace submoe::calib::detail {

using runtime::PackedTensor;

class LayerPacker {
 public:
  // `codecs`: the artifact's representation records, in record order;
  // `records` [layer][expert] -> record index of the expert's three matrices
  // (empty: record 0 for all).
  LayerPacker(std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs,
              std::vector<std::vector<uint32_t>> records);

  const std::vector<std::shared_ptr<const runtime::MatrixCodec>>& codecs() const { return codecs_; }
  // Record index of (layer, expert, projection).
  uint32_t record_of(size_t layer, size_t expert, artifact::Projection /*p*/) const {
    return records_.empty() ? 0u : records_[layer][expert];
  }
  const runtime::MatrixCodec& codec(size_t layer, size_t expert, artifact::Projection p) const {
    return *codecs_[record_of(layer, expert, p)];
  }

  // The tensors of one quantized projection, named for the artifact. Thread-safe (const).
  Result<std::vector<PackedTensor>> pack(int layer, int expert, artifact::Projection proj,
                                         const runtime::MatrixEncoder& encoder) const;
  // Appends tensors (callers append in artifact order: expert ascending, gate, up, down).
  void append(std::vector<PackedTensor> tensors);
  uint64_t bytes() const { return bytes_; }
  // Writes the collected tensors to `path` atomically and forgets them.
  Status write_and_clear(const std::string& path, const std::map<std::string, std::string>& metadata);

 private:
  std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs_;
  std::vector<std::vector<uint32_t>> records_;
  std::vector<PackedTensor> tensors_;
  uint64_t bytes_ = 0;
};

}  // namespace submoe::calib::detail
