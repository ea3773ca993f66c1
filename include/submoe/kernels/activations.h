// Activation and output views shared by the dense and the compressed kernels.
//
// A batch of B tokens: token t's `cols` activations start at
// data + t * stride elements (stride >= cols). Outputs are f32, token t's `rows`
// results at data + t * stride floats. This is the LinearOp layout ([n, features]
// row-major) with an explicit stride so callers can point into larger buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/bf16.h"

namespace submoe::kernels {

enum class ActivationType : uint8_t { kF32 = 0, kBF16 = 1 };
const char* activation_type_name(ActivationType t);

struct ActivationsView {
  const void* data = nullptr;
  ActivationType type = ActivationType::kF32;
  uint32_t batch = 1;
  size_t stride = 0;  // elements between tokens

  static ActivationsView f32(const float* x, uint32_t batch, size_t stride) {
    return {x, ActivationType::kF32, batch, stride};
  }
  static ActivationsView bf16(const bf16_t* x, uint32_t batch, size_t stride) {
    return {x, ActivationType::kBF16, batch, stride};
  }
};

struct OutputView {
  float* data = nullptr;
  size_t stride = 0;  // floats between tokens
};

// What the compressed kernels (gemm_ternary_dict, gemm_int) multiply by.
//   kExact: the activations as given (f32, or bf16 read exactly).
//   kInt8:  each token quantized to int8 with one symmetric scale first (what
//           llama.cpp does for its quantized types, there per block of 32 or
//           256): m = max_c |x_c|, q_c = round-to-nearest-even(x_c * (127 / m)),
//           s = m / 127, and the product is W (s q). Ternary's batch-1 kernel
//           with VBMI + VNNI and the int kernels' int8 paths (2 and 4 bits,
//           batch <= kIntI8MaxBatch) sum code * q exactly in int32 and scale
//           once per row or group; every other kernel sums s q_c in f32.
//           Against the exact activations, a ternary row errs by at most
//           (s / 2) (|w_max| n_max + |w_min| n_min) + float rounding, n_max and
//           n_min the row's w_max and w_min counts (any row: (s / 2) sum |w|).
//           A per-token scale cannot follow per-block outliers: an activation
//           vector with one huge entry loses the small ones.
enum class ActivationQuant : uint8_t { kExact = 0, kInt8 = 1 };
const char* activation_quant_name(ActivationQuant q);

// The kInt8 quantization of one token's n activations (see ActivationQuant):
// writes q[0..n) and returns s. All-zero input gives s = 0 and q = 0.
float quantize_activations_int8(const ActivationsView& x, uint32_t token, uint32_t n, int8_t* q);
// The same q and s through this CPU's vector quantizer (AVX-512 with VBMI and
// VNNI, or AVX2) for f32 input; quantize_activations_int8 otherwise.
float quantize_activations_int8_fast(const ActivationsView& x, uint32_t token, uint32_t n, int8_t* q);

// The arguments of a family's int8-activation product (ActivationQuant::kInt8):
// the matrix view, token t's cols int8 activations at xq + t * xq_stride with
// scale s_t = x_scales[t] (activations s_t q_t), its rows results at
// y + t * y_stride, for `batch` tokens.
template <typename View>
struct Int8GemmArgs {
  View w;
  const int8_t* xq = nullptr;
  size_t xq_stride = 0;
  const float* x_scales = nullptr;
  uint32_t batch = 1;
  float* y = nullptr;
  size_t y_stride = 0;
};

// Largest batch the small-batch kernels take in one call (callers split larger
// batches; beyond this a GEMM formulation wins anyway).
inline constexpr uint32_t kMaxKernelBatch = 64;

}  // namespace submoe::kernels
