// A MoeModel from an artifact: dense tensors through the checkpoint loader,
// routed experts resident as compressed ops.
#include "submoe/runtime/artifact_model.h"

#include "submoe/io/architecture.h"

namespace submoe::runtime {

Result<model::ModelWeights> load_artifact_dense_weights(std::shared_ptr<const Artifact> artifact,
                                                        bool allow_unused_tensors, ExecutionMode mode,
                                                        model::DenseStorage storage) {
  if (!artifact) return invalid_argument("load_artifact_dense_weights: no artifact");
  SUBMOE_RETURN_IF_ERROR(artifact->verify_dense_tensors());
  const io::MoeModelConfig& c = artifact->model_config();
  const io::ArchitectureDescriptor& arch = io::architecture_descriptor(c.architecture);
  model::LoadWeightsOptions options;
  options.skip_routed_experts = true;
  options.read_elsewhere = [a = artifact.get()](const io::TensorView& t) { return a->reads_tensor(t.name); };
  options.allow_unused_tensors = allow_unused_tensors;
  options.dense_storage = storage;
  options.dense_linear = [a = artifact.get(), mode](const std::string& name, model::DenseClass cls, int64_t rows,
                                                   int64_t cols) { return a->dense_op(name, cls, rows, cols, mode); };
  auto w = model::load_checkpoint_weights(c, arch, artifact->tensors(), options);
  if (!w.is_ok()) return w.status().with_context(artifact->directory());
  // The artifact owns the mapping the dense views point into (and the codebook).
  w->storage = artifact;
  return w;
}

Result<std::unique_ptr<model::MoeModel>> load_artifact_model(std::shared_ptr<const Artifact> artifact,
                                                             const ArtifactModelOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(model::ModelWeights w, load_artifact_dense_weights(artifact, options.allow_unused_tensors, options.execution,
                                                                      options.dense_storage));
  std::vector<std::vector<model::ResidentExpertProvider::Expert>> experts(
      static_cast<size_t>(artifact->num_layers()));
  for (int l = 0; l < artifact->num_layers(); ++l) {
    if (!artifact->has_expert(l, 0)) continue;
    auto& row = experts[static_cast<size_t>(l)];
    row.resize(static_cast<size_t>(artifact->num_experts()));
    for (int e = 0; e < artifact->num_experts(); ++e) {
      SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedExpert> x, artifact->expert_resident(l, e, options.execution));
      row[static_cast<size_t>(e)] = {std::move(x->gate), std::move(x->up), std::move(x->down)};
    }
  }
  w.experts = std::make_unique<model::ResidentExpertProvider>(std::move(experts));
  return model::MoeModel::create(artifact->model_config(), std::move(w));
}

Result<std::unique_ptr<model::MoeModel>> load_artifact_model(const std::string& directory,
                                                             const ArtifactModelOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const Artifact> artifact, Artifact::open(directory));
  return load_artifact_model(std::move(artifact), options);
}

Result<std::unique_ptr<model::MoeModel>> load_model_or_artifact(const std::string& directory,
                                                                const ArtifactModelOptions& options) {
  if (is_artifact(directory)) return load_artifact_model(directory, options);
  model::LoadWeightsOptions o;
  o.allow_unused_tensors = options.allow_unused_tensors;
  o.dense_storage = options.dense_storage;
  return model::MoeModel::load(directory, o);
}

}  // namespace submoe::runtime
