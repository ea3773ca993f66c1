// Matrix level: fp16 RMS row scales, the matrix encoder, the owner, the
// validator of untrusted data, the reference decoder and the rate ledger.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"
#include "submoe/core/bf16.h"

namespace submoe::rvq {
namespace {

constexpr uint16_t kF16One = 0x3c00;
constexpr uint16_t kF16SmallestSubnormal = 0x0001;

Status check_shape(uint32_t rows, uint32_t cols, uint32_t stages) {
  if (rows == 0) return invalid_argument("rvq: rows must be >= 1");
  if (cols == 0 || cols % kRvqDim != 0) {
    return invalid_argument("rvq: cols " + std::to_string(cols) + " must be a positive multiple of 16");
  }
  if (stages < 1 || stages > kRvqMaxStages) {
    return invalid_argument("rvq: stages " + std::to_string(stages) + " outside 1..8");
  }
  return Status::ok();
}

}  // namespace

Result<uint16_t> rvq_row_scale(std::span<const float> row) {
  double ss = 0;
  for (size_t c = 0; c < row.size(); ++c) {
    if (!std::isfinite(row[c])) {
      return invalid_argument("rvq: weight at column " + std::to_string(c) + " is not finite");
    }
    ss += static_cast<double>(row[c]) * row[c];
  }
  if (ss == 0) return kF16One;
  const double rms = std::sqrt(ss / static_cast<double>(row.size()));
  const uint16_t h = float_to_f16_bits(static_cast<float>(rms));
  if ((h & 0x7c00u) == 0x7c00u) {
    return invalid_argument("rvq: row RMS " + std::to_string(rms) + " exceeds f16's largest value 65504");
  }
  return h == 0 ? kF16SmallestSubnormal : h;
}

Result<RvqMatrix> encode_rvq_matrix(std::span<const float> w, uint32_t rows, uint32_t cols, uint32_t stages,
                                    RvqCodebookSet codebooks, uint32_t beam_width, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols, stages));
  if (w.size() != size_t{rows} * cols) {
    return invalid_argument("rvq: weights hold " + std::to_string(w.size()) + " floats, shape " +
                            std::to_string(rows) + " x " + std::to_string(cols));
  }
  if (!codebooks) return invalid_argument("rvq: no codebooks");
  if (beam_width < 1 || beam_width > kRvqEntries) {
    return invalid_argument("rvq: beam width " + std::to_string(beam_width) + " outside 1..256");
  }
  SUBMOE_ASSIGN_OR_RETURN(RvqEncoder encoder, RvqEncoder::create(*codebooks, stages));
  RvqMatrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.stages_ = stages;
  m.codes_.reset(size_t{rows} * rvq_groups(cols) * stages);
  m.scales_.reset(rows);
  m.codebooks_ = std::move(codebooks);
  // Scales first (errors are reported for the first bad row, in order).
  for (uint32_t r = 0; r < rows; ++r) {
    auto scale = rvq_row_scale(w.subspan(size_t{r} * cols, cols));
    if (!scale.is_ok()) return scale.status().with_context("row " + std::to_string(r));
    m.scales_[r] = *scale;
  }
  const uint32_t groups = rvq_groups(cols);
  auto encode_rows = [&](size_t begin, size_t end) {
    float target[kRvqDim];
    float rec[kRvqDim];
    for (size_t r = begin; r < end; ++r) {
      const float scale = f16_bits_to_float(m.scales_[r]);
      const float* row = w.data() + r * cols;
      uint8_t* codes = m.codes_.data() + r * groups * stages;
      for (uint32_t g = 0; g < groups; ++g) {
        for (uint32_t j = 0; j < kRvqDim; ++j) target[j] = row[g * kRvqDim + j] / scale;
        encoder.encode(target, beam_width, codes + size_t{g} * stages, rec);
      }
    }
  };
  if (pool == nullptr || pool->num_threads() <= 1) {
    encode_rows(0, rows);
  } else {
    pool->parallel_for_dynamic(rows, 1, [&](size_t b, size_t e, int) { encode_rows(b, e); });
  }
  return m;
}

