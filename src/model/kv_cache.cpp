#include "submoe/model/kv_cache.h"

#include <cstring>

namespace submoe::model {

void KvCache::reserve(size_t positions) {
  if (positions <= capacity_) return;
  const size_t rows = num_layers_ * num_kv_heads_;
  AlignedBuffer<float> keys(rows * positions * head_dim_, /*zero=*/false);
  AlignedBuffer<float> values(rows * positions * head_dim_, /*zero=*/false);
  // Re-layout: each (layer, head) block moves to its new stride.
  for (size_t r = 0; r < rows && length_ > 0; ++r) {
    std::memcpy(keys.data() + r * positions * head_dim_, keys_.data() + r * capacity_ * head_dim_,
                length_ * head_dim_ * sizeof(float));
    std::memcpy(values.data() + r * positions * head_dim_, values_.data() + r * capacity_ * head_dim_,
                length_ * head_dim_ * sizeof(float));
  }
  keys_ = std::move(keys);
  values_ = std::move(values);
  capacity_ = positions;
}

}  // namespace submoe::model
