// Building one expert's LinearOps from its packed fields, from a fetched byte
// range or from the mapped tensors. The bytes are untrusted in both cases: each
// projection's codec (runtime/representation.h) copies its fields into aligned
// owned memory and validates them before a kernel may see them.
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime {

Result<std::unique_ptr<LoadedExpert>> Artifact::build_expert(int layer, int expert,
                                                             std::span<const std::span<const std::byte>> f,
                                                             ExecutionMode mode) const {
  const ExpertLayout& layout = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  auto out = std::make_unique<LoadedExpert>();
  std::unique_ptr<model::LinearOp>* ops[3] = {&out->gate, &out->up, &out->down};
  const uint32_t H = expert_hidden(), I = expert_inner();
  for (size_t p = 0; p < 3; ++p) {
    const auto proj = artifact::kProjections[p];
    const bool down = proj == artifact::Projection::kDown;
    const auto fields = f.subspan(layout.first_field[p], layout.first_field[p + 1] - layout.first_field[p]);
    auto op = codecs_[layout.codec[p]]->make_op(down ? H : I, down ? I : H, fields, mode);
    if (!op.is_ok())
      return op.status().with_context("layer " + std::to_string(layer) + " expert " + std::to_string(expert) + " " +
                                      std::string(artifact::projection_name(proj)));
    *ops[p] = std::move(op).value();
  }
  return out;
}

Result<std::unique_ptr<LoadedExpert>> Artifact::expert_from_bytes(int layer, int expert,
                                                                  std::span<const std::byte> bytes,
                                                                  ExecutionMode mode) const {
  SUBMOE_ASSIGN_OR_RETURN(const ExpertByteRange range, expert_byte_range(layer, expert));
  if (bytes.size() != range.length)
    return corrupt_data("layer " + std::to_string(layer) + " expert " + std::to_string(expert) + ": " +
                        std::to_string(bytes.size()) + " bytes given, its byte range holds " +
                        std::to_string(range.length));
  SUBMOE_RETURN_IF_ERROR(verify_expert(layer, expert, bytes));
  const ExpertLayout& layout = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  std::vector<std::span<const std::byte>> f(layout.fields.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = bytes.subspan(layout.fields[i].offset, layout.fields[i].nbytes);
  return build_expert(layer, expert, f, mode);
}

Result<std::unique_ptr<LoadedExpert>> Artifact::expert_resident(int layer, int expert, ExecutionMode mode) const {
  if (!has_expert(layer, expert))
    return invalid_argument("artifact has no routed expert " + std::to_string(expert) + " in layer " +
                            std::to_string(layer));
  const ExpertLayout& layout = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  SUBMOE_RETURN_IF_ERROR(verify_expert(
      layer, expert,
      {reinterpret_cast<const std::byte*>(layout.fields.front().tensor->data), static_cast<size_t>(layout.range.length)}));
  std::vector<std::span<const std::byte>> f(layout.fields.size());
  for (size_t i = 0; i < f.size(); ++i) {
    const io::TensorView* t = layout.fields[i].tensor;
    f[i] = {reinterpret_cast<const std::byte*>(t->data), static_cast<size_t>(t->nbytes)};
  }
  return build_expert(layer, expert, f, mode);
}

}  // namespace submoe::runtime
