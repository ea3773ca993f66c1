// Routing traces: every token's chosen experts and routing weights per layer.
// File format (little-endian), version 1 — see docs/trace-format.md:
//   0  char[8] magic "SUBMOETR"
//   8  u32 version (1)          12 u32 num_layers      16 u32 num_experts
//   20 u32 top_k                24 u64 num_tokens      32 u32 header_bytes (48)
//   36 u32 reserved (0)         40 u64 reserved (0)
//   48 records, token-major: for each token, for each layer, top_k choices of
//      {u16 expert id, u16 routing weight as bf16}, in router order.
// Size = 48 + num_tokens * num_layers * top_k * 4 bytes, checked on read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/core/status.h"

namespace submoe::offload {

struct ExpertChoice {
  uint16_t expert;
  bf16_t weight;
};
static_assert(sizeof(ExpertChoice) == 4);

// Header bounds a reader accepts (config.json's are 4096 layers; experts
// are stored as uint16).
inline constexpr uint32_t kMaxTraceLayers = 4096;
inline constexpr uint32_t kMaxTraceExperts = 65536;

class RoutingTrace {
 public:
  RoutingTrace() = default;
  RoutingTrace(uint32_t num_layers, uint32_t num_experts, uint32_t top_k)
      : num_layers_(num_layers), num_experts_(num_experts), top_k_(top_k) {}

  uint32_t num_layers() const { return num_layers_; }
  uint32_t num_experts() const { return num_experts_; }
  uint32_t top_k() const { return top_k_; }
  uint64_t num_tokens() const {
    const uint64_t per_token = uint64_t{num_layers_} * top_k_;
    return per_token == 0 ? 0 : choices_.size() / per_token;
  }

  // Appends one token: choices holds num_layers * top_k entries, layer-major.
  Status append_token(const std::vector<ExpertChoice>& choices);
  const ExpertChoice* token_layer(uint64_t token, uint32_t layer) const {
    return choices_.data() + (token * num_layers_ + layer) * top_k_;
  }

  // Writes atomically (temporary file + rename).
  Status save(const std::string& path) const;
  static Result<RoutingTrace> load(const std::string& path);
  static Result<RoutingTrace> parse(const uint8_t* data, size_t size, const std::string& name);

 private:
  uint32_t num_layers_ = 0;
  uint32_t num_experts_ = 0;
  uint32_t top_k_ = 0;
  std::vector<ExpertChoice> choices_;
};

}  // namespace submoe::offload
