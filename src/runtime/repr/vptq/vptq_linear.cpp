#include "runtime/repr/vptq/vptq_linear.h"

#include <cstdio>

#include "runtime/repr/f32_kernel_op.h"

namespace submoe::runtime::repr {
namespace {

class VptqLinearOp final : public F32KernelLinearOp {
 public:
  VptqLinearOp(kernels::VptqPanels panels, uint32_t outliers, ExecutionMode mode, const kernels::VptqGemvKernels& k)
      : F32KernelLinearOp(mode), panels_(std::move(panels)), outliers_(outliers), kernels_(k) {}

  size_t in_features() const override { return panels_.cols; }
  size_t out_features() const override { return panels_.rows; }
  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "vptq %s [%u, %u] %.3f bits/weight, fused %s%s", panels_.shape.name().c_str(),
                  panels_.rows, panels_.cols,
                  8.0 * static_cast<double>(weight_bytes()) / (double(panels_.rows) * panels_.cols),
                  isa_name(kernels_.isa), mode_note());
    return buf;
  }
  // The matrix's ledger bytes (every field), as stored in the artifact.
  size_t weight_bytes() const override {
    return vptq::matrix_bytes(panels_.rows, panels_.cols, panels_.shape, outliers_);
  }

 protected:
  Status run(const float* x, uint32_t nb, float* y, ThreadPool* pool) const override {
    return kernels::gemm_vptq(kernels_, panels_, x, nb, y, pool);
  }

 private:
  kernels::VptqPanels panels_;
  uint32_t outliers_;
  const kernels::VptqGemvKernels& kernels_;
};

}  // namespace

Result<std::unique_ptr<model::LinearOp>> make_vptq_linear(const vptq::VptqMatrix& m, ExecutionMode mode,
                                                          const kernels::VptqGemvKernels& k) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::VptqPanels panels, kernels::VptqPanels::pack(m));
  return std::unique_ptr<model::LinearOp>(
      new VptqLinearOp(std::move(panels), static_cast<uint32_t>(m.outlier_columns.size()), mode, k));
}

}  // namespace submoe::runtime::repr
