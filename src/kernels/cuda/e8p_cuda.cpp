// Host side of the CUDA E8P kernels: checked uploads and launches. Without
// CUDA the uploads fail with "unsupported" (DeviceBuffer), and so do launches.
#include "submoe/kernels/cuda/e8p_cuda.h"

#include <string>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/kernels/cuda/e8p_lane.h"

#if defined(SUBMOE_HAVE_CUDA) && SUBMOE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/e8p_launch.h"
#define SUBMOE_E8P_CUDA_ENABLED 1
#else
#define SUBMOE_E8P_CUDA_ENABLED 0
#endif

namespace submoe::kernels::cuda {

namespace {
// The device tables: 256 packed abs words, then 256 x 8 1-bit halves.
constexpr size_t kPackedBytes = e8p_lane::kEntries * sizeof(uint32_t);
constexpr size_t kTablesBytes = kPackedBytes + e8p_lane::kEntries * e8p_lane::kDim;
}  // namespace

Result<DeviceE8pMatrix> DeviceE8pMatrix::upload(const e8p::E8pMatrix& m) {
  SUBMOE_RETURN_IF_ERROR(e8p::check_bits(m.bits));
  SUBMOE_RETURN_IF_ERROR(e8p::check_shape(m.rows, m.cols));
  const size_t n = size_t{m.rows} * (m.cols / e8p::kDim);
  const bool stage2 = m.stage2() != e8p::Stage2::kNone;
  if (m.codes.size() != n || m.scales.size() != m.rows || m.residual.size() != (stage2 ? n : 0))
    return invalid_argument("DeviceE8pMatrix::upload: field sizes do not match the " + std::to_string(m.rows) + "x" +
                            std::to_string(m.cols) + " shape at " + std::to_string(m.bits) + " bits");
  std::vector<float> scales(m.rows);
  for (uint32_t r = 0; r < m.rows; ++r) scales[r] = f16_bits_to_float(m.scales[r]);
  std::vector<uint8_t> tables(kTablesBytes);
  for (uint32_t e = 0; e < e8p_lane::kEntries; ++e) {
    const uint32_t word = e8p::packed_abs_table()[e];
    for (uint32_t b = 0; b < 4; ++b) tables[4 * e + b] = static_cast<uint8_t>(word >> (8 * b));
    for (uint32_t i = 0; i < e8p_lane::kDim; ++i)
      tables[kPackedBytes + e * e8p_lane::kDim + i] = static_cast<uint8_t>(e8p::one_bit_halves()[e][i]);
  }
  DeviceE8pMatrix d;
  d.rows_ = m.rows;
  d.cols_ = m.cols;
  d.bits_ = m.bits;
  SUBMOE_ASSIGN_OR_RETURN(d.codes_, DeviceBuffer::allocate(n * sizeof(uint16_t)));
  SUBMOE_ASSIGN_OR_RETURN(d.scales_, DeviceBuffer::allocate(scales.size() * sizeof(float)));
  SUBMOE_ASSIGN_OR_RETURN(d.tables_, DeviceBuffer::allocate(tables.size()));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(d.codes_.data(), m.codes.data(), d.codes_.bytes()));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(d.scales_.data(), scales.data(), d.scales_.bytes()));
  SUBMOE_RETURN_IF_ERROR(copy_to_device(d.tables_.data(), tables.data(), d.tables_.bytes()));
  if (stage2) {
    SUBMOE_ASSIGN_OR_RETURN(d.residual_, DeviceBuffer::allocate(n * sizeof(uint16_t)));
    SUBMOE_RETURN_IF_ERROR(copy_to_device(d.residual_.data(), m.residual.data(), d.residual_.bytes()));
  }
  return d;
}

Status gemm_e8p_cuda(const DeviceE8pMatrix& w, const float* x, uint32_t batch, float* y, Stream stream) {
  if (batch < 1 || batch > e8p_lane::kMaxBatch)
    return invalid_argument("gemm_e8p_cuda: batch must be 1..64, got " + std::to_string(batch));
  if (x == nullptr || y == nullptr) return invalid_argument("gemm_e8p_cuda: null activations or output");
  if (w.codes() == nullptr || w.rows() == 0) return invalid_argument("gemm_e8p_cuda: the matrix is not uploaded");
#if SUBMOE_E8P_CUDA_ENABLED
  detail::E8pLaunch p;
  p.codes = w.codes();
  p.residual = w.residual();
  p.scales = w.scales();
  p.packed = static_cast<const uint32_t*>(w.tables());
  p.one_bit = reinterpret_cast<const int8_t*>(static_cast<const uint8_t*>(w.tables()) + kPackedBytes);
  p.x = x;
  p.y = y;
  p.rows = w.rows();
  p.cols = w.cols();
  p.batch = batch;
  const e8p::Stage2 s2 = e8p::stage2_of_bits(w.bits());
  p.stage2 = static_cast<uint32_t>(s2);
  p.rho = e8p::rho_of(s2);
  return detail::cuda_status(detail::launch_e8p_gemm(p, stream), "e8p gemm launch");
#else
  (void)stream;
  return unsupported("this build has no CUDA support (nvcc not found at configure time, or SUBMOE_CUDA=OFF)");
#endif
}

}  // namespace submoe::kernels::cuda
