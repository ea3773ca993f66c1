// Packs quantized expert matrices into the artifact's tensors (docs/format.md
// 9.3) and collects one layer's tensors, in artifact order, for its checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "submoe/calib/compress.h"
#include "submoe/codec/ternary_dictionary.h"
#include "submoe/io/safetensors.h"
#include "submoe/quant/grid.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::calib::detail {

struct PackedTensor {
  std::string name;
  io::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

class LayerPacker {
 public:
  // Builds the ternary dictionary for ternary grids (options.code, options.dict_p0).
  static Result<std::unique_ptr<LayerPacker>> create(const CompressOptions& options);

  // The tensors of one quantized projection. Thread-safe (const).
  Result<std::vector<PackedTensor>> pack(int layer, int expert, artifact::Projection proj,
                                         const quant::QuantizedMatrix& q) const;
  // Appends tensors (callers append in artifact order: expert ascending, gate, up, down).
  void append(std::vector<PackedTensor> tensors);
  uint64_t bytes() const { return bytes_; }
  // Writes the collected tensors to `path` atomically and forgets them.
  Status write_and_clear(const std::string& path, const std::map<std::string, std::string>& metadata);

  const ternary::TernaryDictionary* dictionary() const { return dict_ ? &*dict_ : nullptr; }

 private:
  LayerPacker() = default;
  quant::GridSpec grid_;
  std::optional<ternary::TernaryDictionary> dict_;
  std::vector<PackedTensor> tensors_;
  uint64_t bytes_ = 0;
};

// The dictionary's entries as the artifact's U64 tensor bytes.
std::vector<uint8_t> dictionary_tensor_bytes(const ternary::TernaryDictionary& dict);

}  // namespace submoe::calib::detail
