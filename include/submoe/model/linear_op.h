// LinearOp: the seam between the model and weight storage.
//
// out[t, :] = W · in[t, :] for a batch of n token rows, with W of shape
// [out_features, in_features] (the nn.Linear layout of the checkpoint). The model
// never learns whether W is dense bf16, dense f32 or a compressed code; every
// projection (attention, router, experts, lm_head) goes through this interface.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "submoe/core/status.h"
#include "submoe/codec/mxfp4.h"
#include "submoe/codec/nf4.h"
#include "submoe/codec/spqr.h"
#include "submoe/codec/squeezellm.h"
#include "submoe/io/safetensors.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::model {

class LinearOp {
 public:
  virtual ~LinearOp() = default;

  virtual size_t in_features() const = 0;
  virtual size_t out_features() const = 0;

  // in: [n, in_features] row-major; out: [n, out_features] row-major, overwritten.
  // `pool` may be null (run on the calling thread). Implementations decide how to
  // split the work; callers that already run in parallel pass null. Shapes are a
  // caller invariant (checked once, when the model is built), not a runtime input.
  virtual void forward(const float* in, size_t n, float* out, ThreadPool* pool) const = 0;

  // Human-readable storage, e.g. "dense bf16 [1024, 256]".
  virtual std::string describe() const = 0;
  // Bytes of weight data one forward pass streams (for bandwidth and size reports).
  virtual size_t weight_bytes() const = 0;
};

// Weight storage types a dense LinearOp computes on directly.
enum class DenseDType { kF32, kBF16 };

// A dense LinearOp over a checkpoint tensor [out, in], computing on the stored
// dtype: BF16 and F32 are used in place (no f32 copy of bf16 weights; the view's
// memory must outlive the op). F16 has no kernel, so it is widened once into an
// owned f32 copy (exact). A view whose data is not aligned to its element size is
// copied once into an aligned owned buffer, still in its dtype. Other dtypes and
// shapes that are not 2-D are kInvalidArgument, naming the tensor.
// Where BF16/F32 weights live:
//   kInPlace:      in the view's memory (the checkpoint's file mapping);
//   kHugePageCopy: matrices of 1 MiB or more copied once into 2 MiB huge pages
//                  (core/huge_page_buffer.h), the view then unused (a view of a
//                  file mapping, TensorView::file set, has its pages released);
//                  saves the TLB misses of streaming 4 KiB pages.
enum class DenseStorage { kInPlace, kHugePageCopy };
// activations kBF16: each input rounded to bf16 before the product (as
// llama.cpp's BF16 and transformers in bf16 compute; `run --execution
// fused-bf16` on a checkpoint); kF32: the input as it is.
Result<std::unique_ptr<LinearOp>> make_dense_linear(const io::TensorView& weight,
                                                    DenseStorage storage = DenseStorage::kInPlace,
                                                    kernels::ActivationType activations = kernels::ActivationType::kF32);

// A dense LinearOp over memory the caller owns (row-major [out_features, in_features],
// aligned to the element size); for tests and for weights built in memory.
std::unique_ptr<LinearOp> make_dense_linear(const void* data, DenseDType dtype, size_t out_features,
                                            size_t in_features);

// The fused MXFP4 op over a validated matrix (mxfp4::from_fields), the best
// kernels for this CPU; it owns the matrix. activations kBF16: inputs rounded
// to bf16 first; quant kInt8: quantized to int8 per token and multiplied in
// int32 (kernels/mxfp4_gemv.h gemm_mxfp4_i8).
std::unique_ptr<LinearOp> make_mxfp4_linear(mxfp4::Mxfp4Matrix m,
                                            kernels::ActivationType activations = kernels::ActivationType::kF32,
                                            kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

// The fused NF4 op over a validated matrix (nf4::from_fields), the best
// kernels for this CPU; it owns the matrix. activations kBF16: inputs rounded
// to bf16 first; quant kInt8: inputs replaced by their int8 quantization s q
// per token (the product stays in float).
std::unique_ptr<LinearOp> make_nf4_linear(nf4::Nf4Matrix m,
                                          kernels::ActivationType activations = kernels::ActivationType::kF32,
                                          kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

// The fused SqueezeLLM op (dense row tables + replacement exceptions) over a
// validated matrix (squeezellm::from_fields); modes as make_nf4_linear.
std::unique_ptr<LinearOp> make_squeezellm_linear(squeezellm::SqueezeMatrix m,
                                                 kernels::ActivationType activations = kernels::ActivationType::kF32,
                                                 kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

// The fused SpQR op (two-level dense groups + correction exceptions) over a
// validated matrix (spqr::from_fields); modes as make_nf4_linear.
std::unique_ptr<LinearOp> make_spqr_linear(spqr::SpqrMatrix m,
                                           kernels::ActivationType activations = kernels::ActivationType::kF32,
                                           kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

}  // namespace submoe::model
