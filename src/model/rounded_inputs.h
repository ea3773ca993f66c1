// The input rounding of the fused ops' execution modes, for ops whose kernels
// take f32 activations only (nf4, squeezellm): bf16 rounding (as a bf16
// checkpoint's expert sees its input) or the int8 quantization s q per token
// (the product itself then stays in float).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::model {

// `nb` tokens of `cols` inputs at x, as the mode rounds them: x itself when
// it does not, else a per-thread buffer.
inline const float* rounded_inputs(const float* x, uint32_t nb, size_t cols, kernels::ActivationType activations,
                                   kernels::ActivationQuant quant) {
  if (quant != kernels::ActivationQuant::kInt8 && activations != kernels::ActivationType::kBF16) return x;
  thread_local std::vector<float> rounded;
  rounded.resize(nb * cols);
  if (quant == kernels::ActivationQuant::kInt8) {
    thread_local std::vector<int8_t> q;
    q.resize(cols);
    const auto view = kernels::ActivationsView::f32(x, nb, cols);
    for (uint32_t t = 0; t < nb; ++t) {
      const float s = kernels::quantize_activations_int8_fast(view, t, static_cast<uint32_t>(cols), q.data());
      for (size_t c = 0; c < cols; ++c) rounded[t * cols + c] = s * static_cast<float>(q[c]);
    }
  } else {
    for (size_t i = 0; i < nb * cols; ++i) rounded[i] = bf16_to_float(float_to_bf16(x[i]));
  }
  return rounded.data();
}

// ", int8 activations" / ", bf16 activations" / "" for describe().
inline const char* rounding_note(kernels::ActivationType activations, kernels::ActivationQuant quant) {
  return quant == kernels::ActivationQuant::kInt8            ? ", int8 activations"
         : activations == kernels::ActivationType::kBF16 ? ", bf16 activations"
                                                            : "";
}

}  // namespace submoe::model
