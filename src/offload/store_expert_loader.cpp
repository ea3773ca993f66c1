#include <vector>

#include "submoe/offload/expert_source.h"

namespace submoe::offload {

std::vector<uint64_t> expert_charges(const ExpertSource& source) {
  std::vector<uint64_t> out;
  for (int l = 0; l < source.num_layers(); ++l)
    for (int e = 0; e < source.num_experts(); ++e) {
      Result<ByteRange> r = source.byte_range(ExpertKey{l, e});
      if (r.is_ok()) out.push_back(source.estimate_resident_bytes(ExpertKey{l, e}, *r));
    }
  return out;
}

uint64_t StoreExpertLoader::estimate_charge(ExpertKey key) const {
  Result<ByteRange> r = source_->byte_range(key);
  return r.is_ok() ? source_->estimate_resident_bytes(key, *r) : 0;
}

Status StoreExpertLoader::load(std::span<const ExpertKey> keys, std::span<LoadedExpert> out) {
  if (keys.size() != out.size())
    return invalid_argument("expert loader: " + std::to_string(keys.size()) + " keys but " + std::to_string(out.size()) +
                            " outputs");
  std::vector<ByteRange> ranges(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<ByteRange> r = source_->byte_range(keys[i]);
    if (!r.is_ok()) return r.status().with_context(to_string(keys[i]));
    ranges[i] = *r;
  }
  std::vector<IoBuffer> buffers(keys.size());
  SUBMOE_RETURN_IF_ERROR(store_->read_batch(ranges, buffers));
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<std::unique_ptr<ExpertObject>> decoded = source_->decode(keys[i], std::move(buffers[i]));
    if (!decoded.is_ok())
      return decoded.status().with_context("decoding " + to_string(keys[i]) + " from '" + store_->path() + "' at offset " +
                                           std::to_string(ranges[i].offset));
    std::shared_ptr<const ExpertObject> object = std::move(decoded).value();
    out[i].charge_bytes = object->resident_bytes();
    out[i].bytes_read = ranges[i].length;
    out[i].object = std::move(object);
  }
  return Status::ok();
}

}  // namespace submoe::offload
