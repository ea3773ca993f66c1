#include "submoe/kernels/dense_gemv.h"

#include <string>

#include "kernels/dense_gemv_internal.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "row_dispatch.h"

namespace submoe::kernels {

namespace {

const DenseGemvKernels kScalar = {Isa::kScalar, "gemv_f32_dense_scalar", detail::gemv_f32_dense_scalar,
                                  "gemv_bf16_dense_scalar", detail::gemv_bf16_dense_scalar};
const DenseGemvKernels kAvx2 = {Isa::kAvx2, "gemv_f32_dense_avx2", detail::gemv_f32_dense_avx2,
                                "gemv_bf16_dense_avx2", detail::gemv_bf16_dense_avx2};
const DenseGemvKernels kAvx512 = {Isa::kAvx512, "gemv_f32_dense_avx512", detail::gemv_f32_dense_avx512,
                                  "gemv_bf16_dense_avx512", detail::gemv_bf16_dense_avx512};
const DenseGemvKernels kAvx512Bf16 = {Isa::kAvx512,
                                      "gemv_f32_dense_avx512",
                                      detail::gemv_f32_dense_avx512,
                                      "gemv_bf16_dense_avx512",
                                      detail::gemv_bf16_dense_avx512,
                                      "gemv_bf16x_dense_avx512bf16",
                                      detail::gemv_bf16x_dense_avx512bf16,
                                      detail::round_bf16_avx512};

}  // namespace

const DenseGemvKernels& dense_gemv_kernels(Isa isa) {
  if (isa == Isa::kAvx512 && cpu_features().avx512_bf16) return kAvx512Bf16;
  return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512);
}

std::vector<const DenseGemvKernels*> dense_gemv_tables(Isa isa) {
  std::vector<const DenseGemvKernels*> out = {&detail::table_for_isa(isa, kScalar, kAvx2, kAvx512)};
  if (isa == Isa::kAvx512 && cpu_features().avx512_bf16) out.push_back(&kAvx512Bf16);
  return out;
}

const DenseGemvKernels& best_dense_gemv_kernels() {
  static const DenseGemvKernels& best = dense_gemv_kernels(best_isa());
  return best;
}

const char* dense_kernel_name(const DenseGemvKernels& k, DenseType type) {
  return type == DenseType::kF32 ? k.f32_name : k.bf16_name;
}

DenseRowsFn prepare_dense_activations(const DenseGemvKernels& kernels, DenseGemmArgs* a, ActivationType activations) {
  const DenseRowsFn plain = a->w.type == DenseType::kF32 ? kernels.f32 : kernels.bf16;
  if (activations != ActivationType::kBF16 || a->w.cols == 0) return plain;
  // Once per call on the calling thread (batch x cols values), not per row block.
  if (a->w.type == DenseType::kBF16 && kernels.bf16x != nullptr) {
    thread_local AlignedBuffer<uint16_t> rounded;
    const size_t stride = (size_t{a->w.cols} + 31) / 32 * 32;
    if (rounded.size() < stride * a->batch) rounded = AlignedBuffer<uint16_t>(stride * a->batch, /*zero=*/false);
    for (uint32_t t = 0; t < a->batch; ++t)
      kernels.round_bf16(a->x + t * a->x_stride, a->w.cols, rounded.data() + stride * t, stride);
    a->x_bf16 = rounded.data();
    a->x_bf16_stride = stride;
    return kernels.bf16x;
  }
  thread_local AlignedBuffer<float> copy;
  const size_t need = size_t{a->w.cols} * a->batch;
  if (copy.size() < need) copy = AlignedBuffer<float>(need, /*zero=*/false);
  for (uint32_t t = 0; t < a->batch; ++t)
    for (uint32_t c = 0; c < a->w.cols; ++c)
      copy.data()[size_t{t} * a->w.cols + c] = bf16_to_float(float_to_bf16(a->x[t * a->x_stride + c]));
  a->x = copy.data();
  a->x_stride = a->w.cols;
  return plain;
}

Status gemm_dense(const DenseGemvKernels& kernels, const DenseMatrixView& w, const float* x, size_t x_stride,
                  uint32_t batch, const OutputView& y, ThreadPool* pool, ActivationType activations) {
  if (kernels.f32 == nullptr || kernels.bf16 == nullptr) return invalid_argument("gemm_dense: empty kernel table");
  if (batch < 1 || batch > kMaxKernelBatch) {
    return invalid_argument("gemm_dense: batch " + std::to_string(batch) + " outside 1.." +
                            std::to_string(kMaxKernelBatch));
  }
  if (w.type != DenseType::kF32 && w.type != DenseType::kBF16) return invalid_argument("gemm_dense: unknown dtype");
  if (w.rows == 0) return Status::ok();
  if (y.data == nullptr) return invalid_argument("gemm_dense: null output");
  if (batch > 1 && y.stride < w.rows) return invalid_argument("gemm_dense: output stride < rows");
  if (w.cols > 0) {
    if (w.data == nullptr || x == nullptr) return invalid_argument("gemm_dense: null weights or activations");
    if (w.stride < w.cols) return invalid_argument("gemm_dense: weight row stride < cols");
    if (batch > 1 && x_stride < w.cols) return invalid_argument("gemm_dense: activation stride < cols");
  }
  DenseGemmArgs args;
  args.w = w;
  args.x = x;
  args.x_stride = x_stride;
  args.batch = batch;
  args.y = y.data;
  args.y_stride = y.stride;
  args.prefetch_next_row = !w.huge_pages;
  const DenseRowsFn fn = prepare_dense_activations(kernels, &args, activations);
  constexpr size_t kGrain = 16;
  detail::run_rows(fn, args, w.rows, kGrain, pool);
  return Status::ok();
}

}  // namespace submoe::kernels
