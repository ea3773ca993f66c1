// compress --dense-repr: dense projections (attention, shared experts, dense
// MLPs, lm_head, routers) stored in a registry representation instead of
// their source dtype (docs/format.md 9.5). Each matrix is quantized round to
// nearest through its codec's encoder (no calibration Hessian yet) and stored
// as fields <source tensor name>.<field> in place of the source tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "submoe/calib/compress.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/model_weights.h"
#include "submoe/runtime/representation.h"

namespace submoe::calib::detail {

// One dense projection the loader reads: its source tensor and class.
struct DenseProjection {
  std::string name;
  model::DenseClass cls = model::DenseClass::kAttention;
  uint32_t rows = 0, cols = 0;
};

// The classes to pack and their codecs, made from the options before anything
// loads (bad names and options are refused first).
struct DensePlan {
  std::map<model::DenseClass, std::shared_ptr<const runtime::MatrixCodec>> codecs;
  std::map<model::DenseClass, bool> if_present;  // choices that may name a class the model lacks
  std::vector<DenseProjection> projections;  // every dense projection of the model (recorded at load)
  bool empty() const { return codecs.empty(); }
};
Result<DensePlan> make_dense_plan(const std::vector<DenseReprChoice>& choices);

// A LoadWeightsOptions hook that records every dense projection into `plan`
// (the loader then reads it as usual).
model::DenseLinearHook record_dense_projections(DensePlan* plan);

// After the model loaded: every chosen class has projections (classes chosen
// if_present without any are dropped), each encodable.
Status check_dense_plan(DensePlan* plan);

// The fields of one packed source tensor, named <tensor>.<field>.
Result<std::vector<runtime::PackedTensor>> pack_dense_tensor(const io::TensorView& t,
                                                             const runtime::MatrixCodec& codec);

// An FP8 block-scaled source weight as one BF16 tensor of the same name: scaled
// in float32, rounded once (what DeepSeek's fp8_cast_bf16 stores).
Result<std::vector<runtime::PackedTensor>> dequantized_bf16_tensor(const io::TensorView& t);

}  // namespace submoe::calib::detail
