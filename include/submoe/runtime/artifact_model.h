// A runnable model from a compressed artifact: the dense tensors through the
// checkpoint loader (model::load_checkpoint_weights, same names, dtypes and
// checks), the routed experts as compressed LinearOps.
#pragma once

#include <memory>
#include <string>

#include "submoe/core/status.h"
#include "submoe/model/model_weights.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact.h"

namespace submoe::runtime {

struct ArtifactModelOptions {
  ExecutionMode execution = ExecutionMode::kFused;
  // Tensors nobody reads are an error unless allowed (LoadWeightsOptions).
  bool allow_unused_tensors = false;
  // Where dense bf16/f32 projections keep their weights (model/linear_op.h).
  model::DenseStorage dense_storage = model::DenseStorage::kInPlace;
};

// Everything but the routed experts (ModelWeights::experts is null, storage
// keeps the artifact alive): for builders that bring their own ExpertProvider
// (offload), then model::MoeModel::create. Dense classes stored packed
// (quantization_config.dense_weights) get their representation's op in `mode`.
Result<model::ModelWeights> load_artifact_dense_weights(std::shared_ptr<const Artifact> artifact,
                                                        bool allow_unused_tensors = false,
                                                        ExecutionMode mode = ExecutionMode::kFused,
                                                        model::DenseStorage storage = model::DenseStorage::kInPlace);

// Every expert resident in memory (built with expert_resident in `options.execution`).
Result<std::unique_ptr<model::MoeModel>> load_artifact_model(std::shared_ptr<const Artifact> artifact,
                                                             const ArtifactModelOptions& options = {});
Result<std::unique_ptr<model::MoeModel>> load_artifact_model(const std::string& directory,
                                                             const ArtifactModelOptions& options = {});

// `directory` is a compressed artifact (is_artifact) or a Hugging Face
// checkpoint (model::MoeModel::load; only allow_unused_tensors applies to it).
Result<std::unique_ptr<model::MoeModel>> load_model_or_artifact(const std::string& directory,
                                                                const ArtifactModelOptions& options = {});

}  // namespace submoe::runtime
