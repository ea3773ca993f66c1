#include "submoe/codec/nf4.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "submoe/core/bf16.h"

namespace submoe::nf4 {

const float kNf4[16] = {-1.0f,
                        -0.6961928009986877f,
                        -0.5250730514526367f,
                        -0.39491748809814453f,
                        -0.28444138169288635f,
                        -0.18477343022823334f,
                        -0.09105003625154495f,
                        0.0f,
                        0.07958029955625534f,
                        0.16093020141124725f,
                        0.24611230194568634f,
                        0.33791524171829224f,
                        0.44070982933044434f,
                        0.5626170039176941f,
                        0.7229568362236023f,
                        1.0f};

// The float32 values bitsandbytes' create_dynamic_map(signed=True,
// max_exponent_bits=7, total_bits=8) produces: for i = 0..6, the 2^i midpoints
// of linspace(0.1, 1, 2^i + 1) (float32) times +-10^(i - 6), plus 0 and 1,
// sorted. tests/codec/nf4_test.cpp recomputes them from that formula and
// compares with the map bitsandbytes 0.50.2 itself printed (tests/fixtures/nf4).
const float kDynamic8[256] = {
    -0x1.fc6666p-1f, -0x1.f53334p-1f, -0x1.eep-1f, -0x1.e6ccccp-1f,
    -0x1.df999ap-1f, -0x1.d86666p-1f, -0x1.d13334p-1f, -0x1.cap-1f,
    -0x1.c2ccccp-1f, -0x1.bb999ap-1f, -0x1.b46666p-1f, -0x1.ad3334p-1f,
    -0x1.a6p-1f, -0x1.9eccccp-1f, -0x1.97999ap-1f, -0x1.906666p-1f,
    -0x1.893334p-1f, -0x1.82p-1f, -0x1.7accccp-1f, -0x1.73999ap-1f,
    -0x1.6c6668p-1f, -0x1.653334p-1f, -0x1.5ep-1f, -0x1.56ccccp-1f,
    -0x1.4f999ap-1f, -0x1.486668p-1f, -0x1.413334p-1f, -0x1.3ap-1f,
    -0x1.32ccccp-1f, -0x1.2b999ap-1f, -0x1.246668p-1f, -0x1.1d3334p-1f,
    -0x1.16p-1f, -0x1.0eccccp-1f, -0x1.079998p-1f, -0x1.006666p-1f,
    -0x1.f26664p-2f, -0x1.e4p-2f, -0x1.d59998p-2f, -0x1.c73334p-2f,
    -0x1.b8ccccp-2f, -0x1.aa6666p-2f, -0x1.9cp-2f, -0x1.8d9998p-2f,
    -0x1.7f3334p-2f, -0x1.70ccccp-2f, -0x1.626666p-2f, -0x1.54p-2f,
    -0x1.459998p-2f, -0x1.373334p-2f, -0x1.28ccccp-2f, -0x1.1a6668p-2f,
    -0x1.0cp-2f, -0x1.fb3332p-3f, -0x1.de6666p-3f, -0x1.c1999ap-3f,
    -0x1.a4ccccp-3f, -0x1.88p-3f, -0x1.6b3334p-3f, -0x1.4e6666p-3f,
    -0x1.31999ap-3f, -0x1.14ccccp-3f, -0x1.fp-4f, -0x1.b66668p-4f,
    -0x1.93d70ap-4f, -0x1.8851eep-4f, -0x1.7ccccep-4f, -0x1.7147aep-4f,
    -0x1.65c29p-4f, -0x1.5a3d7p-4f, -0x1.4eb854p-4f, -0x1.433334p-4f,
    -0x1.37ae14p-4f, -0x1.2c28f6p-4f, -0x1.20a3d6p-4f, -0x1.151ebap-4f,
    -0x1.09999ap-4f, -0x1.fc28f6p-5f, -0x1.e51ebap-5f, -0x1.ce147ap-5f,
    -0x1.b70a3ep-5f, -0x1.ap-5f, -0x1.88f5c2p-5f, -0x1.71eb86p-5f,
    -0x1.5ae146p-5f, -0x1.43d70ap-5f, -0x1.2ccccep-5f, -0x1.15c29p-5f,
    -0x1.fd70a4p-6f, -0x1.cf5c2ap-6f, -0x1.a147aep-6f, -0x1.733334p-6f,
    -0x1.451ebap-6f, -0x1.170a3ep-6f, -0x1.d1eb86p-7f, -0x1.75c29p-7f,
    -0x1.3e76c8p-7f, -0x1.2c083p-7f, -0x1.19999ap-7f, -0x1.072b02p-7f,
    -0x1.e978d4p-8f, -0x1.c49ba6p-8f, -0x1.9fbe76p-8f, -0x1.7ae148p-8f,
    -0x1.56041ap-8f, -0x1.3126e8p-8f, -0x1.0c49bap-8f, -0x1.ced914p-9f,
    -0x1.851eb8p-9f, -0x1.3b645ap-9f, -0x1.e353f8p-10f, -0x1.4fdf3ap-10f,
    -0x1.eecbfep-11f, -0x1.b3d07cp-11f, -0x1.78d5p-11f, -0x1.3dd982p-11f,
    -0x1.02de02p-11f, -0x1.8fc506p-12f, -0x1.19ce0ap-12f, -0x1.47ae16p-13f,
    -0x1.743e96p-14f, -0x1.15df66p-14f, -0x1.6f0068p-15f, -0x1.64840cp-16f,
    -0x1.040bfep-17f, -0x1.b43528p-19f, -0x1.27476ep-21f, 0x0.0p+0f,
    0x1.27476ep-21f, 0x1.b43528p-19f, 0x1.040bfep-17f, 0x1.64840cp-16f,
    0x1.6f0068p-15f, 0x1.15df66p-14f, 0x1.743e96p-14f, 0x1.47ae16p-13f,
    0x1.19ce0ap-12f, 0x1.8fc506p-12f, 0x1.02de02p-11f, 0x1.3dd982p-11f,
    0x1.78d5p-11f, 0x1.b3d07cp-11f, 0x1.eecbfep-11f, 0x1.4fdf3ap-10f,
    0x1.e353f8p-10f, 0x1.3b645ap-9f, 0x1.851eb8p-9f, 0x1.ced914p-9f,
    0x1.0c49bap-8f, 0x1.3126e8p-8f, 0x1.56041ap-8f, 0x1.7ae148p-8f,
    0x1.9fbe76p-8f, 0x1.c49ba6p-8f, 0x1.e978d4p-8f, 0x1.072b02p-7f,
    0x1.19999ap-7f, 0x1.2c083p-7f, 0x1.3e76c8p-7f, 0x1.75c29p-7f,
    0x1.d1eb86p-7f, 0x1.170a3ep-6f, 0x1.451ebap-6f, 0x1.733334p-6f,
    0x1.a147aep-6f, 0x1.cf5c2ap-6f, 0x1.fd70a4p-6f, 0x1.15c29p-5f,
    0x1.2ccccep-5f, 0x1.43d70ap-5f, 0x1.5ae146p-5f, 0x1.71eb86p-5f,
    0x1.88f5c2p-5f, 0x1.ap-5f, 0x1.b70a3ep-5f, 0x1.ce147ap-5f,
    0x1.e51ebap-5f, 0x1.fc28f6p-5f, 0x1.09999ap-4f, 0x1.151ebap-4f,
    0x1.20a3d6p-4f, 0x1.2c28f6p-4f, 0x1.37ae14p-4f, 0x1.433334p-4f,
    0x1.4eb854p-4f, 0x1.5a3d7p-4f, 0x1.65c29p-4f, 0x1.7147aep-4f,
    0x1.7ccccep-4f, 0x1.8851eep-4f, 0x1.93d70ap-4f, 0x1.b66668p-4f,
    0x1.fp-4f, 0x1.14ccccp-3f, 0x1.31999ap-3f, 0x1.4e6666p-3f,
    0x1.6b3334p-3f, 0x1.88p-3f, 0x1.a4ccccp-3f, 0x1.c1999ap-3f,
    0x1.de6666p-3f, 0x1.fb3332p-3f, 0x1.0cp-2f, 0x1.1a6668p-2f,
    0x1.28ccccp-2f, 0x1.373334p-2f, 0x1.459998p-2f, 0x1.54p-2f,
    0x1.626666p-2f, 0x1.70ccccp-2f, 0x1.7f3334p-2f, 0x1.8d9998p-2f,
    0x1.9cp-2f, 0x1.aa6666p-2f, 0x1.b8ccccp-2f, 0x1.c73334p-2f,
    0x1.d59998p-2f, 0x1.e4p-2f, 0x1.f26664p-2f, 0x1.006666p-1f,
    0x1.079998p-1f, 0x1.0eccccp-1f, 0x1.16p-1f, 0x1.1d3334p-1f,
    0x1.246668p-1f, 0x1.2b999ap-1f, 0x1.32ccccp-1f, 0x1.3ap-1f,
    0x1.413334p-1f, 0x1.486668p-1f, 0x1.4f999ap-1f, 0x1.56ccccp-1f,
    0x1.5ep-1f, 0x1.653334p-1f, 0x1.6c6668p-1f, 0x1.73999ap-1f,
    0x1.7accccp-1f, 0x1.82p-1f, 0x1.893334p-1f, 0x1.906666p-1f,
    0x1.97999ap-1f, 0x1.9eccccp-1f, 0x1.a6p-1f, 0x1.ad3334p-1f,
    0x1.b46666p-1f, 0x1.bb999ap-1f, 0x1.c2ccccp-1f, 0x1.cap-1f,
    0x1.d13334p-1f, 0x1.d86666p-1f, 0x1.df999ap-1f, 0x1.e6ccccp-1f,
    0x1.eep-1f, 0x1.f53334p-1f, 0x1.fc6666p-1f, 0x1.0p+0f,
};

namespace {

constexpr float kHalfMax = 65504.0f;

// Midpoints between neighbouring table values, in float32 as bitsandbytes
// forms them ((a + b) / 2).
template <size_t N>
std::array<float, N - 1> midpoints(const float (&t)[N]) {
  std::array<float, N - 1> m{};
  for (size_t i = 0; i + 1 < N; ++i) m[i] = (t[i] + t[i + 1]) / 2.0f;
  return m;
}

// bucketize(u, bounds) with right=False: the number of bounds strictly below u.
template <size_t N>
uint32_t bucketize(float u, const std::array<float, N>& bounds) {
  return static_cast<uint32_t>(std::lower_bound(bounds.begin(), bounds.end(), u) - bounds.begin());
}

float load_f32(std::span<const uint8_t> bytes, size_t i) {
  float v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

std::string shape_text(uint32_t rows, uint32_t cols) {
  std::string s = "[";  // (appending: GCC 12's -Wrestrict misfires on "[" + std::string)
  s += std::to_string(rows);
  s += ", ";
  s += std::to_string(cols);
  s += "]";
  return s;
}

}  // namespace

std::string_view scales_name(Nf4Scales s) {
  switch (s) {
    case Nf4Scales::kF32: return "fp32";
    case Nf4Scales::kF16: return "fp16";
    case Nf4Scales::kDq8: return "dq8";
  }
  return "?";
}

Status check_block(uint32_t block) {
  if (block < 32 || block > 4096 || !std::has_single_bit(block))
    return invalid_argument("nf4: block size " + std::to_string(block) +
                            " (bitsandbytes' block sizes are the powers of two from 32 to 4096)");
  return Status::ok();
}

Status check_shape(uint32_t rows, uint32_t cols, uint32_t block) {
  SUBMOE_RETURN_IF_ERROR(check_block(block));
  if (rows == 0 || cols == 0 || cols % block != 0)
    return invalid_argument("nf4: a " + shape_text(rows, cols) + " matrix; blocks of " + std::to_string(block) +
                            " columns need a positive multiple of " + std::to_string(block) + " columns");
  return Status::ok();
}

size_t Nf4Matrix::bytes() const {
  return codes.size() + 4 * absmax_f32.size() + 2 * absmax_f16.size() + absmax_codes.size() + 4 * absmax2.size() +
         (scales == Nf4Scales::kDq8 ? 4 : 0);
}

float Nf4Matrix::absmax(size_t b) const {
  switch (scales) {
    case Nf4Scales::kF32: return absmax_f32[b];
    case Nf4Scales::kF16: return f16_bits_to_float(absmax_f16[b]);
    case Nf4Scales::kDq8: {
      const float a = kDynamic8[absmax_codes[b]] * absmax2[b / kDq8Group];
      return a + offset;
    }
  }
  return 0.0f;
}

Result<Nf4Matrix> from_fields(uint32_t rows, uint32_t cols, uint32_t block, Nf4Scales scales, const Nf4Fields& f) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols, block));
  Nf4Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.block = block;
  m.scales = scales;
  const size_t ncodes = size_t{rows} * cols / 2, nblocks = m.blocks();
  const size_t absmax_width = scales == Nf4Scales::kF32 ? 4 : scales == Nf4Scales::kF16 ? 2 : 1;
  if (f.codes.size() != ncodes || f.absmax.size() != nblocks * absmax_width)
    return corrupt_data("nf4: " + std::to_string(f.codes.size()) + " code bytes and " +
                        std::to_string(f.absmax.size()) + " absmax bytes for a " + shape_text(rows, cols) +
                        " matrix in blocks of " + std::to_string(block) + " (expected " + std::to_string(ncodes) +
                        " and " + std::to_string(nblocks * absmax_width) + ")");
  m.codes.assign(f.codes.begin(), f.codes.end());
  auto bad_scale = [&](size_t b, float v) {
    return corrupt_data("nf4: the absmax of row " + std::to_string(b / (cols / block)) + ", block " +
                        std::to_string(b % (cols / block)) + " is " + std::to_string(v) +
                        " (an absmax is finite and not negative)");
  };
  switch (scales) {
    case Nf4Scales::kF32:
      m.absmax_f32.resize(nblocks);
      for (size_t b = 0; b < nblocks; ++b) {
        const float v = load_f32(f.absmax, b);
        if (!std::isfinite(v) || v < 0.0f) return bad_scale(b, v);
        m.absmax_f32[b] = v;
      }
      break;
    case Nf4Scales::kF16:
      m.absmax_f16.resize(nblocks);
      for (size_t b = 0; b < nblocks; ++b) {
        uint16_t h;
        std::memcpy(&h, f.absmax.data() + 2 * b, 2);
        const float v = f16_bits_to_float(h);
        if (!std::isfinite(v) || v < 0.0f) return bad_scale(b, v);
        m.absmax_f16[b] = h;
      }
      break;
    case Nf4Scales::kDq8: {
      const size_t ngroups = dq8_groups(nblocks);
      if (f.absmax2.size() != 4 * ngroups || f.offset.size() != 4)
        return corrupt_data("nf4: " + std::to_string(f.absmax2.size()) + " absmax2 bytes and " +
                            std::to_string(f.offset.size()) + " offset bytes for " + std::to_string(nblocks) +
                            " double-quantized blocks (expected " + std::to_string(4 * ngroups) + " and 4)");
      m.absmax_codes.assign(f.absmax.begin(), f.absmax.end());
      m.absmax2.resize(ngroups);
      for (size_t g = 0; g < ngroups; ++g) {
        const float v = load_f32(f.absmax2, g);
        if (!std::isfinite(v) || v < 0.0f)
          return corrupt_data("nf4: absmax2 " + std::to_string(g) + " is " + std::to_string(v) +
                              " (finite and not negative)");
        m.absmax2[g] = v;
      }
      m.offset = load_f32(f.offset, 0);
      if (!std::isfinite(m.offset)) return corrupt_data("nf4: the double-quantization offset is not finite");
      // Finite parts can still decode to an infinite absmax (absmax2 and the
      // offset near FLT_MAX): never a weight the kernels would turn into inf.
      for (size_t b = 0; b < nblocks; ++b)
        if (!std::isfinite(m.absmax(b)))
          return corrupt_data("nf4: the double-quantized absmax of row " + std::to_string(b / (cols / block)) +
                              ", block " + std::to_string(b % (cols / block)) + " decodes to " +
                              std::to_string(m.absmax(b)));
      break;
    }
  }
  return m;
}

