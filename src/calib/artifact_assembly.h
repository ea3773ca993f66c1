// Final step of `compress`: the artifact directory from the source checkpoint
// and the per-layer checkpoints (docs/format.md section 9).
#pragma once

#include <string>
#include <vector>

#include "submoe/calib/compress.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "dense_packing.h"
#include "submoe/runtime/representation.h"
#include "work_dir.h"

namespace submoe::calib::detail {

struct AssemblyInputs {
  const CompressOptions* options = nullptr;
  const io::SafetensorsModel* source = nullptr;
  std::vector<std::string> expert_tensor_names;  // source tensors replaced by packed experts
  std::vector<size_t> sparse_layers;
  // The representation records, in record order, and [layer][expert] -> the
  // record of the expert's matrices (empty: record 0 for all).
  std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs;
  std::vector<std::vector<uint32_t>> records;
  const DensePlan* dense = nullptr;  // dense classes to pack (null or empty: none)
  std::string provenance_json;                             // deterministic
  const WorkDir* work = nullptr;
};

// Writes model.safetensors, config.json (+ quantization_config), the tokenizer
// files and submoe_manifest.json into options.out_dir; fills the ledger fields
// of `summary`.
Status assemble_artifact(const AssemblyInputs& in, CompressSummary* summary);

}  // namespace submoe::calib::detail
