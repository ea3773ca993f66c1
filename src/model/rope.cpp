#include "submoe/model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "submoe/io/hf_config.h"

namespace submoe::model {
namespace {

// Dimension index whose wavelength makes `num_rotations` turns over max_pos.
double yarn_correction_dim(double num_rotations, int dim, double base, double max_pos) {
  return (dim * std::log(max_pos / (num_rotations * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
}

// transformers: base ** (arange(0, dim, 2).float() / dim), all in float32.
std::vector<float> base_frequencies(double theta, int dim) {
  std::vector<float> pos_freqs(static_cast<size_t>(dim / 2));
  const float base = static_cast<float>(theta);
  for (int i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    pos_freqs[static_cast<size_t>(i)] = std::pow(base, exponent);
  }
  return pos_freqs;
}

}  // namespace

Result<Rope> Rope::create(const RopeParams& p) {
  if (p.dim <= 0 || p.dim % 2 != 0)
    return invalid_argument("rope: rotary dimension must be positive and even, got " + std::to_string(p.dim));
  if (!(p.theta > 0.0) || !std::isfinite(p.theta))
    return invalid_argument("rope: rope_theta must be positive, got " + std::to_string(p.theta));
  if (!(p.factor > 0.0) || !std::isfinite(p.factor))
    return invalid_argument("rope: scaling factor must be positive, got " + std::to_string(p.factor));

  Rope rope;
  rope.dim_ = p.dim;
  const size_t half = static_cast<size_t>(p.dim / 2);
  const std::vector<float> pos_freqs = base_frequencies(p.theta, p.dim);
  rope.inv_freq_.resize(half);
  for (size_t i = 0; i < half; ++i) rope.inv_freq_[i] = 1.0f / pos_freqs[i];

  if (p.type == "default") {
    // nothing to scale
  } else if (p.type == "linear") {
    const float factor = static_cast<float>(p.factor);
    for (float& f : rope.inv_freq_) f /= factor;
  } else if (p.type == "llama3") {
    if (p.original_max_position_embeddings <= 0)
      return invalid_argument("rope: llama3 scaling needs original_max_position_embeddings");
    if (!(p.high_freq_factor > p.low_freq_factor) || !(p.low_freq_factor > 0.0))
      return invalid_argument("rope: llama3 scaling needs 0 < low_freq_factor < high_freq_factor");
    const double old_len = p.original_max_position_embeddings;
    const double low_wavelen = old_len / p.low_freq_factor;
    const double high_wavelen = old_len / p.high_freq_factor;
    const float factor = static_cast<float>(p.factor);
    for (float& f : rope.inv_freq_) {
      const float wavelen = static_cast<float>(2.0 * std::numbers::pi) / f;
      float scaled = wavelen > low_wavelen ? f / factor : f;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {
        const float smooth = static_cast<float>((old_len / wavelen - p.low_freq_factor) /
                                                (p.high_freq_factor - p.low_freq_factor));
        scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
      }
      f = scaled;
    }
  } else if (p.type == "yarn") {
    const double max_pos = p.original_max_position_embeddings > 0 ? p.original_max_position_embeddings
                                                                   : p.max_position_embeddings;
    if (!(max_pos > 0)) return invalid_argument("rope: yarn scaling needs original_max_position_embeddings");
    double attention_factor;
    if (p.attention_factor) {
      attention_factor = *p.attention_factor;
    } else if (p.mscale && p.mscale_all_dim) {
      attention_factor = io::yarn_get_mscale(p.factor, *p.mscale) / io::yarn_get_mscale(p.factor, *p.mscale_all_dim);
    } else {
      attention_factor = io::yarn_get_mscale(p.factor, 1.0);
    }
    rope.attention_scaling_ = static_cast<float>(attention_factor);
    double low = yarn_correction_dim(p.beta_fast, p.dim, p.theta, max_pos);
    double high = yarn_correction_dim(p.beta_slow, p.dim, p.theta, max_pos);
    if (p.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(p.dim - 1));
    if (low == high) high += 0.001;
    const float lo = static_cast<float>(low);
    const float span = static_cast<float>(high - low);
    const float factor = static_cast<float>(p.factor);
    for (size_t i = 0; i < half; ++i) {
      const float ramp = std::clamp((static_cast<float>(i) - lo) / span, 0.0f, 1.0f);
      const float extrapolation_factor = 1.0f - ramp;
      const float interpolation = 1.0f / (factor * pos_freqs[i]);
      const float extrapolation = 1.0f / pos_freqs[i];
      rope.inv_freq_[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
  } else {
    return unsupported("rope: scaling type '" + p.type +
                       "' is not supported (supported: default, linear, llama3, yarn)");
  }
  return rope;
}

void Rope::angles(size_t position, float* cos_out, float* sin_out) const {
  const float pos = static_cast<float>(position);
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    const float a = pos * inv_freq_[i];
    cos_out[i] = std::cos(a) * attention_scaling_;
    sin_out[i] = std::sin(a) * attention_scaling_;
  }
}

void Rope::rotate(float* x, size_t num_heads, size_t head_stride, int dim, const float* cos_half,
                  const float* sin_half) {
  const size_t half = static_cast<size_t>(dim / 2);
  for (size_t h = 0; h < num_heads; ++h) {
    float* x1 = x + h * head_stride;
    float* x2 = x1 + half;
    for (size_t i = 0; i < half; ++i) {
      const float a = x1[i], b = x2[i];
      x1[i] = a * cos_half[i] - b * sin_half[i];
      x2[i] = b * cos_half[i] + a * sin_half[i];
    }
  }
}

void Rope::rotate_interleaved(float* x, size_t num_heads, size_t head_stride, int dim, const float* cos_half,
                              const float* sin_half) {
  const size_t half = static_cast<size_t>(dim / 2);
  for (size_t h = 0; h < num_heads; ++h) {
    float* p = x + h * head_stride;
    for (size_t i = 0; i < half; ++i) {
      const float a = p[2 * i], b = p[2 * i + 1];
      p[2 * i] = a * cos_half[i] - b * sin_half[i];
      p[2 * i + 1] = b * cos_half[i] + a * sin_half[i];
    }
  }
}

}  // namespace submoe::model