Result<RvqMatrix> RvqMatrix::from_parts(uint32_t rows, uint32_t cols, uint32_t stages, std::span<const uint8_t> codes,
                                        std::span<const uint16_t> scales, RvqCodebookSet codebooks) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols, stages));
  const size_t want_codes = size_t{rows} * rvq_groups(cols) * stages;
  if (codes.size() != want_codes) {
    return invalid_argument("rvq: codes hold " + std::to_string(codes.size()) + " bytes, expected " +
                            std::to_string(want_codes));
  }
  if (scales.size() != rows) {
    return invalid_argument("rvq: scales hold " + std::to_string(scales.size()) + " values, expected " +
                            std::to_string(rows));
  }
  if (!codebooks || codebooks->size() < size_t{stages} * kRvqCodebookFloats) {
    return invalid_argument("rvq: codebooks hold " + std::to_string(codebooks ? codebooks->size() : 0) +
                            " floats, " + std::to_string(stages) + " stages need " +
                            std::to_string(size_t{stages} * kRvqCodebookFloats));
  }
  RvqMatrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.stages_ = stages;
  m.codes_.reset(codes.size(), false);
  std::memcpy(m.codes_.data(), codes.data(), codes.size());
  m.scales_.reset(rows, false);
  std::memcpy(m.scales_.data(), scales.data(), scales.size_bytes());
  m.codebooks_ = std::move(codebooks);
  SUBMOE_RETURN_IF_ERROR(validate_rvq(m.view()));
  return m;
}

RvqView RvqMatrix::view() const {
  RvqView v;
  v.rows = rows_;
  v.cols = cols_;
  v.stages = stages_;
  v.codes = codes_.data();
  v.scales = scales_.data();
  v.codebooks = codebooks_ ? codebooks_->data() : nullptr;
  return v;
}

Status validate_rvq(const RvqView& v) {
  if (v.rows == 0) return corrupt_data("rvq: rows must be >= 1");
  if (v.cols == 0 || v.cols % kRvqDim != 0) {
    return corrupt_data("rvq: cols " + std::to_string(v.cols) + " is not a positive multiple of 16");
  }
  if (v.stages < 1 || v.stages > kRvqMaxStages) {
    return corrupt_data("rvq: stages " + std::to_string(v.stages) + " outside 1..8");
  }
  if (v.codes == nullptr) return corrupt_data("rvq: codes missing");
  if (v.scales == nullptr) return corrupt_data("rvq: scales missing");
  if (v.codebooks == nullptr) return corrupt_data("rvq: codebooks missing");
  for (uint32_t r = 0; r < v.rows; ++r) {
    const uint16_t h = v.scales[r];
    const char* why = nullptr;
    if ((h & 0x7c00u) == 0x7c00u) {
      why = (h & 0x3ffu) ? "NaN" : "infinite";
    } else if ((h & 0x7fffu) == 0) {
      why = "zero";
    } else if (h & 0x8000u) {
      why = "negative";
    }
    if (why != nullptr) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%04x", h);
      return corrupt_data("rvq: scales[" + std::to_string(r) + "] (f16 " + hex + ") is " + why +
                          ", must be finite and > 0");
    }
  }
  const std::string bad = detail::find_bad_codebook_float(v.codebooks, v.stages);
  if (!bad.empty()) return corrupt_data("rvq: " + bad);
  return Status::ok();
}

