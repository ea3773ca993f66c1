#include "runtime/repr/vptq/vptq_linear.h"

#include <cstdio>
#include <vector>

#include "runtime/repr/f32_kernel_op.h"
#include "submoe/core/bf16.h"

namespace submoe::runtime::repr {
namespace {

class VptqLinearOp final : public F32KernelLinearOp {
 public:
  VptqLinearOp(kernels::VptqPanels panels, std::vector<float> row_scales, uint32_t outliers, ExecutionMode mode,
               const kernels::VptqGemvKernels& k)
      : F32KernelLinearOp(mode), panels_(std::move(panels)), row_scales_(std::move(row_scales)),
        outliers_(outliers), kernels_(k) {}

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
    SUBMOE_RETURN_IF_ERROR(kernels::gemm_vptq(kernels_, panels_, x, nb, y, pool));
    if (!row_scales_.empty())
      for (uint32_t t = 0; t < nb; ++t)
        for (uint32_t r = 0; r < panels_.rows; ++r) y[size_t{t} * panels_.rows + r] *= row_scales_[r];
    return Status::ok();
  }

 private:
  kernels::VptqPanels panels_;
  std::vector<float> row_scales_;  // empty unless row-scaled
  uint32_t outliers_;
  const kernels::VptqGemvKernels& kernels_;
};

}  // namespace

Result<std::unique_ptr<model::LinearOp>> make_vptq_linear(const vptq::VptqMatrix& m, ExecutionMode mode,
                                                          const kernels::VptqGemvKernels& k) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::VptqPanels panels, kernels::VptqPanels::pack(m));
  std::vector<float> row_scales(m.row_scales.size());
  for (size_t r = 0; r < row_scales.size(); ++r) row_scales[r] = f16_bits_to_float(m.row_scales[r]);
  return std::unique_ptr<model::LinearOp>(new VptqLinearOp(
      std::move(panels), std::move(row_scales), static_cast<uint32_t>(m.outlier_columns.size()), mode, k));
}

}  // namespace submoe::runtime::repr
