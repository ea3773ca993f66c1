// Mirrors e8p_kernels.cu where the result depends on it: lane l's codes in
// order k = l, l + 32, ..., each code's 8 fused multiply-adds per token, the
// xor-butterfly over the 32 lanes, the scale applied last.
#include "submoe/kernels/cuda/e8p_emulator.h"

#include <string>

#include "submoe/core/bf16.h"
#include "submoe/kernels/cuda/e8p_lane.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda {

Result<std::vector<float>> emulate_gemm_e8p_cuda(const e8p::E8pMatrix& m, std::span<const float> x, uint32_t batch) {
  namespace lane = e8p_lane;
  constexpr uint32_t kWarp = cuda_lane::kWarpSize;
  SUBMOE_RETURN_IF_ERROR(e8p::check_bits(m.bits));
  SUBMOE_RETURN_IF_ERROR(e8p::check_shape(m.rows, m.cols));
  if (batch < 1 || batch > lane::kMaxBatch) return invalid_argument("batch must be 1..64, got " + std::to_string(batch));
  const uint32_t per_row = m.cols / lane::kDim;
  const size_t n = size_t{m.rows} * per_row;
  const e8p::Stage2 s2 = m.stage2();
  if (m.codes.size() != n || m.scales.size() != m.rows || m.residual.size() != (s2 == e8p::Stage2::kNone ? 0 : n))
    return invalid_argument("emulate_gemm_e8p_cuda: field sizes do not match the shape");
  if (x.size() != size_t{batch} * m.cols) return invalid_argument("emulate_gemm_e8p_cuda: x has the wrong size");
  std::vector<int8_t> one_bit(size_t{lane::kEntries} * lane::kDim);
  for (uint32_t e = 0; e < lane::kEntries; ++e)
    for (uint32_t i = 0; i < lane::kDim; ++i) one_bit[e * lane::kDim + i] = e8p::one_bit_halves()[e][i];
  const uint32_t stage2 = static_cast<uint32_t>(s2);
  const float rho = e8p::rho_of(s2);
  std::vector<float> y(size_t{batch} * m.rows);
  std::vector<float> acc(size_t{kWarp} * batch);
  for (uint32_t r = 0; r < m.rows; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (uint32_t l = 0; l < kWarp; ++l)
      for (uint32_t k = l; k < per_row; k += kWarp) {
        const size_t i = size_t{r} * per_row + k;
        float w[lane::kDim];
        lane::weights(e8p::packed_abs_table().data(), one_bit.data(), stage2, rho, m.codes[i],
                      stage2 == lane::kStage2None ? 0u : m.residual[i], w);
        for (uint32_t t = 0; t < batch; ++t) {
          float a = acc[size_t{t} * kWarp + l];
          const float* xt = x.data() + size_t{t} * m.cols + size_t{k} * lane::kDim;
          for (uint32_t j = 0; j < lane::kDim; ++j) a = cuda_lane::lane_fma(w[j], xt[j], a);
          acc[size_t{t} * kWarp + l] = a;
        }
      }
    const float scale = f16_bits_to_float(m.scales[r]);
    for (uint32_t t = 0; t < batch; ++t)
      y[size_t{t} * m.rows + r] = scale * cuda_lane::butterfly_sum_emulated(acc.data() + size_t{t} * kWarp);
  }
  return y;
}

}  // namespace submoe::kernels::cuda
