// Copies between untrusted field bytes and typed owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace submoe::runtime::repr {

template <typename T>
std::vector<T> copy_as(std::span<const std::byte> bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// `count` elements of `v` as bytes (zero-filled past v's end).
template <typename T>
std::vector<uint8_t> bytes_of(std::span<const T> v, size_t count) {
  std::vector<uint8_t> out(count * sizeof(T), 0);
  if (!v.empty()) std::memcpy(out.data(), v.data(), std::min(count, v.size()) * sizeof(T));
  return out;
}

}  // namespace submoe::runtime::repr
