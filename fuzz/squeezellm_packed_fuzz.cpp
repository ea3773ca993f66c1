// libFuzzer target: the SqueezeLLM format's untrusted-input surface
// (codec/squeezellm.h): from_fields (validation) and the reference decoder.
// The first bytes give the shape (rows <= 16, cols = 32 x (1..4)), the bits
// (3 or 4), whether exceptions are stored and whether the dense arrays are
// zero-padded; then the code bytes, the tables, the row pointers (one byte
// each, widened), the exception count and columns and values. Beyond "no
// crash":
//   - from_fields accepts exactly what the documented rules accept (an
//     independent check written here: sizes, finite ascending tables, row
//     pointers from 0 to nnz non-decreasing, columns in range and strictly
//     increasing per row, finite values, code 0 under each exception);
//   - on acceptance every decoded value equals, bit for bit, the table entry
//     of its code read bit by bit from the documented layout, or the
//     exception's value at its coordinate.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "submoe/codec/squeezellm.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::same_bits;

uint32_t code_of(const std::vector<uint8_t>& codes, size_t row_bytes, uint32_t r, uint32_t c, uint32_t bits) {
  const uint8_t* row = codes.data() + r * row_bytes;
  if (bits == 4) return c % 2 == 0 ? row[c / 2] >> 4 : row[c / 2] & 15;
  uint32_t code = 0;
  for (uint32_t b = 0; b < 3; ++b) {
    const uint32_t bit = (c / 32) * 96 + 3 * (c % 32) + b;
    code |= ((row[bit / 8] >> (bit % 8)) & 1u) << b;
  }
  return code;
}

template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  const uint32_t rows = 1 + in.u8() % 16;
  const uint32_t shape = in.u8();
  const uint32_t cols = 32 * (1 + shape % 4);
  const uint32_t bits = (shape & 4) ? 4 : 3;
  const bool sparse = (shape & 8) != 0, pad = (shape & 0x80) != 0;
  const uint32_t k = 1u << bits;
  const size_t row_bytes = squeezellm::row_code_bytes(cols, bits);
  std::vector<uint8_t> codes;
  while (codes.size() < rows * row_bytes && in.n > 0) codes.push_back(static_cast<uint8_t>(in.u8()));
  std::vector<uint16_t> lut;
  while (lut.size() < size_t{rows} * k && in.n > 0) lut.push_back(static_cast<uint16_t>(in.u16()));
  if (pad) {
    codes.resize(rows * row_bytes, 0);
    while (lut.size() < size_t{rows} * k) lut.push_back(float_to_f16_bits(static_cast<float>(lut.size() % k)));
  }
  std::vector<int32_t> row_ptr;
  std::vector<uint16_t> col, value;
  if (sparse) {
    for (uint32_t r = 0; r <= rows; ++r) row_ptr.push_back(static_cast<int32_t>(in.u8() % 24) - 2);
    const uint32_t nnz = in.u8() % 20;
    for (uint32_t i = 0; i < nnz; ++i) col.push_back(static_cast<uint16_t>(in.u8() % (cols + 4)));
    for (uint32_t i = 0; i < nnz; ++i) value.push_back(static_cast<uint16_t>(in.u16()));
  }

  bool valid = codes.size() == rows * row_bytes && lut.size() == size_t{rows} * k;
  for (size_t r = 0; valid && r < rows; ++r)
    for (uint32_t j = 0; valid && j < k; ++j) {
      const float v = f16_bits_to_float(lut[r * k + j]);
      valid = std::isfinite(v) && (j == 0 || v >= f16_bits_to_float(lut[r * k + j - 1]));
    }
  if (valid && sparse) {
    const auto nnz = static_cast<int32_t>(col.size());
    valid = row_ptr.front() == 0 && row_ptr.back() == nnz;
    for (uint32_t r = 0; valid && r < rows; ++r) {
      valid = row_ptr[r + 1] >= row_ptr[r] && row_ptr[r + 1] <= nnz;
      for (int32_t i = row_ptr[r]; valid && i < row_ptr[r + 1]; ++i)
        valid = col[i] < cols && (i == row_ptr[r] || col[i] > col[i - 1]) && std::isfinite(f16_bits_to_float(value[i])) &&
                code_of(codes, row_bytes, r, col[i], bits) == 0;
    }
  }
  auto m = squeezellm::from_fields(rows, cols, bits, sparse, {raw(codes), raw(lut), raw(row_ptr), raw(col), raw(value)});
  require(m.is_ok() == valid);
  if (!m.is_ok()) return 0;
  const std::vector<float> w = squeezellm::decode(*m);
  require(w.size() == size_t{rows} * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      float want = f16_bits_to_float(lut[size_t{r} * k + code_of(codes, row_bytes, r, c, bits)]);
      if (sparse)
        for (int32_t i = row_ptr[r]; i < row_ptr[r + 1]; ++i)
          if (col[i] == c) want = f16_bits_to_float(value[i]);
      require(std::isfinite(w[size_t{r} * cols + c]));
      require(same_bits(w[size_t{r} * cols + c], want));
    }
  return 0;
}
