// Key/value cache of one sequence: per layer, keys and values after RoPE in
// float32, laid out [kv_head][position][head_dim] so that one query head streams
// one contiguous block during attention.
#pragma once

#include <algorithm>
#include <cstddef>

#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::model {

class KvCache {
 public:
  KvCache() = default;
  KvCache(size_t num_layers, size_t num_kv_heads, size_t head_dim)
      : num_layers_(num_layers), num_kv_heads_(num_kv_heads), head_dim_(head_dim) {}

  size_t num_layers() const { return num_layers_; }
  size_t num_kv_heads() const { return num_kv_heads_; }
  size_t head_dim() const { return head_dim_; }
  // Positions already stored (the next token's position).
  size_t length() const { return length_; }
  size_t capacity() const { return capacity_; }

  // Makes room for `positions` positions in total, keeping the stored ones.
  void reserve(size_t positions);
  // Forgets every position (keeps the memory).
  void clear() { length_ = 0; }
  // Drops positions >= new_length (e.g. to rewind a speculative step).
  void truncate(size_t new_length) {
    if (new_length < length_) length_ = new_length;
  }
  // Marks `n` more positions as stored; their rows must have been written with
  // key_row/value_row first. Grows capacity by doubling when needed.
  void ensure_room(size_t n) {
    if (length_ + n > capacity_) reserve(std::max(length_ + n, capacity_ * 2));
  }
  void advance(size_t n) { length_ += n; }

  float* key_row(size_t layer, size_t kv_head, size_t position) {
    return keys_.data() + offset(layer, kv_head, position);
  }
  float* value_row(size_t layer, size_t kv_head, size_t position) {
    return values_.data() + offset(layer, kv_head, position);
  }
  const float* keys(size_t layer, size_t kv_head) const { return keys_.data() + offset(layer, kv_head, 0); }
  const float* values(size_t layer, size_t kv_head) const { return values_.data() + offset(layer, kv_head, 0); }

  size_t bytes() const { return 2 * keys_.size() * sizeof(float); }

 private:
  size_t offset(size_t layer, size_t kv_head, size_t position) const {
    return ((layer * num_kv_heads_ + kv_head) * capacity_ + position) * head_dim_;
  }

  size_t num_layers_ = 0, num_kv_heads_ = 0, head_dim_ = 0;
  size_t length_ = 0, capacity_ = 0;
  AlignedBuffer<float> keys_, values_;
};

}  // namespace submoe::model
