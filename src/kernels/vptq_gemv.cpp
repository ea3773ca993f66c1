#include "submoe/kernels/vptq_gemv.h"

#include <algorithm>
#include <string>
#include <vector>

#include "row_dispatch.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"
#include "vptq_gemv_internal.h"

namespace submoe::kernels {
namespace {
// Vector rows per pool block: one index panel, a multiple of every ISA's
// block, so pool blocks never cut a tile short.
constexpr size_t kVectorGrain = VptqPanels::kPanelVectors;
// The e8p family's threshold: below it, waking the pool costs more than the split saves.
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const VptqGemvKernels kScalar{Isa::kScalar, &detail::vptq_rows_scalar};
const VptqGemvKernels kAvx2{Isa::kAvx2, &detail::vptq_rows_avx2};
const VptqGemvKernels kAvx512{Isa::kAvx512, &detail::vptq_rows_avx512};

// Whether the fields of m (a VptqMatrix or a VptqPanels) have the sizes its
// shape needs, with an outlier codebook or without.
// index_width: 1 for a VptqMatrix (element counts), the panels' index_bytes for them.
template <typename M>
bool sizes_match(const M& m, bool outliers, size_t index_width) {
  const size_t n = size_t{m.cols} * (m.rows / vptq::kDim), book = size_t{m.shape.entries()} * vptq::kDim;
  return m.codebook.size() == book && m.residual_codebook.size() == size_t{m.shape.residual_entries()} * vptq::kDim &&
         m.outlier_codebook.size() == (outliers ? book : 0) && m.indices.size() == n * index_width &&
         m.residual_indices.size() == (m.shape.residual_bits ? n * index_width : 0) && m.scales.size() == m.cols;
}

// The first element of v at or above `limit` as "<name> <position> is <value>", or "".
template <typename T>
std::string first_at_or_above(const std::vector<T>& v, uint64_t limit, const char* name) {
  const auto bad = std::find_if(v.begin(), v.end(), [&](T e) { return e >= limit; });
  if (bad == v.end()) return {};
  return std::string(name) + " " + std::to_string(bad - v.begin()) + " is " + std::to_string(*bad);
}

AlignedBuffer<float> widen(const std::vector<uint16_t>& f16) {
  AlignedBuffer<float> out(f16.size(), false);
  for (size_t i = 0; i < f16.size(); ++i) out.data()[i] = f16_bits_to_float(f16[i]);
  return out;
}

// [cols, rows/8] indices (or none) in the panels' order (VptqPanels).
// C: the panels' index type (each index is below 2^B, which C holds).
template <typename C>
AlignedBuffer<uint8_t> to_panels(const std::vector<uint16_t>& v, const VptqPanels& p) {
  AlignedBuffer<uint8_t> out(v.size() * sizeof(C), false);
  if (v.empty()) return out;
  const uint32_t vpc = p.vectors_per_column();
  for (uint32_t j0 = 0; j0 < vpc; j0 += VptqPanels::kPanelVectors) {
    const uint32_t width = p.panel_width(j0);
    C* panel = reinterpret_cast<C*>(out.data()) + p.index_offset(j0);
    for (uint32_t q = 0; q < p.cols; ++q)
      std::copy_n(v.data() + size_t{q} * vpc + j0, width, panel + size_t{q} * width);
  }
  return out;
}
}  // namespace

Result<VptqPanels> VptqPanels::pack(const vptq::VptqMatrix& m) {
  SUBMOE_RETURN_IF_ERROR(vptq::check_shape(m.shape));
  SUBMOE_RETURN_IF_ERROR(vptq::check_matrix_shape(m.rows, m.cols));
  const std::string what = "VptqPanels::pack: " + m.shape.name() + " [" + std::to_string(m.rows) + ", " +
                           std::to_string(m.cols) + "]: ";
  if (!sizes_match(m, !m.outlier_columns.empty(), 1))
    return invalid_argument(what + "field sizes do not match the shape (residual fields need Br > 0, the outlier "
                                   "codebook outlier columns)");
  // The kernels index the codebooks and the column flags unchecked: a matrix
  // not made by matrix_from_bytes is checked here.
  std::string bad = first_at_or_above(m.indices, m.shape.entries(), "index");
  if (bad.empty()) bad = first_at_or_above(m.residual_indices, m.shape.residual_entries(), "residual index");
  if (bad.empty()) bad = first_at_or_above(m.outlier_columns, m.cols, "outlier column");
  if (!bad.empty()) return invalid_argument(what + bad + ", out of range");
  VptqPanels p;
  p.rows = m.rows;
  p.cols = m.cols;
  p.shape = m.shape;
  p.codebook = widen(m.codebook);
  p.residual_codebook = widen(m.residual_codebook);
  p.outlier_codebook = widen(m.outlier_codebook);
  p.index_bytes = std::max(m.shape.bits, m.shape.residual_bits) <= 8 ? 1 : 2;
  const auto panels = p.index_bytes == 1 ? &to_panels<uint8_t> : &to_panels<uint16_t>;
  p.indices = panels(m.indices, p);
  p.residual_indices = panels(m.residual_indices, p);
  p.outlier = AlignedBuffer<uint8_t>(m.cols, true);
  for (uint32_t q : m.outlier_columns) p.outlier.data()[q] = 1;
  p.scales = widen(m.scales);
  return p;
}

const VptqGemvKernels& vptq_gemv_kernels(Isa isa) { return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512); }

const VptqGemvKernels& best_vptq_gemv_kernels() {
  static const VptqGemvKernels& best = vptq_gemv_kernels(best_isa());
  return best;
}

Status gemm_vptq(const VptqGemvKernels& k, const VptqPanels& w, const float* x, uint32_t batch, float* y,
                 ThreadPool* pool) {
  if (k.rows == nullptr) return invalid_argument("gemm_vptq: empty kernel table");
  if (!vptq::check_shape(w.shape).is_ok() || !vptq::check_matrix_shape(w.rows, w.cols).is_ok() ||
      (w.index_bytes != 1 && w.index_bytes != 2) || !sizes_match(w, !w.outlier_codebook.empty(), w.index_bytes) ||
      w.outlier.size() != w.cols)
    return invalid_argument("gemm_vptq: empty or unpacked matrix");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument("gemm_vptq: batch out of range");
  if (x == nullptr || y == nullptr) return invalid_argument("gemm_vptq: null pointer");
  VptqArgs a;
  a.w = &w;
  a.batch = batch;
  a.x = x;
  a.y = y;
  a.y_stride = w.rows;
  const size_t macs = size_t{w.rows} * w.cols * batch;
  detail::run_rows(k.rows, a, w.vectors_per_column(), kVectorGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
