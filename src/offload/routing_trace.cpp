#include "submoe/offload/routing_trace.h"

#include "submoe/io/file_util.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace submoe::offload {
namespace {

constexpr char kMagic[8] = {'S', 'U', 'B', 'M', 'O', 'E', 'T', 'R'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kHeaderBytes = 48;

template <typename T>
T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void put_le(std::vector<uint8_t>* out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

}  // namespace

Status RoutingTrace::append_token(const std::vector<ExpertChoice>& choices) {
  if (choices.size() != size_t{num_layers_} * top_k_) {
    return invalid_argument("a trace token needs num_layers * top_k = " + std::to_string(size_t{num_layers_} * top_k_) +
                            " choices, got " + std::to_string(choices.size()));
  }
  for (const auto& c : choices) {
    if (c.expert >= num_experts_) return invalid_argument("expert id " + std::to_string(c.expert) + " out of range");
  }
  choices_.insert(choices_.end(), choices.begin(), choices.end());
  return Status::ok();
}

Status RoutingTrace::save(const std::string& path) const {
  std::vector<uint8_t> bytes(kMagic, kMagic + 8);
  put_le<uint32_t>(&bytes, kVersion);
  put_le<uint32_t>(&bytes, num_layers_);
  put_le<uint32_t>(&bytes, num_experts_);
  put_le<uint32_t>(&bytes, top_k_);
  put_le<uint64_t>(&bytes, num_tokens());
  put_le<uint32_t>(&bytes, kHeaderBytes);
  put_le<uint32_t>(&bytes, 0);
  put_le<uint64_t>(&bytes, 0);
  const auto* raw = reinterpret_cast<const uint8_t*>(choices_.data());
  bytes.insert(bytes.end(), raw, raw + choices_.size() * sizeof(ExpertChoice));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return io_error("cannot create " + tmp);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) return io_error("write failed: " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return io_error("cannot rename " + tmp + " to " + path);
  return Status::ok();
}

Result<RoutingTrace> RoutingTrace::parse(const uint8_t* data, size_t size, const std::string& name) {
  if (size < kHeaderBytes) return corrupt_data(name + ": shorter than the 48-byte trace header");
  if (std::memcmp(data, kMagic, 8) != 0) return corrupt_data(name + ": not a submoe routing trace (bad magic)");
  const uint32_t version = read_le<uint32_t>(data + 8);
  if (version != kVersion) return unsupported(name + ": trace version " + std::to_string(version) + " (expected 1)");
  RoutingTrace t(read_le<uint32_t>(data + 12), read_le<uint32_t>(data + 16), read_le<uint32_t>(data + 20));
  const uint64_t tokens = read_le<uint64_t>(data + 24);
  if (read_le<uint32_t>(data + 32) != kHeaderBytes) return corrupt_data(name + ": unexpected header size");
  // Bounded as config.json's counts are (io/hf_config.h): statistics and
  // simulations allocate layers x experts counters.
  if (t.num_layers_ == 0 || t.num_experts_ == 0 || t.top_k_ == 0 || t.top_k_ > t.num_experts_ ||
      t.num_experts_ > kMaxTraceExperts || t.num_layers_ > kMaxTraceLayers) {
    return corrupt_data(name + ": invalid layers/experts/top_k in header (" + std::to_string(t.num_layers_) + " layers, " +
                        std::to_string(t.num_experts_) + " experts, top-" + std::to_string(t.top_k_) + "; at most " +
                        std::to_string(kMaxTraceLayers) + " layers and " + std::to_string(kMaxTraceExperts) +
                        " experts)");
  }
  const uint64_t per_token = uint64_t{t.num_layers_} * t.top_k_ * sizeof(ExpertChoice);
  if (tokens > (size - kHeaderBytes) / per_token || kHeaderBytes + tokens * per_token != size) {
    return corrupt_data(name + ": size " + std::to_string(size) + " does not match " + std::to_string(tokens) + " tokens");
  }
  t.choices_.resize(tokens * t.num_layers_ * t.top_k_);
  if (tokens > 0) std::memcpy(t.choices_.data(), data + kHeaderBytes, tokens * per_token);
  for (size_t i = 0; i < t.choices_.size(); ++i) {
    if (t.choices_[i].expert >= t.num_experts_) {
      return corrupt_data(name + ": expert id " + std::to_string(t.choices_[i].expert) + " out of range at choice " +
                          std::to_string(i));
    }
  }
  return t;
}

Result<RoutingTrace> RoutingTrace::load(const std::string& path) {
  auto bytes = io::read_file_to_string(path);  // a directory or device is an error, not an exception
  if (!bytes.is_ok()) return bytes.status().with_context("routing trace");
  return parse(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), path);
}

}  // namespace submoe::offload
