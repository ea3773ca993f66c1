#include "layer_packer.h"

namespace submoe::calib::detail {

LayerPacker::LayerPacker(std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs,
                         std::vector<std::vector<uint32_t>> records)
    : codecs_(std::move(codecs)), records_(std::move(records)) {}

Result<std::vector<PackedTensor>> LayerPacker::pack(int layer, int expert, artifact::Projection proj,
                                                    const runtime::MatrixEncoder& encoder) const {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<PackedTensor> out, encoder.pack());
  const auto specs = codec(static_cast<size_t>(layer), static_cast<size_t>(expert), proj)
                         .fields(static_cast<uint32_t>(encoder.rows()), static_cast<uint32_t>(encoder.cols()));
  if (out.size() != specs.size())
    return internal_error("encoder packed " + std::to_string(out.size()) + " fields, its codec declares " +
                          std::to_string(specs.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].name != specs[i].name)
      return internal_error("encoder field '" + out[i].name + "' where its codec declares '" + specs[i].name + "'");
    out[i].name = artifact::expert_tensor_name(layer, expert, proj, out[i].name);
  }
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
