#include "layer_packer.h"

#include <cstring>

#include "submoe/codec/int_packed.h"
#include "submoe/codec/ternary_packed.h"

namespace submoe::calib::detail {
namespace {

template <typename T>
std::vector<uint8_t> bytes_of(std::span<const T> v, size_t count) {
  std::vector<uint8_t> out(count * sizeof(T), 0);
  std::memcpy(out.data(), v.data(), std::min(count, v.size()) * sizeof(T));
  return out;
}

}  // namespace

std::vector<uint8_t> dictionary_tensor_bytes(const ternary::TernaryDictionary& dict) {
  std::vector<uint8_t> out(ternary::kDictEntries * 8);
  const ternary::DictEntry* e = dict.entries();
  for (size_t i = 0; i < ternary::kDictEntries; ++i) {
    const uint64_t v = uint64_t{e[i].word[0]} | (uint64_t{e[i].word[1]} << 32);
    for (int b = 0; b < 8; ++b) out[i * 8 + static_cast<size_t>(b)] = static_cast<uint8_t>(v >> (8 * b));
  }
  return out;
}

Result<std::unique_ptr<LayerPacker>> LayerPacker::create(const CompressOptions& options) {
  std::unique_ptr<LayerPacker> p(new LayerPacker());
  p->grid_ = options.grid;
  if (options.grid.kind == quant::GridKind::kTernary) {
    ternary::DictKind kind;
    if (!ternary::parse_dict_kind(options.code, &kind))
      return invalid_argument("unknown dictionary code '" + options.code + "' (qmoe or tunstall)");
    SUBMOE_ASSIGN_OR_RETURN(ternary::TernaryDictionary dict, ternary::build_dictionary(kind, options.dict_p0));
    p->dict_.emplace(std::move(dict));
  }
  return p;
}

Result<std::vector<PackedTensor>> LayerPacker::pack(int layer, int expert, artifact::Projection proj,
                                                    const quant::QuantizedMatrix& q) const {
  using artifact::expert_tensor_name;
  const auto rows = static_cast<uint32_t>(q.rows), cols = static_cast<uint32_t>(q.cols);
  std::vector<PackedTensor> out;
  if (q.grid.kind == quant::GridKind::kTernary) {
    SUBMOE_ASSIGN_OR_RETURN(ternary::PackedTernaryMatrix m,
                            ternary::encode_ternary(q.codes, rows, cols, q.ternary_scales, *dict_));
    const size_t codes = m.num_codes() + (m.num_codes() % 2);  // even: keeps the next tensor 4-byte aligned
    out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldRowOffsets), io::DType::kI32,
                   {static_cast<int64_t>(rows) + 1}, bytes_of(m.row_offsets(), rows + 1)});
    out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldScales), io::DType::kBF16,
                   {static_cast<int64_t>(rows), 2}, bytes_of(m.scales(), rows)});
    out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldCodes), io::DType::kU16,
                   {static_cast<int64_t>(codes)}, bytes_of(m.codes(), codes)});
    return out;
  }
  SUBMOE_ASSIGN_OR_RETURN(intn::PackedIntMatrix m,
                          intn::pack_int_codes(q.codes, rows, cols, static_cast<uint32_t>(q.grid.bits),
                                               static_cast<uint32_t>(q.grid.group_size), q.scales, q.zeros));
  const auto groups = static_cast<int64_t>(m.view().groups());
  out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldQweight), io::DType::kU8,
                 {static_cast<int64_t>(rows), static_cast<int64_t>(m.row_bytes())},
                 bytes_of(m.qweight(), m.qweight().size())});
  out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldScales), io::DType::kF16,
                 {static_cast<int64_t>(rows), groups}, bytes_of(m.scales(), m.scales().size())});
  out.push_back({expert_tensor_name(layer, expert, proj, artifact::kFieldZeros), io::DType::kU8,
                 {static_cast<int64_t>(rows), groups}, bytes_of(m.zeros(), m.zeros().size())});
  return out;
}

void LayerPacker::append(std::vector<PackedTensor> tensors) {
  for (auto& t : tensors) {
    bytes_ += t.bytes.size();
    tensors_.push_back(std::move(t));
  }
}

Status LayerPacker::write_and_clear(const std::string& path, const std::map<std::string, std::string>& metadata) {
  io::SafetensorsWriter w;
  for (const PackedTensor& t : tensors_) SUBMOE_RETURN_IF_ERROR(w.add_borrowed(t.name, t.dtype, t.shape, t.bytes));
  for (const auto& [k, v] : metadata) w.set_metadata(k, v);
  SUBMOE_RETURN_IF_ERROR(w.write(path));
  tensors_.clear();
  bytes_ = 0;
  return Status::ok();
}

}  // namespace submoe::calib::detail
