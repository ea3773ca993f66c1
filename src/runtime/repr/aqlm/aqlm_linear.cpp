#include "runtime/repr/aqlm/aqlm_linear.h"

#include <cstdio>

#include "runtime/repr/f32_kernel_op.h"

namespace submoe::runtime::repr {
namespace {

class AqlmLinearOp final : public F32KernelLinearOp {
 public:
  AqlmLinearOp(kernels::AqlmPanels panels, ExecutionMode mode, const kernels::AqlmGemvKernels& k)
      : F32KernelLinearOp(mode), panels_(std::move(panels)), kernels_(k) {}

  size_t in_features() const override { return panels_.cols; }
  size_t out_features() const override { return panels_.rows; }
  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "aqlm %s [%u, %u] %.3f bits/weight, fused %s%s", panels_.shape.name().c_str(),
                  panels_.rows, panels_.cols,
                  8.0 * static_cast<double>(weight_bytes()) / (double(panels_.rows) * panels_.cols),
                  isa_name(kernels_.isa), mode_note());
    return buf;
  }
  // The matrix's ledger bytes (codes, codebooks, scales), as stored in the artifact.
  size_t weight_bytes() const override { return aqlm::matrix_bytes(panels_.rows, panels_.cols, panels_.shape); }

 protected:
  Status run(const float* x, uint32_t nb, float* y, ThreadPool* pool) const override {
    return kernels::gemm_aqlm(kernels_, panels_, x, nb, y, pool);
  }

 private:
  kernels::AqlmPanels panels_;
  const kernels::AqlmGemvKernels& kernels_;
};

}  // namespace

Result<std::unique_ptr<model::LinearOp>> make_aqlm_linear(const aqlm::AqlmMatrix& m, ExecutionMode mode,
                                                          const kernels::AqlmGemvKernels& k) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::AqlmPanels panels, kernels::AqlmPanels::pack(m));
  return std::unique_ptr<model::LinearOp>(new AqlmLinearOp(std::move(panels), mode, k));
}

}  // namespace submoe::runtime::repr
