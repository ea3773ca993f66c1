// SafetensorsWriter: header + data, written atomically.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// The reference writer sorts by its dtype enum in descending order, then by
// name; this is that enum's order (which also sorts by element size).
int reference_rank(DType d) {
  switch (d) {
    case DType::kBool: return 0;
    case DType::kU8: return 1;
    case DType::kI8: return 2;
    case DType::kF8E5M2: return 3;
    case DType::kF8E4M3: return 4;
    case DType::kI16: return 5;
    case DType::kU16: return 6;
    case DType::kF16: return 7;
    case DType::kBF16: return 8;
    case DType::kI32: return 9;
    case DType::kU32: return 10;
    case DType::kF32: return 11;
    case DType::kF64: return 12;
    case DType::kI64: return 13;
    case DType::kU64: return 14;
  }
  return 0;
}

}  // namespace

Status SafetensorsWriter::check_new(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                    uint64_t* nbytes) const {
  if (name.empty()) return invalid_argument("tensor name is empty");
  if (name == "__metadata__") return invalid_argument("tensor name '__metadata__' is reserved");
  if (names_.count(name)) return invalid_argument("tensor '" + name + "' added twice");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument("tensor '" + name + "': negative dimension " + std::to_string(d));
    const uint64_t u = static_cast<uint64_t>(d);
    if (u != 0 && numel > std::numeric_limits<uint64_t>::max() / u)
      return invalid_argument("tensor '" + name + "': shape overflows");
    numel *= u;
  }
  const uint64_t esize = dtype_size(dtype);
  if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      numel > std::numeric_limits<uint64_t>::max() / esize)
    return invalid_argument("tensor '" + name + "': shape overflows");
  *nbytes = numel * esize;
  return Status::ok();
}

Status SafetensorsWriter::add(std::string name, DType dtype, std::vector<int64_t> shape,
                              std::span<const uint8_t> data) {
  uint64_t nbytes = 0;
  SUBMOE_RETURN_IF_ERROR(check_new(name, dtype, shape, &nbytes));
  if (data.size() != nbytes)
    return invalid_argument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, shape needs " +
                            std::to_string(nbytes));
  Entry e{name, dtype, std::move(shape), nbytes, std::vector<uint8_t>(data.begin(), data.end()), {}, nullptr};
  names_.emplace(std::move(name), entries_.size());
  entries_.push_back(std::move(e));
  return Status::ok();
}

Status SafetensorsWriter::add_borrowed(std::string name, DType dtype, std::vector<int64_t> shape,
                                       std::span<const uint8_t> data) {
  uint64_t nbytes = 0;
  SUBMOE_RETURN_IF_ERROR(check_new(name, dtype, shape, &nbytes));
  if (data.size() != nbytes)
    return invalid_argument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, shape needs " +
                            std::to_string(nbytes));
  Entry e{name, dtype, std::move(shape), nbytes, {}, data, nullptr};
  names_.emplace(std::move(name), entries_.size());
  entries_.push_back(std::move(e));
  return Status::ok();
}

Status SafetensorsWriter::add_generated(std::string name, DType dtype, std::vector<int64_t> shape, FillFn fill) {
  if (!fill) return invalid_argument("tensor '" + name + "': no fill function");
  uint64_t nbytes = 0;
  SUBMOE_RETURN_IF_ERROR(check_new(name, dtype, shape, &nbytes));
  Entry e{name, dtype, std::move(shape), nbytes, {}, {}, std::move(fill)};
  names_.emplace(std::move(name), entries_.size());
  entries_.push_back(std::move(e));
  return Status::ok();
}

Status SafetensorsWriter::add_generated_chunked(std::string name, DType dtype, std::vector<int64_t> shape,
                                                ChunkFillFn fill) {
  if (!fill) return invalid_argument("tensor '" + name + "': no fill function");
  uint64_t nbytes = 0;
  SUBMOE_RETURN_IF_ERROR(check_new(name, dtype, shape, &nbytes));
  Entry e{name, dtype, std::move(shape), nbytes, {}, {}, nullptr, std::move(fill)};
  names_.emplace(std::move(name), entries_.size());
  entries_.push_back(std::move(e));
  return Status::ok();
}

