// Counter-based random tensor values for synthetic checkpoints: element i of a
// tensor depends only on (seed, tensor name, i), so any chunk can be generated
// independently, on any thread, in any order.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/model/synth_checkpoint.h"

namespace submoe::model {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr double kLinearStd = 0.02;

// splitmix64's output function: a bijective avalanche mix of 64 bits.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

// Uniform in the open interval (0, 1) from the top 53 bits.
double open_unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

double init_std(const CheckpointTensor& t) {
  if (t.init == SynthInit::kEmbedding) return 1.0;
  if (t.init == SynthInit::kRouter && t.shape.size() == 2 && t.shape[1] > 0)
    return std::max(kLinearStd, 1.0 / std::sqrt(static_cast<double>(t.shape[1])));
  return kLinearStd;
}

}  // namespace

// Acklam's rational approximation of the normal quantile: a rational function in
// the central region (no transcendental call for 95% of draws, which is what
// makes multi-GB generation disk-bound rather than Box-Muller-bound) and in
// sqrt(-2 ln p) in the tails.
double inverse_normal_cdf(double p) {
  static constexpr double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                  1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                  6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                  -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                  3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (!(p > 0.0)) return -INFINITY;
  if (!(p < 1.0)) return INFINITY;
  if (p < kLow) {
    const double q = std::sqrt(-2.0 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  if (p > 1.0 - kLow) {
    const double q = std::sqrt(-2.0 * std::log1p(-p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

Status fill_synth_tensor(uint64_t seed, const CheckpointTensor& t, io::DType dtype, uint64_t first,
                         std::span<uint8_t> out, ThreadPool* pool) {
  if (dtype != io::DType::kBF16 && dtype != io::DType::kF32)
    return invalid_argument("synthetic tensors are BF16 or F32, not " + std::string(io::dtype_name(dtype)));
  const size_t esize = io::dtype_size(dtype);
  if (out.size() % esize != 0)
    return invalid_argument("tensor '" + t.name + "': output of " + std::to_string(out.size()) +
                            " bytes is not a whole number of elements");
  const uint64_t count = out.size() / esize;
  const uint64_t numel = static_cast<uint64_t>(t.numel());
  if (first > numel || count > numel - first)
    return invalid_argument("tensor '" + t.name + "': elements [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") exceed its " + std::to_string(numel));

  const uint64_t key = mix64(mix64(seed + kGolden) ^ fnv1a64(t.name));
  const double stddev = init_std(t);
  auto value = [&](uint64_t i) -> float {
    switch (t.init) {
      case SynthInit::kOnes: return 1.0f;
      case SynthInit::kZeros: return 0.0f;
      case SynthInit::kNormal:
      case SynthInit::kEmbedding:
      case SynthInit::kRouter: break;
    }
    return static_cast<float>(stddev * inverse_normal_cdf(open_unit(mix64(key + (i + 1) * kGolden))));
  };
  auto run = [&](size_t begin, size_t end, int) {
    uint8_t* dst = out.data() + begin * esize;
    for (size_t j = begin; j < end; ++j, dst += esize) {
      const float v = value(first + j);
      if (dtype == io::DType::kBF16) {
        const uint16_t bits = float_to_bf16(v).bits;
        dst[0] = static_cast<uint8_t>(bits);
        dst[1] = static_cast<uint8_t>(bits >> 8);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        for (int b = 0; b < 4; ++b) dst[b] = static_cast<uint8_t>(bits >> (8 * b));
      }
    }
  };
  constexpr size_t kGrain = 1 << 14;
  if (pool && count >= 2 * kGrain) {
    pool->parallel_for(static_cast<size_t>(count), kGrain, run);
  } else {
    run(0, static_cast<size_t>(count), 0);
  }
  return Status::ok();
}

}  // namespace submoe::model
