#include "submoe/codec/mxfp4.h"

#include <algorithm>
#include <cmath>
#include <string>


namespace submoe::mxfp4 {

const int8_t kFp4Twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float fp4_e2m1_value(uint8_t code) { return 0.5f * static_cast<float>(kFp4Twice[code & 0xF]); }
float e8m0_value(uint8_t scale) { return std::ldexp(1.0f, static_cast<int>(scale) - 127); }

Status check_shape(uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || cols % kBlock != 0)
    return invalid_argument("mxfp4: a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                            "] matrix; MXFP4 scales blocks of 32 columns, so columns must be a positive multiple "
                            "of 32");
  return Status::ok();
}

Result<Mxfp4Matrix> from_fields(uint32_t rows, uint32_t cols, std::span<const uint8_t> blocks,
                                std::span<const uint8_t> scales) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
  const size_t nblocks = size_t{rows} * cols / 2, nscales = size_t{rows} * (cols / kBlock);
  if (blocks.size() != nblocks || scales.size() != nscales)
    return corrupt_data("mxfp4: " + std::to_string(blocks.size()) + " code bytes and " +
                        std::to_string(scales.size()) + " scales for a [" + std::to_string(rows) + ", " +
                        std::to_string(cols) + "] matrix (expected " + std::to_string(nblocks) + " and " +
                        std::to_string(nscales) + ")");
  for (size_t i = 0; i < scales.size(); ++i)
    if (scales[i] > kMaxScale)
      return corrupt_data("mxfp4: scale " + std::to_string(scales[i]) + " of row " +
                          std::to_string(i / (cols / kBlock)) + ", block " +
                          std::to_string(i % (cols / kBlock)) +
                          (scales[i] == 0xFF ? " is the E8M0 NaN" : " overflows float") + " (at most " +
                          std::to_string(kMaxScale) + ")");
  Mxfp4Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.blocks.assign(blocks.begin(), blocks.end());
  m.scales.assign(scales.begin(), scales.end());
  return m;
}

std::vector<float> decode(const Mxfp4Matrix& m) {
  std::vector<float> w(size_t{m.rows} * m.cols);
  const uint32_t nb = m.cols / kBlock;
  for (uint32_t r = 0; r < m.rows; ++r)
    for (uint32_t c = 0; c < m.cols; ++c) {
      const uint8_t byte = m.blocks[(size_t{r} * m.cols + c) / 2];
      const uint8_t code = c % 2 == 0 ? byte & 0xF : byte >> 4;
      w[size_t{r} * m.cols + c] =
          fp4_e2m1_value(code) * e8m0_value(m.scales[size_t{r} * nb + c / kBlock]);
    }
  return w;
}

namespace {

double squared_error(std::span<const float> group, uint8_t s) {
  double e = 0;
  for (float v : group) {
    const double d = double{v} - double{fp4_e2m1_value(quantize_value(v, s))} * e8m0_value(s);
    e += d * d;
  }
  return e;
}

}  // namespace

uint8_t group_scale(std::span<const float> group) {
  float amax = 0.0f;
  for (float v : group) amax = std::max(amax, std::abs(v));
  if (!(amax > 0.0f) || !std::isfinite(amax)) return amax > 0.0f ? kMaxScale : 0;
  int e = 0;
  std::frexp(amax, &e);  // amax = f 2^e, f in [0.5, 1): floor(log2 amax) = e - 1
  const int max_scale = kMaxScale;
  const auto ocp = static_cast<uint8_t>(std::clamp((e - 1) - 2 + 127, 0, max_scale));
  if (ocp == max_scale) return ocp;
  const auto up = static_cast<uint8_t>(ocp + 1);
  return squared_error(group, up) < squared_error(group, ocp) ? up : ocp;
}

uint8_t quantize_value(float v, uint8_t s) {
  // |v| / scale exactly (a power of two), then the nearest of
  // {0, .5, 1, 1.5, 2, 3, 4, 6}; at a midpoint the even code wins.
  static constexpr float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float a = std::abs(v) / e8m0_value(s);
  uint8_t best = 7;
  if (!(a >= 6.0f)) {  // NaN saturates too: nothing here produces one
    for (uint8_t k = 0; k < 7; ++k) {
      const float mid = 0.5f * (kGrid[k] + kGrid[k + 1]);
      if (a < mid || (a == mid && k % 2 == 0)) {
        best = k;
        break;
      }
    }
  }
  if (best == 0) return 0;  // no negative zero
  return static_cast<uint8_t>(best | (std::signbit(v) ? 8 : 0));
}

}  // namespace submoe::mxfp4
