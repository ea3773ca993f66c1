#include "submoe/model/kv_cache.h"

#include <cstring>

namespace submoe::model {

KvCache::KvCache(std::vector<KvLayerShape> layers) : layers_(std::move(layers)) {
  for (const KvLayerShape& s : layers_) {
    key_base_.push_back(key_floats_);
    value_base_.push_back(value_floats_);
    key_floats_ += s.heads * s.key_dim;
    value_floats_ += s.heads * s.value_dim;
  }
}

void KvCache::reserve(size_t positions) {
  if (positions <= capacity_) return;
  AlignedBuffer<float> keys(key_floats_ * positions, /*zero=*/false);
  AlignedBuffer<float> values(value_floats_ * positions, /*zero=*/false);
  // Re-layout: each (layer, head) block moves to its new stride.
  for (size_t l = 0; l < layers_.size() && length_ > 0; ++l) {
    const KvLayerShape& s = layers_[l];
    for (size_t h = 0; h < s.heads; ++h) {
      if (s.key_dim > 0)
        std::memcpy(keys.data() + key_base_[l] * positions + h * positions * s.key_dim,
                    keys_.data() + key_offset(l, h, 0), length_ * s.key_dim * sizeof(float));
      if (s.value_dim > 0)
        std::memcpy(values.data() + value_base_[l] * positions + h * positions * s.value_dim,
                    values_.data() + value_offset(l, h, 0), length_ * s.value_dim * sizeof(float));
    }
  }
  keys_ = std::move(keys);
  values_ = std::move(values);
  capacity_ = positions;
}

}  // namespace submoe::model