std::vector<float> decode(const Nf4Matrix& m) {
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (size_t i = 0; i < w.size(); ++i) {
    const uint8_t byte = m.codes[i / 2];
    const uint8_t code = i % 2 == 0 ? byte >> 4 : byte & 0xF;
    w[i] = kNf4[code] * m.absmax(i / m.block);
  }
  return w;
}

float block_absmax(std::span<const float> block, Nf4Scales scales) {
  float a = 0.0f;
  for (float v : block) a = std::max(a, std::abs(v));
  if (scales == Nf4Scales::kF16) return f16_bits_to_float(float_to_f16_bits(std::min(a, kHalfMax)));
  return a;
}

uint8_t quantize_value(float v, float a) {
  static const auto bounds = midpoints(kNf4);
  const float inv = 1.0f / std::max(a, 1e-38f);
  const float u = std::clamp(v * inv, -1.0f, 1.0f);
  return static_cast<uint8_t>(bucketize(u, bounds));
}

void double_quantize(std::span<const float> absmax, Nf4Matrix* m) {
  static const auto bounds = midpoints(kDynamic8);
  double sum = 0;
  for (float a : absmax) sum += a;
  const float offset = absmax.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(absmax.size()));
  m->offset = offset;
  m->absmax_codes.resize(absmax.size());
  m->absmax2.assign(dq8_groups(absmax.size()), 0.0f);
  for (size_t g0 = 0; g0 < absmax.size(); g0 += kDq8Group) {
    const size_t g1 = std::min(absmax.size(), g0 + kDq8Group);
    float a2 = 0.0f;
    for (size_t b = g0; b < g1; ++b) a2 = std::max(a2, std::abs(absmax[b] - offset));
    m->absmax2[g0 / kDq8Group] = a2;
    const float inv = 1.0f / std::max(a2, 1e-38f);
    for (size_t b = g0; b < g1; ++b)
      m->absmax_codes[b] =
          static_cast<uint8_t>(bucketize(std::clamp((absmax[b] - offset) * inv, -1.0f, 1.0f), bounds));
  }
}

std::vector<uint8_t> pack_codes(std::span<const uint8_t> codes) {
  std::vector<uint8_t> out(codes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>((codes[2 * i] << 4) | (codes[2 * i + 1] & 0xF));
  return out;
}

}  // namespace submoe::nf4
