// Copies between untrusted field bytes and typed owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
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

// All of `v` as bytes.
template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  return bytes_of(std::span<const T>(v), v.size());
}

// Field bytes viewed as uint8_t (the codec headers' untrusted-byte type).
inline std::span<const uint8_t> as_u8(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

}  // namespace submoe::runtime::repr
