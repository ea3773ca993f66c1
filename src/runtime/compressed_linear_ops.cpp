// The compressed LinearOps: fused ternary dictionary, fused int, and the dense
// op over reference-decoded weights.
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "runtime/op_workspace.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime {
namespace {

using kernels::ActivationsView;
using kernels::kMaxKernelBatch;
using kernels::OutputView;

std::string shape(size_t rows, size_t cols) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "[%zu, %zu]", rows, cols);
  return buf;
}

std::string bits_per_weight(size_t bytes, size_t rows, size_t cols) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", 8.0 * static_cast<double>(bytes) / static_cast<double>(rows * cols));
  return buf;
}

// Shapes are checked when the op is built and the kernels' preconditions hold
// by construction, so a kernel error is a bug here: poison the output so it
// cannot pass unnoticed in a release build.
void on_kernel_error(const Status& st, float* out, size_t n) {
  assert(st.is_ok() && "compressed LinearOp: kernel rejected its arguments");
  (void)st;
  std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
}

// How an op's inputs are rounded before its kernel sees them.
enum class InputRounding { kNone, kBf16 };

// Tokens in chunks of at most kMaxKernelBatch; the pool only for enough work.
// With bf16 rounding each chunk is rounded into a per-thread buffer first (the
// kernels quantize to int8 themselves).
template <typename RunChunk>
void forward_chunks(size_t rows, size_t cols, const float* in, size_t n, float* out, ThreadPool* pool,
                    InputRounding rounding, const RunChunk& run) {
  ThreadPool* p = rows * cols * n >= detail::kParallelMinMacs ? pool : nullptr;
  for (size_t t0 = 0; t0 < n; t0 += kMaxKernelBatch) {
    const auto nb = static_cast<uint32_t>(std::min<size_t>(kMaxKernelBatch, n - t0));
    const float* src = in + t0 * cols;
    ActivationsView x = ActivationsView::f32(src, nb, cols);
    if (rounding == InputRounding::kBf16) {
      thread_local std::vector<bf16_t> rounded;
      rounded.resize(static_cast<size_t>(nb) * cols);
      for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = float_to_bf16(src[i]);
      x = ActivationsView::bf16(rounded.data(), nb, cols);
    }
    const Status st = run(x, OutputView{out + t0 * rows, rows}, p);
    if (!st.is_ok()) on_kernel_error(st, out + t0 * rows, nb * rows);
  }
}

const char* activations_suffix(kernels::ActivationType a, kernels::ActivationQuant q) {
  if (q == kernels::ActivationQuant::kInt8) return ", int8 activations";
  return a == kernels::ActivationType::kBF16 ? ", bf16 activations" : "";
}

InputRounding bf16_rounding(kernels::ActivationType a) {
  return a == kernels::ActivationType::kBF16 ? InputRounding::kBf16 : InputRounding::kNone;
}

class TernaryDictLinearOp final : public model::LinearOp {
 public:
  TernaryDictLinearOp(ternary::PackedTernaryMatrix m, std::shared_ptr<const TernaryCodebook> cb,
                      const kernels::TernaryGemvKernels& k, kernels::ActivationType activations,
                      kernels::ActivationQuant quant)
      : m_(std::move(m)), codebook_(std::move(cb)), kernels_(k), activations_(activations), quant_(quant) {}

  size_t in_features() const override { return m_.cols(); }
  size_t out_features() const override { return m_.rows(); }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const ternary::PackedTernaryView w = m_.view();
    // kInt8: the driver quantizes (the batch-1 kernel reads the int8 values).
    forward_chunks(m_.rows(), m_.cols(), in, n, out, pool, bf16_rounding(activations_), [&](const ActivationsView& x, const OutputView& y, ThreadPool* p) {
      const std::span<float> ws = detail::thread_workspace(kernels::ternary_gemm_workspace_floats(w.cols, x.batch));
      return kernels::gemm_ternary_dict(kernels_, codebook_->kernel_table(), w, x, y, ws, p, quant_);
    });
  }

  std::string describe() const override {
    return std::string("ternary_dict ") + ternary::dict_kind_name(codebook_->dictionary().kind()) + " " +
           shape(m_.rows(), m_.cols()) + " " + bits_per_weight(weight_bytes(), m_.rows(), m_.cols()) +
           " bits/weight, fused " + isa_name(kernels_.isa) + activations_suffix(activations_, quant_);
  }
  size_t weight_bytes() const override {
    return m_.num_codes() * sizeof(uint16_t) + m_.row_offsets().size_bytes() + m_.scales().size_bytes();
  }

 private:
  ternary::PackedTernaryMatrix m_;
  std::shared_ptr<const TernaryCodebook> codebook_;
  const kernels::TernaryGemvKernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
};

class IntLinearOp final : public model::LinearOp {
 public:
  IntLinearOp(intn::PackedIntMatrix m, const kernels::IntGemvKernels& k, kernels::ActivationType activations,
              kernels::ActivationQuant quant)
      : m_(std::move(m)), kernels_(k), activations_(activations), quant_(quant) {}

