// libFuzzer target: the E8P format's untrusted-input surface (codec/e8p.h):
// matrix_from_bytes (validation), the reference decoder and the lattice
// rounding. The first bytes give the shape (rows <= 16, cols = 8 x (1..16)),
// the rate (2, 3, 4 bits) and whether the arrays are zero-padded to full size;
// the rest are the codes, the residual and the scale bytes, then 8 f16 values
// for the rounding. Beyond "no crash":
//   - matrix_from_bytes accepts exactly arrays of the documented sizes whose
//     scales are finite (an independent check written here);
//   - on acceptance every decoded value is finite, and one coordinate per code
//     equals scale x (c1 + c2 / rho) rebuilt here from the packed table, the
//     sign/parity rule and the 1-bit table;
//   - nearest() of finite values is no farther than an exhaustive scan of all
//     65,536 codewords.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "submoe/codec/e8p.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::take;

// Coordinate i of E8P code c, from the packed table and the documented rule.
float e8p_coordinate(uint16_t c, uint32_t i) {
  static constexpr uint32_t kNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  uint32_t s = c & 0xffu;
  const uint32_t p = static_cast<uint32_t>(std::popcount(s)) & 1u;
  s ^= p;
  const int nib = static_cast<int>((e8p::packed_abs_table()[c >> 8] >> (4 * kNibble[i])) & 15u);
  float v = 0.5f * static_cast<float>(nib - 8);
  if ((s >> kNibble[i]) & 1u) v = -v;
  return v + (p ? -0.25f : 0.25f);
}

// Every codeword, rebuilt by e8p_coordinate.
const std::vector<float>& all_codewords() {
  static const std::vector<float> cb = [] {
    std::vector<float> v(size_t{65536} * 8);
    for (uint32_t c = 0; c < 65536; ++c)
      for (uint32_t i = 0; i < 8; ++i) v[size_t{c} * 8 + i] = e8p_coordinate(static_cast<uint16_t>(c), i);
    return v;
  }();
  return cb;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = 1 + r.u8() % 16;
  const uint32_t shape = r.u8();
  const uint32_t cols = 8 * (1 + shape % 16);
  const uint32_t bits = 2 + (shape >> 4) % 3;
  const bool pad = (shape & 0x80) != 0;
  const size_t n = size_t{rows} * cols / 8, rb = e8p::residual_bytes_per_code(bits);
  const std::vector<uint8_t> codes = take(r, n * 2, pad);
  const std::vector<uint8_t> residual = take(r, n * rb, pad);
  const std::vector<uint8_t> scales = take(r, size_t{rows} * 2, pad);
  auto m = e8p::matrix_from_bytes(rows, cols, bits, codes, residual, scales);
  bool valid = codes.size() == n * 2 && residual.size() == n * rb && scales.size() == size_t{rows} * 2;
  for (size_t i = 0; valid && i < rows; ++i) {
    uint16_t h;
    std::memcpy(&h, scales.data() + 2 * i, 2);
    valid = (h & 0x7c00u) != 0x7c00u;  // not inf / NaN
  }
  require(m.is_ok() == valid);
  if (m.is_ok()) {
    const std::vector<float> w = e8p::decode_matrix(*m);
    require(w.size() == size_t{rows} * cols);
    for (float v : w) require(std::isfinite(v));
    const float rho = bits == 3 ? e8p::kRho3 : e8p::kRho4;
    for (size_t k = 0; k < n; ++k) {
      const uint32_t row = static_cast<uint32_t>(k / (cols / 8)), i = static_cast<uint32_t>(k % 8);
      float v = e8p_coordinate(m->codes[k], i);
      if (bits == 4) v = v + e8p_coordinate(m->residual[k], i) / rho;
      if (bits == 3) v = v + 0.5f * static_cast<float>(e8p::one_bit_halves()[m->residual[k]][i]) / rho;
      require(w[row * cols + (k % (cols / 8)) * 8 + i] == f16_bits_to_float(m->scales[row]) * v);
    }
  }
  // The rounding of 8 finite f16 values.
  if (r.n >= 16) {
    float x[8];
    bool finite = true;
    for (float& v : x) {
      const uint16_t h = static_cast<uint16_t>(r.u8() | (r.u8() << 8));
      v = f16_bits_to_float(h);
      finite = finite && std::isfinite(v);
    }
    if (finite) {
      float got[8];
      e8p::decode(e8p::nearest(x), got);
      double d = 0, best = INFINITY;
      for (uint32_t i = 0; i < 8; ++i) d += (double{x[i]} - got[i]) * (double{x[i]} - got[i]);
      const std::vector<float>& cb = all_codewords();
      for (size_t c = 0; c < 65536; ++c) {
        double e = 0;
        for (uint32_t i = 0; i < 8; ++i) {
          const double diff = double{x[i]} - cb[c * 8 + i];
          e += diff * diff;
        }
        best = std::min(best, e);
      }
      require(d <= best * (1 + 1e-5) + 1e-6);
    }
  }
  return 0;
}
