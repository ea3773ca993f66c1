#include "submoe/kernels/rvq_panels.h"

#include <algorithm>
#include <string>

namespace submoe::kernels {

Status check_rvq_shape(const char* who, uint32_t rows, uint32_t cols, uint32_t stages) {
  if (rows == 0 || cols == 0 || cols % rvq::kRvqDim != 0)
    return invalid_argument(std::string(who) + ": shape " + std::to_string(rows) + "x" + std::to_string(cols) +
                            " (cols must be a positive multiple of 16)");
  if (stages < 1 || stages > rvq::kRvqMaxStages)
    return invalid_argument(std::string(who) + ": stages " + std::to_string(stages) + " outside 1.." +
                            std::to_string(rvq::kRvqMaxStages));
  return Status::ok();
}

void transpose_rvq_codebooks(const float* codebooks, uint32_t stages, float* out) {
  for (uint32_t s = 0; s < stages; ++s) {
    const float* cb = codebooks + size_t{s} * rvq::kRvqCodebookFloats;
    float* dst = out + size_t{s} * rvq::kRvqCodebookFloats;
    for (uint32_t c = 0; c < rvq::kRvqEntries; ++c)
      for (uint32_t j = 0; j < rvq::kRvqDim; ++j) dst[j * rvq::kRvqEntries + c] = cb[c * rvq::kRvqDim + j];
  }
}

Result<RvqPanels> RvqPanels::pack(const rvq::RvqView& v, const float* codebooks_t) {
  SUBMOE_RETURN_IF_ERROR(check_rvq_shape("rvq panels", v.rows, v.cols, v.stages));
  if (v.codes == nullptr || v.scales == nullptr || v.codebooks == nullptr)
    return invalid_argument("rvq panels: matrix has null arrays");
  RvqPanels p;
  p.rows_ = v.rows;
  p.cols_ = v.cols;
  p.stages_ = v.stages;
  p.scales_ = v.scales;
  p.codebooks_ = v.codebooks;
  p.codebooks_t_ = codebooks_t;
  p.bytes_.reset(rvq_panel_bytes(v.rows, v.cols, v.stages), /*zero=*/true);
  const RvqPanelView pv = p.view();
  for (uint32_t sp = 0; sp < pv.spans(); ++sp) {
    const uint32_t b0 = sp * kRvqSpanGroups * v.stages;
    const uint32_t b1 = std::min(v.groups(), (sp + 1) * kRvqSpanGroups) * v.stages;
    for (uint32_t r = 0; r < v.rows; ++r) {
      // Block i of row r is byte i of its row codes ([group][stage] = g * S + s).
      const uint8_t* src = v.row_codes(r);
      uint8_t* dst = p.bytes_.data() + (pv.span_panel(sp, r / kRvqPanelRows) - pv.panels);
      for (uint32_t i = b0; i < b1; ++i) dst[RvqPanelView::local_offset(r, i - b0)] = src[i];
    }
  }
  return p;
}

}  // namespace submoe::kernels
