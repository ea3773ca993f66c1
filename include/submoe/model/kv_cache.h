// Key/value cache of one sequence. Each layer has its own shape: `heads` rows of
// keys `key_dim` wide and values `value_dim` wide per position, in float32, laid
// out [head][position][dim] so that one query head streams one contiguous block
// during attention. GQA layers store keys and values after RoPE (key_dim =
// value_dim = head_dim); a latent layer (MLA) stores one row per position, the
// compressed latent plus its RoPE key, with value_dim 0 (values are derived from
// the latent). Memory per token is bytes_per_position().
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe::model {

struct KvLayerShape {
  size_t heads = 0;
  size_t key_dim = 0;
  size_t value_dim = 0;
  bool operator==(const KvLayerShape&) const = default;
};

class KvCache {
 public:
  KvCache() = default;
  explicit KvCache(std::vector<KvLayerShape> layers);
  // Every layer the same GQA shape: num_kv_heads heads of head_dim keys and values.
  KvCache(size_t num_layers, size_t num_kv_heads, size_t head_dim)
      : KvCache(std::vector<KvLayerShape>(num_layers, KvLayerShape{num_kv_heads, head_dim, head_dim})) {}

  size_t num_layers() const { return layers_.size(); }
  const KvLayerShape& layer_shape(size_t layer) const { return layers_[layer]; }
  // Positions already stored (the next token's position).
  size_t length() const { return length_; }
  size_t capacity() const { return capacity_; }
  // Bytes one position takes over all layers (keys and values).
  size_t bytes_per_position() const { return (key_floats_ + value_floats_) * sizeof(float); }

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

  float* key_row(size_t layer, size_t head, size_t position) {
    return keys_.data() + key_offset(layer, head, position);
  }
  float* value_row(size_t layer, size_t head, size_t position) {
    return values_.data() + value_offset(layer, head, position);
  }
  const float* keys(size_t layer, size_t head) const { return keys_.data() + key_offset(layer, head, 0); }
  const float* values(size_t layer, size_t head) const { return values_.data() + value_offset(layer, head, 0); }

  // Bytes allocated (capacity positions).
  size_t bytes() const { return (keys_.size() + values_.size()) * sizeof(float); }

 private:
  // Floats before `layer` per position of capacity: layer l's block starts at
  // base[l] * capacity and holds heads x capacity x dim.
  size_t key_offset(size_t layer, size_t head, size_t position) const {
    return key_base_[layer] * capacity_ + (head * capacity_ + position) * layers_[layer].key_dim;
  }
  size_t value_offset(size_t layer, size_t head, size_t position) const {
    return value_base_[layer] * capacity_ + (head * capacity_ + position) * layers_[layer].value_dim;
  }

  std::vector<KvLayerShape> layers_;
  std::vector<size_t> key_base_, value_base_;  // per layer: floats per position before it
  size_t key_floats_ = 0, value_floats_ = 0;   // floats per position, all layers
  size_t length_ = 0, capacity_ = 0;
  AlignedBuffer<float> keys_, values_;
};

}  // namespace submoe::model