Status SafetensorsWriter::add_f32(std::string name, std::vector<int64_t> shape, std::span<const float> data) {
  return add(std::move(name), DType::kF32, std::move(shape),
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()));
}

Status SafetensorsWriter::add_bf16(std::string name, std::vector<int64_t> shape, std::span<const bf16_t> data) {
  return add(std::move(name), DType::kBF16, std::move(shape),
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()));
}

Status SafetensorsWriter::write(const std::string& path, const Options& options) const {
  std::vector<size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (options.order == Order::kReference) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const int ra = reference_rank(entries_[a].dtype), rb = reference_rank(entries_[b].dtype);
      return ra != rb ? ra > rb : entries_[a].name < entries_[b].name;
    });
  }

  // ordered_json keeps __metadata__ first and the tensors in data order, so the
  // header reads in the same order as the bytes.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const Entry& e = entries_[i];
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    t["dtype"] = std::string(dtype_name(e.dtype));
    t["shape"] = e.shape;
    t["data_offsets"] = {offset, offset + e.nbytes};
    header[e.name] = std::move(t);
    offset += e.nbytes;
  }
  std::string text;
  try {
    // Invalid UTF-8 in a name throws; the format requires a UTF-8 header.
    text = header.dump();
  } catch (const nlohmann::json::exception& ex) {
    return invalid_argument(path + ": cannot encode header: " + ex.what());
  }
  // Pad with spaces so the data section starts 8-aligned, as the reference does.
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes)
    return invalid_argument(path + ": header of " + std::to_string(text.size()) + " bytes exceeds the format limit");

  SUBMOE_ASSIGN_OR_RETURN(auto out, AtomicFileWriter::create(path, options.fsync));
  const uint64_t header_len = text.size();
  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(header_len >> (8 * i));
  SUBMOE_RETURN_IF_ERROR(out->write(std::span<const uint8_t>(len_bytes, 8)));
  SUBMOE_RETURN_IF_ERROR(out->write(std::string_view(text)));
  std::vector<uint8_t> scratch;
  for (size_t i : order) {
    const Entry& e = entries_[i];
    if (e.fill) {
      scratch.assign(e.nbytes, 0);
      Status s = e.fill(std::span<uint8_t>(scratch));
      if (!s.is_ok()) return s.with_context(path + ": tensor '" + e.name + "'");
      SUBMOE_RETURN_IF_ERROR(out->write(std::span<const uint8_t>(scratch)));
    } else if (e.chunk_fill) {
      const uint64_t esize = dtype_size(e.dtype);
      const uint64_t chunk = std::max(esize, kFillChunkBytes / esize * esize);
      for (uint64_t at = 0; at < e.nbytes; at += chunk) {
        const uint64_t n = std::min(chunk, e.nbytes - at);
        scratch.assign(n, 0);
        Status s = e.chunk_fill(at, std::span<uint8_t>(scratch));
        if (!s.is_ok()) return s.with_context(path + ": tensor '" + e.name + "'");
        SUBMOE_RETURN_IF_ERROR(out->write(std::span<const uint8_t>(scratch)));
      }
    } else if (!e.owned.empty()) {
      SUBMOE_RETURN_IF_ERROR(out->write(std::span<const uint8_t>(e.owned)));
    } else {
      SUBMOE_RETURN_IF_ERROR(out->write(e.borrowed));
    }
  }
  return out->commit();
}

Status write_safetensors_index(const std::string& path, uint64_t total_size,
                               const std::map<std::string, std::string>& weight_map) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["metadata"] = {{"total_size", total_size}};
  nlohmann::ordered_json wm = nlohmann::ordered_json::object();
  for (const auto& [tensor, shard] : weight_map) wm[tensor] = shard;
  j["weight_map"] = std::move(wm);
  std::string text;
  try {
    text = j.dump(2);
  } catch (const nlohmann::json::exception& ex) {
    return invalid_argument(path + ": cannot encode index: " + ex.what());
  }
  text += "\n";
  return write_file_atomic(path, text);
}

}  // namespace submoe::io
