// The identity of one routed expert, (layer, expert): the key of the expert
// store, the cache and the prefetcher.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace submoe::offload {

struct ExpertKey {
  int32_t layer = 0;
  int32_t expert = 0;
  friend auto operator<=>(const ExpertKey&, const ExpertKey&) = default;
};

struct ExpertKeyHash {
  size_t operator()(ExpertKey k) const {
    const uint64_t packed = (uint64_t{static_cast<uint32_t>(k.layer)} << 32) | static_cast<uint32_t>(k.expert);
    return std::hash<uint64_t>{}(packed);
  }
};

// "layer 3 expert 17"
inline std::string to_string(ExpertKey k) {
  return "layer " + std::to_string(k.layer) + " expert " + std::to_string(k.expert);
}

}  // namespace submoe::offload
