// libFuzzer target: the NF4 format's untrusted-input surface (codec/nf4.h):
// from_fields (validation), the reference decoder and the value quantizer.
// The first bytes give the shape (rows <= 32, block 32 / 64 / 128, cols =
// block x (1..4)), the absmax storage (fp32, fp16, dq8) and whether the arrays
// are zero-padded to full size; the rest are the code bytes, the absmax bytes,
// then (dq8) absmax2 and the offset. Beyond "no crash":
//   - from_fields accepts exactly arrays of the documented sizes whose floats
//     pass the documented rules (an independent check written here);
//   - on acceptance every decoded value is finite and equals, bit for bit,
//     NF4[nibble] (high nibble = first column) times the block's absmax, both
//     computed here from the definition;
//   - quantize_value picks the nearest table value to v / a (clamped to
//     [-1, 1]; ties to the lower code), checked by brute force.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "submoe/codec/nf4.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::take;
using submoe::fuzz::same_bits;

float f32_at(const std::vector<uint8_t>& b, size_t i) {
  float v;
  std::memcpy(&v, b.data() + 4 * i, 4);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = 1 + r.u8() % 32;
  const uint32_t shape = r.u8();
  const uint32_t block = 32u << (shape % 3);
  const uint32_t cols = block * (1 + (shape >> 2) % 4);
  const auto scales = static_cast<nf4::Nf4Scales>((shape >> 4) % 3);
  const bool pad = (shape & 0x80) != 0;
  const size_t nblocks = size_t{rows} * (cols / block), ngroups = nf4::dq8_groups(nblocks);
  const size_t width = scales == nf4::Nf4Scales::kF32 ? 4 : scales == nf4::Nf4Scales::kF16 ? 2 : 1;
  const std::vector<uint8_t> codes = take(r, size_t{rows} * cols / 2, pad);
  const std::vector<uint8_t> absmax = take(r, nblocks * width, pad);
  std::vector<uint8_t> absmax2, offset;
  if (scales == nf4::Nf4Scales::kDq8) {
    absmax2 = take(r, 4 * ngroups, pad);
    offset = take(r, 4, pad);
  }

  // The block absmaxes by the documented rules, or "invalid".
  bool valid = codes.size() == size_t{rows} * cols / 2 && absmax.size() == nblocks * width;
  if (scales == nf4::Nf4Scales::kDq8) valid = valid && absmax2.size() == 4 * ngroups && offset.size() == 4;
  std::vector<float> a(nblocks);
  if (valid) {
    for (size_t g = 0; scales == nf4::Nf4Scales::kDq8 && g < ngroups; ++g)
      valid = valid && std::isfinite(f32_at(absmax2, g)) && f32_at(absmax2, g) >= 0.0f;
    if (scales == nf4::Nf4Scales::kDq8) valid = valid && std::isfinite(f32_at(offset, 0));
    for (size_t b = 0; valid && b < nblocks; ++b) {
      if (scales == nf4::Nf4Scales::kF32) {
        a[b] = f32_at(absmax, b);
        valid = std::isfinite(a[b]) && a[b] >= 0.0f;
      } else if (scales == nf4::Nf4Scales::kF16) {
        uint16_t h;
        std::memcpy(&h, absmax.data() + 2 * b, 2);
        a[b] = f16_bits_to_float(h);
        valid = std::isfinite(a[b]) && a[b] >= 0.0f;
      } else {
        const float p = nf4::kDynamic8[absmax[b]] * f32_at(absmax2, b / 256);
        a[b] = p + f32_at(offset, 0);
        valid = std::isfinite(a[b]);
      }
    }
  }
  auto m = nf4::from_fields(rows, cols, block, scales, {codes, absmax, absmax2, offset});
  require(m.is_ok() == valid);
  if (m.is_ok()) {
    const std::vector<float> w = nf4::decode(*m);
    require(w.size() == size_t{rows} * cols);
    for (size_t i = 0; i < w.size(); ++i) {
      const uint8_t byte = codes[i / 2];
      const uint32_t code = i % 2 == 0 ? byte >> 4 : byte & 0xF;
      const float want = nf4::kNf4[code] * a[i / block];
      require(std::isfinite(w[i]));
      require(same_bits(w[i], want));
    }
  }
  // The quantizer on the rest of the input read as (value, absmax) pairs.
  while (r.n >= 8) {
    uint32_t vb = r.u16() | (r.u16() << 16), ab = r.u16() | (r.u16() << 16);
    float v, am;
    std::memcpy(&v, &vb, 4);
    std::memcpy(&am, &ab, 4);
    if (!std::isfinite(v) || !std::isfinite(am) || am < 0.0f) continue;
    const uint8_t q = nf4::quantize_value(v, am);
    require(q < 16);
    const float u = std::fmin(1.0f, std::fmax(-1.0f, v * (1.0f / std::fmax(am, 1e-38f))));
    for (uint32_t k = 0; k < 16; ++k) {
      const float dk = std::fabs(u - nf4::kNf4[k]), dq = std::fabs(u - nf4::kNf4[q]);
      // q is nearest; among equally near codes, the lowest... up to the
      // rounding of bitsandbytes' float32 midpoints (a value within an ulp of
      // a midpoint may go either way).
      const float mid = (nf4::kNf4[k] + nf4::kNf4[q]) / 2.0f;
      require(dq <= dk || std::fabs(u - mid) <= 2e-7f);
    }
  }
  return 0;
}
