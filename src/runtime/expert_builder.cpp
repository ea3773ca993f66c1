// Building one expert's LinearOps from its packed fields, from a fetched byte
// range or from the mapped tensors. The bytes are untrusted in both cases:
// every field is copied into aligned owned memory and validated by the codec
// (validate_packed / validate_packed_int) before a kernel may see it.
#include <cstring>

#include "submoe/codec/int_packed.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime {
namespace {

using Fields = std::array<std::span<const std::byte>, 3>;

template <typename T>
std::vector<T> copy_as(std::span<const std::byte> bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

Result<std::unique_ptr<model::LinearOp>> ternary_projection(uint32_t rows, uint32_t cols, const Fields& f,
                                                            const std::shared_ptr<const TernaryCodebook>& codebook,
                                                            ExecutionMode mode) {
  const std::vector<int32_t> offsets = copy_as<int32_t>(f[0]);
  const std::vector<ternary::RowScales> scales = copy_as<ternary::RowScales>(f[1]);
  const std::vector<uint16_t> codes = copy_as<uint16_t>(f[2]);
  if (offsets.size() != static_cast<size_t>(rows) + 1 || scales.size() != rows)
    return corrupt_data("row_offsets / scales sizes do not match " + std::to_string(rows) + " rows");
  const int64_t used = offsets[rows];
  if (used < 0 || static_cast<uint64_t>(used) > codes.size())
    return corrupt_data("row_offsets[" + std::to_string(rows) + "] = " + std::to_string(used) +
                        " but the codes tensor holds " + std::to_string(codes.size()) + " codewords");
  for (size_t i = static_cast<size_t>(used); i < codes.size(); ++i)
    if (codes[i] != 0) return corrupt_data("codes: padding codeword " + std::to_string(i) + " past row_offsets[" +
                                           std::to_string(rows) + "] is not zero");
  SUBMOE_ASSIGN_OR_RETURN(
      ternary::PackedTernaryMatrix m,
      ternary::PackedTernaryMatrix::from_parts(rows, cols, std::span<const uint16_t>(codes).first(static_cast<size_t>(used)),
                                               offsets, scales, codebook->entries(),
                                               // validated once, when the artifact was opened
                                               ternary::PackedTernaryMatrix::DictCheck::kTrusted));
  if (mode != ExecutionMode::kReferenceDecode) {
    return make_ternary_dict_linear(std::move(m), codebook, kernels::best_ternary_gemv_kernels(),
                                    execution_activations(mode), execution_quant(mode));
  }
  SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, ternary::decode_to_float(m.view()));
  return make_reference_decoded_linear(std::move(w), rows, cols, artifact::kReprTernaryDict.data());
}

Result<std::unique_ptr<model::LinearOp>> int_projection(uint32_t rows, uint32_t cols, const Fields& f,
                                                        const QuantizationConfig& q, ExecutionMode mode) {
  const auto* qweight = reinterpret_cast<const uint8_t*>(f[0].data());
  const std::vector<uint16_t> scales = copy_as<uint16_t>(f[1]);
  const auto* zeros = reinterpret_cast<const uint8_t*>(f[2].data());
  SUBMOE_ASSIGN_OR_RETURN(intn::PackedIntMatrix m,
                          intn::PackedIntMatrix::from_parts(rows, cols, q.bits, q.group_size, {qweight, f[0].size()},
                                                            scales, {zeros, f[2].size()}));
  if (mode != ExecutionMode::kReferenceDecode) {
    return make_int_linear(std::move(m), kernels::best_int_gemv_kernels(), execution_activations(mode),
                           execution_quant(mode));
  }
  SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, intn::decode_int_to_float(m.view()));
  return make_reference_decoded_linear(std::move(w), rows, cols, "int" + std::to_string(q.bits));
}

}  // namespace

Result<std::unique_ptr<LoadedExpert>> Artifact::build_expert(
    int layer, int expert, const std::array<std::span<const std::byte>, kFieldsPerExpert>& f,
    ExecutionMode mode) const {
  auto out = std::make_unique<LoadedExpert>();
  std::unique_ptr<model::LinearOp>* ops[3] = {&out->gate, &out->up, &out->down};
  const uint32_t H = expert_hidden(), I = expert_inner();
  for (size_t p = 0; p < 3; ++p) {
    const auto proj = artifact::kProjections[p];
    const bool down = proj == artifact::Projection::kDown;
    const Fields fields = {f[3 * p], f[3 * p + 1], f[3 * p + 2]};
    auto op = quant_.representation == ExpertRepresentation::kTernaryDict
                  ? ternary_projection(down ? H : I, down ? I : H, fields, codebook_, mode)
                  : int_projection(down ? H : I, down ? I : H, fields, quant_, mode);
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
  const ExpertLayout& layout = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  std::array<std::span<const std::byte>, kFieldsPerExpert> f;
  for (size_t i = 0; i < kFieldsPerExpert; ++i) f[i] = bytes.subspan(layout.fields[i].offset, layout.fields[i].nbytes);
  return build_expert(layer, expert, f, mode);
}

Result<std::unique_ptr<LoadedExpert>> Artifact::expert_resident(int layer, int expert, ExecutionMode mode) const {
  if (!has_expert(layer, expert))
    return invalid_argument("artifact has no routed expert " + std::to_string(expert) + " in layer " +
                            std::to_string(layer));
  const ExpertLayout& layout = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  std::array<std::span<const std::byte>, kFieldsPerExpert> f;
  for (size_t i = 0; i < kFieldsPerExpert; ++i) {
    const io::TensorView* t = layout.fields[i].tensor;
    f[i] = {reinterpret_cast<const std::byte*>(t->data), static_cast<size_t>(t->nbytes)};
  }
  return build_expert(layer, expert, f, mode);
}

}  // namespace submoe::runtime