Result<RvqView> make_rvq_view(uint32_t rows, uint32_t cols, uint32_t stages, std::span<const std::byte> codes,
                              std::span<const std::byte> scales, std::span<const std::byte> codebooks) {
  if (rows == 0) return corrupt_data("rvq: rows must be >= 1");
  if (cols == 0 || cols % kRvqDim != 0) {
    return corrupt_data("rvq: cols " + std::to_string(cols) + " is not a positive multiple of 16");
  }
  if (stages < 1 || stages > kRvqMaxStages) {
    return corrupt_data("rvq: stages " + std::to_string(stages) + " outside 1..8");
  }
  const size_t want_codes = size_t{rows} * rvq_groups(cols) * stages;
  if (codes.size() != want_codes) {
    return corrupt_data("rvq: codes hold " + std::to_string(codes.size()) + " bytes, expected " +
                        std::to_string(want_codes) + " (rows " + std::to_string(rows) + " x groups " +
                        std::to_string(rvq_groups(cols)) + " x stages " + std::to_string(stages) + ")");
  }
  if (scales.size() != size_t{rows} * 2) {
    return corrupt_data("rvq: scales hold " + std::to_string(scales.size()) + " bytes, expected " +
                        std::to_string(size_t{rows} * 2) + " (2 per row)");
  }
  const size_t stage_bytes = kRvqCodebookFloats * sizeof(float);
  if (codebooks.size() % stage_bytes != 0 || codebooks.size() < stages * stage_bytes ||
      codebooks.size() > kRvqMaxStages * stage_bytes) {
    return corrupt_data("rvq: codebooks hold " + std::to_string(codebooks.size()) + " bytes, expected a multiple of " +
                        std::to_string(stage_bytes) + " between " + std::to_string(stages * stage_bytes) + " (" +
                        std::to_string(stages) + " stages) and " + std::to_string(kRvqMaxStages * stage_bytes));
  }
  if (reinterpret_cast<uintptr_t>(scales.data()) % alignof(uint16_t) != 0) {
    return corrupt_data("rvq: scales are not 2-byte aligned");
  }
  if (reinterpret_cast<uintptr_t>(codebooks.data()) % alignof(float) != 0) {
    return corrupt_data("rvq: codebooks are not 4-byte aligned");
  }
  RvqView v;
  v.rows = rows;
  v.cols = cols;
  v.stages = stages;
  v.codes = reinterpret_cast<const uint8_t*>(codes.data());
  v.scales = reinterpret_cast<const uint16_t*>(scales.data());
  v.codebooks = reinterpret_cast<const float*>(codebooks.data());
  SUBMOE_RETURN_IF_ERROR(validate_rvq(v));
  return v;
}

Result<std::vector<float>> decode_rvq_reference(const RvqView& v) {
  SUBMOE_RETURN_IF_ERROR(validate_rvq(v));
  const uint32_t groups = v.groups();
  std::vector<float> out(size_t{v.rows} * v.cols);
  for (uint32_t r = 0; r < v.rows; ++r) {
    const float scale = f16_bits_to_float(v.scales[r]);
    const uint8_t* codes = v.row_codes(r);
    for (uint32_t g = 0; g < groups; ++g) {
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        float sum = 0.0f;
        for (uint32_t s = 0; s < v.stages; ++s) {
          sum += v.codebook(s)[size_t{codes[size_t{g} * v.stages + s]} * kRvqDim + j];
        }
        out[size_t{r} * v.cols + size_t{g} * kRvqDim + j] = scale * sum;
      }
    }
  }
  return out;
}

RvqLedger rvq_ledger(uint32_t rows, uint32_t cols, uint32_t stages) {
  RvqLedger l;
  l.weights = uint64_t{rows} * cols;
  l.code_bytes = uint64_t{rows} * rvq_groups(cols) * stages;
  l.scale_bytes = uint64_t{rows} * 2;
  l.codebook_bytes = uint64_t{stages} * kRvqCodebookFloats * sizeof(float);
  if (l.weights == 0) return l;
  const double w = static_cast<double>(l.weights);
  l.code_bits_per_weight = 8.0 * static_cast<double>(l.code_bytes) / w;
  l.scale_bits_per_weight = 8.0 * static_cast<double>(l.scale_bytes) / w;
  l.bits_per_weight = 8.0 * static_cast<double>(l.code_bytes + l.scale_bytes) / w;
  l.bits_per_weight_with_codebooks = 8.0 * static_cast<double>(l.code_bytes + l.scale_bytes + l.codebook_bytes) / w;
  return l;
}

}  // namespace submoe::rvq
