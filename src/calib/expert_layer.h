// One sparse layer's routed experts: Hessians from the routed calibration tokens,
// batched GPTQ (or RTN) per expert group, the compressed experts run on all of
// their tokens, outputs scattered into the layer's FFN output, and the packed
// tensors added to the layer's checkpoint. Internal to calib.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "submoe/calib/compress.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/model_weights.h"
#include "submoe/model/router.h"
#include "submoe/quant/grid.h"
#include "layer_packer.h"

namespace submoe::calib::detail {

struct ExpertLayerInput {
  size_t layer = 0;
  const float* x = nullptr;              // [tokens, hidden] FFN inputs
  size_t tokens = 0, hidden = 0, inner = 0;
  const model::Routing* routing = nullptr;
  std::span<const uint8_t> masked;       // per token: 1 = keep out of Hessians
  const model::LayerExpertWeights* weights = nullptr;
  // Expert e's activation and biases (model::expert_mlp of the layer).
  std::function<model::ExpertMlp(size_t expert)> mlp = [](size_t) { return model::ExpertMlp{}; };
};

// block[tokens, hidden] += sum over each token's experts, in ascending expert
// order, of weight x compressed expert(x): the same summation order as the
// forward pass. `on_expert_done(done, total)` reports progress.
Status compress_expert_layer(const ExpertLayerInput& in, const CompressOptions& options, LayerPacker& packer,
                             float* block, LayerReport* report, ThreadPool* pool,
                             const std::function<void(size_t, size_t)>& on_expert_done);

}  // namespace submoe::calib::detail
