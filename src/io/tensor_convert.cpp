// Conversions of tensor bytes (little-endian, possibly unaligned) to f32 / bf16.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

// OCP FP8 E4M3 "fn" variant (the one safetensors' F8_E4M3 means): bias 7, no
// infinities, S.1111.111 is NaN, max 448.
float f8e4m3_to_float(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  const int e = (b >> 3) & 0xf;
  const int m = b & 0x7;
  float v;
  if (e == 0xf && m == 0x7) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), -9);  // m/8 * 2^-6
  } else {
    v = std::ldexp(static_cast<float>(8 + m), e - 10);  // (1 + m/8) * 2^(e-7)
  }
  return neg ? -v : v;
}

const std::array<float, 256>& f8e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = f8e4m3_to_float(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

bool is_float_dtype(DType d) {
  switch (d) {
    case DType::kBF16:
    case DType::kF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return true;
    default:
      return false;
  }
}

Status check_target(const TensorView& t, size_t out_size, const char* what) {
  if (!is_float_dtype(t.dtype))
    return invalid_argument("tensor '" + t.name + "': cannot convert " + std::string(dtype_name(t.dtype)) + " to " +
                            what);
  const int64_t n = t.numel();
  if (n < 0 || static_cast<uint64_t>(n) * dtype_size(t.dtype) != t.nbytes)
    return invalid_argument("tensor '" + t.name + "': view is inconsistent (numel " + std::to_string(n) +
                            ", nbytes " + std::to_string(t.nbytes) + ")");
  if (static_cast<uint64_t>(n) != out_size)
    return invalid_argument("tensor '" + t.name + "': output holds " + std::to_string(out_size) +
                            " elements, tensor has " + std::to_string(n));
  if (n > 0 && t.data == nullptr) return invalid_argument("tensor '" + t.name + "': no data");
  return Status::ok();
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// out [rows, cols] (the stored values) times the weight's block scales, in
// float32 (DeepSeek's weight_dequant).
Status apply_block_scale(const TensorView& t, std::span<float> out) {
  const TensorView& scale = *t.block_scale;
  if (t.shape.size() != 2 || t.block_rows <= 0 || t.block_cols <= 0)
    return invalid_argument("tensor '" + t.name + "': a part of a block-scaled FP8 weight cannot be read alone");
  const auto rows = static_cast<size_t>(t.shape[0]), cols = static_cast<size_t>(t.shape[1]);
  const auto br = static_cast<size_t>(t.block_rows), bc = static_cast<size_t>(t.block_cols);
  const size_t scale_cols = (cols + bc - 1) / bc;
  if (scale.shape.size() != 2 || static_cast<size_t>(scale.shape[0]) != (rows + br - 1) / br ||
      static_cast<size_t>(scale.shape[1]) != scale_cols)
    return invalid_argument("tensor '" + t.name + "': block scale '" + scale.name + "' " + scale.shape_string() +
                            " does not tile it");
  std::vector<float> s(static_cast<size_t>(scale.numel()));
  TensorView plain = scale;
  plain.block_scale = nullptr;
  SUBMOE_RETURN_IF_ERROR(read_as_f32(plain, s));
  for (size_t r = 0; r < rows; ++r) {
    const float* srow = &s[(r / br) * scale_cols];
    float* o = &out[r * cols];
    for (size_t c = 0; c < cols; ++c) o[c] *= srow[c / bc];
  }
  return Status::ok();
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status read_as_f32(const TensorView& t, std::span<float> out) {
  SUBMOE_RETURN_IF_ERROR(check_target(t, out.size(), "F32"));
  const uint8_t* p = t.data;
  const size_t n = out.size();
  switch (t.dtype) {
    case DType::kF32:
      if (n) std::memcpy(out.data(), p, n * sizeof(float));
      break;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(bf16_t{load<uint16_t>(p + 2 * i)});
      break;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) out[i] = f16_bits_to_float(load<uint16_t>(p + 2 * i));
      break;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      break;
    case DType::kF8E4M3: {
      const auto& table = f8e4m3_table();
      for (size_t i = 0; i < n; ++i) out[i] = table[p[i]];
      break;
    }
    case DType::kF8E5M2:
      // E5M2 is the upper byte of an IEEE half.
      for (size_t i = 0; i < n; ++i) out[i] = f16_bits_to_float(static_cast<uint16_t>(p[i] << 8));
      break;
    default:
      return internal_error("unreachable dtype");
  }
  if (t.block_scale != nullptr) return apply_block_scale(t, out);
  return Status::ok();
}

Status read_as_bf16(const TensorView& t, std::span<bf16_t> out) {
  SUBMOE_RETURN_IF_ERROR(check_target(t, out.size(), "BF16"));
  const size_t n = out.size();
  if (t.block_scale != nullptr) {
    // Scaled in float32 over the whole matrix, then rounded once.
    SUBMOE_ASSIGN_OR_RETURN(const std::vector<float> f, to_f32(t));
    for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16(f[i]);
    return Status::ok();
  }
  if (t.dtype == DType::kBF16) {
    if (n) std::memcpy(out.data(), t.data, n * sizeof(bf16_t));
    return Status::ok();
  }
  // Through f32 in blocks: every source float type converts to f32 exactly
  // (F64 aside, which rounds twice, f64->f32->bf16, like torch's .to()).
  constexpr size_t kBlock = 4096;
  float tmp[kBlock];
  TensorView part = t;
  const size_t esize = dtype_size(t.dtype);
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    part.data = t.data + i * esize;
    part.shape = {static_cast<int64_t>(m)};
    part.nbytes = m * esize;
    SUBMOE_RETURN_IF_ERROR(read_as_f32(part, std::span<float>(tmp, m)));
    for (size_t j = 0; j < m; ++j) out[i + j] = float_to_bf16(tmp[j]);
  }
  return Status::ok();
}

Result<std::vector<float>> to_f32(const TensorView& t) {
  const int64_t n = t.numel();
  if (n < 0) return invalid_argument("tensor '" + t.name + "': negative numel");
  std::vector<float> out(static_cast<size_t>(n));
  SUBMOE_RETURN_IF_ERROR(read_as_f32(t, out));
  return out;
}

namespace {

// Index of the first element whose exponent bits are all ones (NaN or
// infinity) among n little-endian words of type U, or n.
template <typename U>
size_t first_all_ones_exponent(const uint8_t* p, size_t n, U exponent_mask) {
  for (size_t i = 0; i < n; ++i) {
    U v;
    std::memcpy(&v, p + i * sizeof(U), sizeof(U));
    if ((v & exponent_mask) == exponent_mask) return i;
  }
  return n;
}

}  // namespace

Status check_finite(const TensorView& t) {
  const int64_t n64 = t.numel();
  if (n64 <= 0 || t.data == nullptr) return Status::ok();
  const size_t n = static_cast<size_t>(n64);
  size_t bad = n;
  switch (t.dtype) {
    case DType::kF32: bad = first_all_ones_exponent<uint32_t>(t.data, n, 0x7f800000u); break;
    case DType::kBF16: bad = first_all_ones_exponent<uint16_t>(t.data, n, 0x7f80u); break;
    case DType::kF16: bad = first_all_ones_exponent<uint16_t>(t.data, n, 0x7c00u); break;
    case DType::kF64: bad = first_all_ones_exponent<uint64_t>(t.data, n, 0x7ff0000000000000ull); break;
    // F8_E5M2 has IEEE-style inf/NaN (exponent all ones); F8_E4M3 (the
    // "fn" variant) has no inf and NaN only at S.1111.111.
    case DType::kF8E5M2: bad = first_all_ones_exponent<uint8_t>(t.data, n, 0x7cu); break;
    case DType::kF8E4M3: bad = first_all_ones_exponent<uint8_t>(t.data, n, 0x7fu); break;
    default: return Status::ok();
  }
  if (bad == n) return Status::ok();
  return numerical_error("tensor '" + t.name + "' holds a NaN or infinite value at element " + std::to_string(bad) +
                         " (of " + std::to_string(n) + ")");
}

Result<std::vector<bf16_t>> to_bf16(const TensorView& t) {
  const int64_t n = t.numel();
  if (n < 0) return invalid_argument("tensor '" + t.name + "': negative numel");
  std::vector<bf16_t> out(static_cast<size_t>(n));
  SUBMOE_RETURN_IF_ERROR(read_as_bf16(t, out));
  return out;
}

Status read_raw(const TensorView& t, DType expected, std::span<uint8_t> out) {
  if (t.dtype != expected)
    return invalid_argument("tensor '" + t.name + "': dtype is " + std::string(dtype_name(t.dtype)) + ", expected " +
                            std::string(dtype_name(expected)));
  if (out.size() != t.nbytes)
    return invalid_argument("tensor '" + t.name + "': output holds " + std::to_string(out.size()) +
                            " bytes, tensor has " + std::to_string(t.nbytes));
  if (!out.empty()) std::memcpy(out.data(), t.data, out.size());
  return Status::ok();
}

}  // namespace submoe::io
