// libFuzzer target: the MXFP4 format's untrusted-input surface (codec/mxfp4.h):
// from_fields (validation), the reference decoder and the group quantizer.
// The first bytes give the shape (rows <= 64, cols = 32 x (1..4)) and whether
// the arrays are zero-padded to full size; the rest are the code bytes and the
// scales. Beyond "no crash":
//   - from_fields accepts exactly arrays of the documented sizes whose scales
//     are all <= kMaxScale (an independent check written here);
//   - on acceptance every decoded value is finite and equals, bit for bit, the
//     E2M1 value of its nibble (low nibble = even column) times 2^(s - 127),
//     both computed here from the format's definition;
//   - re-quantizing each decoded group (group_scale, quantize_value) gives
//     back exactly the same values (MXFP4 input is a fixed point of the
//     encoder: what makes hub experts re-encode losslessly).
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "submoe/codec/mxfp4.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::same_bits;

// E2M1 from its fields: sign, 2-bit exponent (bias 1), 1-bit mantissa.
double e2m1(uint32_t code) {
  const uint32_t e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, static_cast<int>(e) - 1);
  return (code >> 3) ? -mag : mag;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = 1 + r.u8() % 64;
  const uint32_t shape = r.u8();
  const uint32_t cols = 32 * (1 + shape % 4);
  const bool pad = (shape & 0x80) != 0;
  const size_t nblocks = size_t{rows} * cols / 2, nscales = size_t{rows} * (cols / 32);
  std::vector<uint8_t> blocks, scales;
  while (blocks.size() < nblocks && r.n > 0) blocks.push_back(static_cast<uint8_t>(r.u8()));
  while (scales.size() < nscales && r.n > 0) scales.push_back(static_cast<uint8_t>(r.u8()));
  if (pad) {
    blocks.resize(nblocks, 0);
    scales.resize(nscales, 127);
  }
  bool valid = blocks.size() == nblocks && scales.size() == nscales;
  for (uint8_t s : scales) valid = valid && s <= mxfp4::kMaxScale;
  auto m = mxfp4::from_fields(rows, cols, blocks, scales);
  require(m.is_ok() == valid);
  if (!m.is_ok()) return 0;
  const std::vector<float> w = mxfp4::decode(*m);
  require(w.size() == size_t{rows} * cols);
  for (uint32_t row = 0; row < rows; ++row)
    for (uint32_t c = 0; c < cols; ++c) {
      const uint8_t byte = blocks[(size_t{row} * cols + c) / 2];
      const uint32_t code = c % 2 == 0 ? byte & 0xF : byte >> 4;
      const double want = e2m1(code) * std::ldexp(1.0, scales[size_t{row} * (cols / 32) + c / 32] - 127);
      const float got = w[size_t{row} * cols + c];
      require(std::isfinite(got));
      require(same_bits(got, static_cast<float>(want)) || (got == 0.0f && want == 0.0));
    }
  for (size_t g = 0; g < w.size(); g += 32) {
    const std::span<const float> group(&w[g], 32);
    const uint8_t s = mxfp4::group_scale(group);
    require(s <= mxfp4::kMaxScale);
    for (float v : group) {
      const float back = mxfp4::fp4_e2m1_value(mxfp4::quantize_value(v, s)) * mxfp4::e8m0_value(s);
      require(back == v);
    }
  }
  return 0;
}
