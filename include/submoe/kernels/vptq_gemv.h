// Fused products straight from VPTQ matrices (codec/vptq.h): Y = W X for B =
// 1..kMaxKernelBatch tokens of f32 activations. W is never materialized: the
// vectors run down the output axis, so the product is column-major: for each
// input column q every token's activation times the column scale, u_t =
// s_q x_t[q], multiplies the column's 8-row vectors (main centroid plus
// residual centroid, summed in f32 as the reference decoder sums them) into
// the 8 outputs they cover:
//
//   y[t][8j .. 8j+7] += u_t * (C_q[a_{q,j}] + R[b_{q,j}])
//
// Rows are split across threads in blocks of whole vectors, so every output
// is accumulated by one thread in column order. The rows differ from the
// reference decoder followed by a dense product only by f32 rounding (the
// kernels round s_q x_t[q] where the decoder rounds s_q v, and sum in another
// order). A row-scaled matrix's row scales are not applied here: the panels
// leave them out, and the caller multiplies y by them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/vptq.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// One matrix in the kernels' layout.
//
// The indices are stored in panels of kPanelVectors vector rows (256 output
// rows; the last panel narrower), panel after panel, each [cols, width]: a
// kernel tile within one panel reads one contiguous run per column, and the
// panel streams from memory in order. In the codec's [cols, rows/8] order a
// tile's runs sit rows/4 bytes apart, and batch 1 waited on memory (2080 x
// 6144, 8+8, AVX-512, indices streamed from DRAM: about 1200 us, panels 850).
struct VptqPanels {
  static constexpr uint32_t kPanelVectors = 32;
  uint32_t rows = 0, cols = 0;
  vptq::Shape shape;
  AlignedBuffer<float> codebook;           // f32 [2^B, 8]
  AlignedBuffer<float> residual_codebook;  // f32 [2^Br, 8] (empty without a residual stage)
  AlignedBuffer<float> outlier_codebook;   // f32 [2^B, 8] (empty without outliers)
  // Panels of [cols, width] indices, cols x rows/8 in all, one byte each when
  // B and Br are at most 8 (8+8 streams half the bytes of u16), else u16;
  // index_bytes says which.
  AlignedBuffer<uint8_t> indices;
  AlignedBuffer<uint8_t> residual_indices;  // likewise, or empty
  uint32_t index_bytes = 0;
  AlignedBuffer<uint8_t> outlier;            // [cols]: 1 where the column uses the outlier codebook
  AlignedBuffer<float> scales;               // [cols], f32 of the f16 column scales
  static Result<VptqPanels> pack(const vptq::VptqMatrix& m);
  uint32_t vectors_per_column() const { return rows / vptq::kDim; }
  template <typename C>
  const C* indices_as() const {
    return reinterpret_cast<const C*>(indices.data());
  }
  template <typename C>
  const C* residual_indices_as() const {
    return reinterpret_cast<const C*>(residual_indices.data());
  }
  // Where vector row j's index of column 0 is; column q's is q x panel_width(j) further.
  size_t index_offset(uint32_t j) const {
    return size_t{j / kPanelVectors} * kPanelVectors * cols + j % kPanelVectors;
  }
  uint32_t panel_width(uint32_t j) const {
    const uint32_t first = j / kPanelVectors * kPanelVectors, left = vectors_per_column() - first;
    return left < kPanelVectors ? left : kPanelVectors;
  }
};

struct VptqArgs {
  const VptqPanels* w = nullptr;
  uint32_t batch = 1;
  const float* x = nullptr;  // token t at x + t * cols
  float* y = nullptr;        // token t's results at y + t * y_stride
  size_t y_stride = 0;
};
// Computes the outputs of vectors [vector_begin, vector_end) (rows 8 x that).
using VptqRowsFn = void (*)(const VptqArgs& args, uint32_t vector_begin, uint32_t vector_end);

struct VptqGemvKernels {
  Isa isa = Isa::kScalar;
  VptqRowsFn rows = nullptr;
};
const VptqGemvKernels& vptq_gemv_kernels(Isa isa);
const VptqGemvKernels& best_vptq_gemv_kernels();

// y = W x for `batch` tokens (1..kMaxKernelBatch) of cols f32 activations
// (token t at x + t * cols; y token t at y + t * rows), vector rows split
// across pool.
Status gemm_vptq(const VptqGemvKernels& k, const VptqPanels& w, const float* x, uint32_t batch, float* y,
                 ThreadPool* pool);

}  // namespace submoe::kernels
