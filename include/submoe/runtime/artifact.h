// An opened compressed artifact (docs/format.md section 9): config.json with its
// quantization_config, model.safetensors memory-mapped and checked, one codec
// per representation record (runtime/representation.h; shared tensors such as
// the ternary dictionary validated once), and the location of every routed
// expert.
//
// Opening checks everything that does not need an expert's bytes: the config,
// the dictionary, that every expert tensor exists with the dtype and shape the
// config implies (gate/up [moe_intermediate, hidden], down [hidden,
// moe_intermediate]), that no other tensor sits under an experts prefix, and
// that each expert's tensors are contiguous in the file. An expert's contents
// are validated when it is built (expert_from_bytes / expert_resident), so an
// offload store can fetch one byte range per expert and hand it over untrusted:
// corrupt bytes give an error naming layer, expert, projection and field.
//
// Integrity (runtime/artifact_checksums.h): when submoe_manifest.json carries
// checksums, open verifies the small files, the safetensors header and the
// shared tensors; load_artifact_dense_weights verifies the dense tensors
// (verify_dense_tensors) and every expert build verifies its byte range, so a
// paged expert is checked at page-in. Artifacts written before checksums
// existed still open; integrity_note() says so.
//
// An Artifact is immutable after open and safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/expert_provider.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/artifact_checksums.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/compressed_linear.h"
#include "submoe/model/model_weights.h"
#include "submoe/runtime/quantization_config.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {

// One expert's bytes in the artifact: [offset, offset + length) of `path`,
// from its first tensor's first byte to its last tensor's last byte.
struct ExpertByteRange {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// The three projections of one routed expert, owning their buffers.
struct LoadedExpert {
  std::unique_ptr<model::LinearOp> gate, up, down;

  model::ExpertOps ops() const { return {gate.get(), up.get(), down.get()}; }
  // Bytes the three ops stream per forward (packed bytes when fused).
  size_t weight_bytes() const;
};

struct ArtifactOpenOptions {
  // Read and verify submoe_manifest.json's checksums. Off only for the writer,
  // which opens the artifact to compute them before the manifest exists.
  bool checksums = true;
};

class Artifact {
 public:
  // `directory` holds config.json and model.safetensors (docs/format.md 9.1).
  static Result<std::shared_ptr<const Artifact>> open(const std::string& directory,
                                                      const ArtifactOpenOptions& options = {});

  const std::string& directory() const { return directory_; }
  const io::MoeModelConfig& model_config() const { return config_; }
  const QuantizationConfig& quantization() const { return quant_; }
  const std::shared_ptr<const io::SafetensorsModel>& tensors() const { return tensors_; }
  // One codec per quantization_config representation record, in record order.
  const std::vector<std::shared_ptr<const MatrixCodec>>& codecs() const { return codecs_; }
  // The codec of one projection of a routed expert (has_expert must hold).
  const MatrixCodec& expert_codec(int layer, int expert, artifact::Projection p) const;
  // The byte sizes of one projection's fields, in FieldSpec order (has_expert must hold).
  std::vector<uint64_t> expert_field_bytes(int layer, int expert, artifact::Projection p) const;
  // One line: the codecs' summaries, method and grid, e.g.
  // "ternary_dict (qmoe, p0 0.885), gptq, grid ternary".
  std::string summary() const;
  // Bytes of the codecs' shared tensors (dictionaries, codebooks).
  uint64_t shared_tensor_bytes() const { return shared_bytes_; }

  int num_layers() const { return static_cast<int>(experts_.size()); }
  int num_experts() const { return static_cast<int>(config_.num_experts); }
  // Whether (layer, expert) is a routed expert of a sparse layer.
  bool has_expert(int layer, int expert) const;
  // gate/up are [inner, hidden], down [hidden, inner].
  uint32_t expert_hidden() const { return static_cast<uint32_t>(config_.hidden_size); }
  uint32_t expert_inner() const { return static_cast<uint32_t>(config_.moe_intermediate_size); }

  // kInvalidArgument for an expert that does not exist.
  Result<ExpertByteRange> expert_byte_range(int layer, int expert) const;

  // Whether `name` is read by the artifact itself: a routed expert's field or
  // a codec's shared tensor (everything else is dense weight).
  bool reads_tensor(std::string_view name) const { return codec_tensors_.count(name) != 0; }

  // The packed op of a dense projection `name` [rows, cols] of class `cls`
  // when quantization_config.dense_weights packs that class (its fields
  // <name>.<field> checked and validated), else an empty override: the
  // loader's hook (model::DenseLinearHook).
  Result<model::DenseOverride> dense_op(const std::string& name, model::DenseClass cls, int64_t rows, int64_t cols,
                                        ExecutionMode mode) const;

  // Whether the manifest carries checksums (they were verified on open).
  bool has_checksums() const { return checksums_.has_value(); }
  // "" with checksums; else a one-line note that corruption which still
  // parses cannot be detected, and how to add them.
  std::string integrity_note() const;
  // Hashes every dense tensor against the manifest (no-op without checksums).
  Status verify_dense_tensors() const;
  // The checksums of the artifact as it is on disk (reads every byte).
  Result<ArtifactChecksums> compute_checksums() const;

  // Builds the expert from a buffer holding exactly its byte range (e.g. read
  // with pread), validating every byte; the result owns copies of what it needs.
  Result<std::unique_ptr<LoadedExpert>> expert_from_bytes(int layer, int expert, std::span<const std::byte> bytes,
                                                          ExecutionMode mode = ExecutionMode::kFused) const;
  // The same from the memory-mapped tensors.
  Result<std::unique_ptr<LoadedExpert>> expert_resident(int layer, int expert,
                                                        ExecutionMode mode = ExecutionMode::kFused) const;

  // One packed field of one projection: where its bytes sit relative to the
  // expert's range, and the mapped tensor.
  struct FieldSlice {
    uint64_t offset = 0;  // from the expert range's first byte
    uint64_t nbytes = 0;
    const io::TensorView* tensor = nullptr;
  };
  // Fields in file order: projection p (gate, up, down) owns
  // fields[first_field[p] .. first_field[p + 1]), coded by codecs_[codec[p]].
  struct ExpertLayout {
    ExpertByteRange range;
    std::array<uint32_t, 3> codec{};
    std::array<uint32_t, 4> first_field{};
    std::vector<FieldSlice> fields;
  };

 private:
  Artifact() = default;
  Status make_codecs();
  Status index_experts();
  // Reads the manifest's checksums (if any) and verifies files, header and
  // shared tensors; `config_text` is the config.json already read.
  Status load_checksums(const std::string& config_text);
  // Against the manifest (no-op without checksums); `bytes` is the whole range.
  Status verify_expert(int layer, int expert, std::span<const std::byte> bytes) const;
  Result<std::unique_ptr<LoadedExpert>> build_expert(int layer, int expert,
                                                     std::span<const std::span<const std::byte>> f,
                                                     ExecutionMode mode) const;

  std::string directory_;
  io::MoeModelConfig config_;
  QuantizationConfig quant_;
  std::shared_ptr<const io::SafetensorsModel> tensors_;
  std::vector<std::shared_ptr<const MatrixCodec>> codecs_;
  uint64_t shared_bytes_ = 0;
  std::vector<std::vector<ExpertLayout>> experts_;  // [layer][expert]; empty for dense layers
  std::set<std::string, std::less<>> codec_tensors_;  // expert fields + shared tensors
  std::optional<ArtifactChecksums> checksums_;
  std::string no_checksums_reason_;  // why checksums_ is empty
};

}  // namespace submoe::runtime
