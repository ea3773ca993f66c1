#include "submoe/kernels/aqlm_gemv.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "aqlm_gemv_internal.h"
#include "row_dispatch.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels {
namespace {
// A multiple of every ISA's row tile (8), so pool blocks never split a tile.
constexpr size_t kRowGrain = 16;
// The e8p family's threshold: below it, waking the pool costs more than the split saves.
constexpr size_t kParallelMinMacs = size_t{1} << 16;
const AqlmGemvKernels kScalar{Isa::kScalar, &detail::aqlm_rows_scalar};
const AqlmGemvKernels kAvx2{Isa::kAvx2, &detail::aqlm_rows_avx2};
const AqlmGemvKernels kAvx512{Isa::kAvx512, &detail::aqlm_rows_avx512};

size_t code_count(uint32_t rows, uint32_t cols, aqlm::Shape s) {
  return size_t{rows} * (cols / aqlm::kDim) * s.codebooks;
}
size_t codebook_floats(aqlm::Shape s) { return size_t{s.codebooks} * s.entries() * aqlm::kDim; }
}  // namespace

Result<AqlmPanels> AqlmPanels::pack(const aqlm::AqlmMatrix& m) {
  SUBMOE_RETURN_IF_ERROR(aqlm::check_shape(m.shape));
  SUBMOE_RETURN_IF_ERROR(aqlm::check_matrix_shape(m.rows, m.cols));
  if (m.codes.size() != code_count(m.rows, m.cols, m.shape) || m.codebooks.size() != codebook_floats(m.shape) ||
      m.scales.size() != m.rows)
    return invalid_argument("AqlmPanels::pack: field sizes do not match the " + m.shape.name() + " [" +
                            std::to_string(m.rows) + ", " + std::to_string(m.cols) + "] shape");
  // The kernels index the codebooks unchecked: an index past 2^B would read
  // outside them, so a matrix not made by matrix_from_bytes is checked here.
  const auto bad = std::find_if(m.codes.begin(), m.codes.end(), [&](uint16_t c) { return c >= m.shape.entries(); });
  if (bad != m.codes.end())
    return invalid_argument("AqlmPanels::pack: code " + std::to_string(bad - m.codes.begin()) + " is " +
                            std::to_string(*bad) + ", at or above the " + std::to_string(m.shape.entries()) +
                            " codebook entries");
  AqlmPanels p;
  p.rows = m.rows;
  p.cols = m.cols;
  p.shape = m.shape;
  p.codebooks = AlignedBuffer<float>(m.codebooks.size(), false);
  for (size_t i = 0; i < m.codebooks.size(); ++i) p.codebooks.data()[i] = f16_bits_to_float(m.codebooks[i]);
  p.code_bytes = m.shape.code_bits <= 8 ? 1 : 2;
  p.codes = AlignedBuffer<uint8_t>(m.codes.size() * p.code_bytes, false);
  if (p.code_bytes == 1)
    std::copy(m.codes.begin(), m.codes.end(), p.codes.data());  // each < 2^B <= 256
  else
    std::memcpy(p.codes.data(), m.codes.data(), m.codes.size() * sizeof(uint16_t));
  p.scales = AlignedBuffer<float>(m.rows, false);
  for (uint32_t r = 0; r < m.rows; ++r) p.scales.data()[r] = f16_bits_to_float(m.scales[r]);
  return p;
}

const AqlmGemvKernels& aqlm_gemv_kernels(Isa isa) { return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512); }

const AqlmGemvKernels& best_aqlm_gemv_kernels() {
  static const AqlmGemvKernels& best = aqlm_gemv_kernels(best_isa());
  return best;
}

Status gemm_aqlm(const AqlmGemvKernels& k, const AqlmPanels& w, const float* x, uint32_t batch, float* y,
                 ThreadPool* pool) {
  if (k.rows == nullptr) return invalid_argument("gemm_aqlm: empty kernel table");
  if (w.rows == 0 || w.cols == 0 || (w.code_bytes != 1 && w.code_bytes != 2) ||
      w.codes.size() != code_count(w.rows, w.cols, w.shape) * w.code_bytes ||
      w.codebooks.size() != codebook_floats(w.shape) || w.scales.size() != w.rows)
    return invalid_argument("gemm_aqlm: empty or unpacked matrix");
  if (batch == 0 || batch > kMaxKernelBatch) return invalid_argument("gemm_aqlm: batch out of range");
  if (x == nullptr || y == nullptr) return invalid_argument("gemm_aqlm: null pointer");
  AqlmArgs a;
  a.w = &w;
  a.batch = batch;
  a.x = x;
  a.y = y;
  a.y_stride = w.rows;
  const size_t macs = size_t{w.rows} * w.cols * batch;
  detail::run_rows(k.rows, a, w.rows, kRowGrain, macs >= kParallelMinMacs ? pool : nullptr);
  return Status::ok();
}

}  // namespace submoe::kernels