  size_t in_features() const override { return m_.cols(); }
  size_t out_features() const override { return m_.rows(); }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const intn::PackedIntView w = m_.view();
    // gemm_int quantizes to int8 itself (exact integer sums where it can).
    forward_chunks(m_.rows(), m_.cols(), in, n, out, pool, bf16_rounding(activations_),
                   [&](const ActivationsView& x, const OutputView& y, ThreadPool* p) {
                     const std::span<float> ws =
                         detail::thread_workspace(kernels::int_gemm_workspace_floats(w.cols, x.batch));
                     return kernels::gemm_int(kernels_, w, x, y, ws, p, quant_);
                   });
  }

  std::string describe() const override {
    std::string s = "int" + std::to_string(m_.bits());
    if (m_.group_size() != 0) s += "-g" + std::to_string(m_.group_size());
    return s + " " + shape(m_.rows(), m_.cols()) + " " + bits_per_weight(weight_bytes(), m_.rows(), m_.cols()) +
           " bits/weight, fused " + isa_name(kernels_.isa) + activations_suffix(activations_, quant_);
  }
  size_t weight_bytes() const override { return m_.storage_bytes(); }

 private:
  intn::PackedIntMatrix m_;
  const kernels::IntGemvKernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
};

class ReferenceDecodedLinearOp final : public model::LinearOp {
 public:
  ReferenceDecodedLinearOp(std::vector<float> w, size_t rows, size_t cols, std::string what)
      : w_(std::move(w)), dense_(model::make_dense_linear(w_.data(), model::DenseDType::kF32, rows, cols)),
        what_(std::move(what)) {}

  size_t in_features() const override { return dense_->in_features(); }
  size_t out_features() const override { return dense_->out_features(); }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    dense_->forward(in, n, out, pool);
  }
  std::string describe() const override { return what_ + " reference-decoded to " + dense_->describe(); }
  size_t weight_bytes() const override { return dense_->weight_bytes(); }

 private:
  std::vector<float> w_;  // the dense op points into it
  std::unique_ptr<model::LinearOp> dense_;
  std::string what_;
};

}  // namespace

const char* execution_mode_name(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::kFused:
      return "fused";
    case ExecutionMode::kFusedBf16:
      return "fused-bf16";
    case ExecutionMode::kFusedInt8:
      return "fused-int8";
    case ExecutionMode::kReferenceDecode:
      return "reference";
  }
  return "?";
}

Result<ExecutionMode> parse_execution_mode(std::string_view name) {
  if (name == "fused") return ExecutionMode::kFused;
  if (name == "fused-bf16") return ExecutionMode::kFusedBf16;
  if (name == "fused-int8") return ExecutionMode::kFusedInt8;
  if (name == "reference") return ExecutionMode::kReferenceDecode;
  return invalid_argument("execution mode '" + std::string(name) +
                          "' is not fused, fused-bf16, fused-int8 or reference");
}

kernels::ActivationType execution_activations(ExecutionMode mode) {
  return mode == ExecutionMode::kFusedBf16 ? kernels::ActivationType::kBF16 : kernels::ActivationType::kF32;
}

kernels::ActivationQuant execution_quant(ExecutionMode mode) {
  return mode == ExecutionMode::kFusedInt8 ? kernels::ActivationQuant::kInt8 : kernels::ActivationQuant::kExact;
}

Result<std::unique_ptr<model::LinearOp>> make_ternary_dict_linear(ternary::PackedTernaryMatrix m,
                                                                  std::shared_ptr<const TernaryCodebook> codebook,
                                                                  const kernels::TernaryGemvKernels& kernels,
                                                                  kernels::ActivationType activations,
                                                                  kernels::ActivationQuant quant) {
  if (!codebook) return invalid_argument("ternary_dict op: no codebook");
  if (activations == kernels::ActivationType::kBF16 && quant != kernels::ActivationQuant::kExact)
    return invalid_argument("ternary_dict op: bf16 rounding and int8 quantization together");
  if (m.dict() != codebook->entries())
    return invalid_argument("ternary_dict op: the matrix was not built on the codebook's dictionary");
  if (m.rows() == 0 || m.cols() == 0) return invalid_argument("ternary_dict op: empty matrix");
  return std::unique_ptr<model::LinearOp>(
      new TernaryDictLinearOp(std::move(m), std::move(codebook), kernels, activations, quant));
}

Result<std::unique_ptr<model::LinearOp>> make_int_linear(intn::PackedIntMatrix m,
                                                         const kernels::IntGemvKernels& kernels,
                                                         kernels::ActivationType activations,
                                                         kernels::ActivationQuant quant) {
  if (m.rows() == 0 || m.cols() == 0) return invalid_argument("int op: empty matrix");
  if (activations == kernels::ActivationType::kBF16 && quant != kernels::ActivationQuant::kExact)
    return invalid_argument("int op: bf16 rounding and int8 quantization together");
  return std::unique_ptr<model::LinearOp>(new IntLinearOp(std::move(m), kernels, activations, quant));
}

Result<std::unique_ptr<model::LinearOp>> make_reference_decoded_linear(std::vector<float> weights, size_t rows,
                                                                       size_t cols, std::string what) {
  if (rows == 0 || cols == 0 || weights.size() != rows * cols)
    return invalid_argument("reference-decoded op: " + std::to_string(weights.size()) + " weights for " +
                            shape(rows, cols));
  return std::unique_ptr<model::LinearOp>(new ReferenceDecodedLinearOp(std::move(weights), rows, cols, std::move(what)));
}

}  // namespace submoe::runtime
