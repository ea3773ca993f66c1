// libFuzzer target: the SpQR format's untrusted-input surface (codec/spqr.h):
// from_fields (validation) and the reference decoder. The first bytes give
// the shape (rows 1..40, so partial row blocks occur; cols = 16 x (1..4)),
// the bits (2..4) and whether the dense arrays are zero-padded to their
// sizes; then the code bytes, the stat-code bytes, the fp16 parameters, the
// row pointers (one byte each, widened), the exception count, columns and
// values. Beyond "no crash":
//   - from_fields accepts exactly what the documented rules accept (an
//     independent check written here: sizes, the stat stream's padding bits
//     0, finite parameters, row pointers from 0 to nnz non-decreasing,
//     columns in range and strictly increasing per row, finite values);
//   - on acceptance every decoded value is finite and equals, bit for bit,
//     s (q - z) from codes and statistics read bit by bit from the
//     documented streams, plus the exception's value at its coordinate.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "submoe/codec/spqr.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::same_bits;

uint32_t bits_at(const std::vector<uint8_t>& s, size_t first_bit, uint32_t n) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < n; ++b) v |= ((s[(first_bit + b) / 8] >> ((first_bit + b) % 8)) & 1u) << b;
  return v;
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
  const uint32_t rows = 1 + in.u8() % 40;
  const uint32_t shape = in.u8();
  const uint32_t cols = 16 * (1 + shape % 4);
  const uint32_t bits = 2 + (shape >> 2) % 3;
  const bool pad = (shape & 0x80) != 0;
  const uint32_t groups = cols / 16;
  const size_t code_bytes = rows * spqr::row_code_bytes(cols, bits), stat_bytes = spqr::stat_code_bytes(rows, cols);
  const size_t params = spqr::stat_blocks(rows) * groups * 4;
  std::vector<uint8_t> codes, stats;
  std::vector<uint16_t> par;
  while (codes.size() < code_bytes && in.n > 0) codes.push_back(static_cast<uint8_t>(in.u8()));
  while (stats.size() < stat_bytes && in.n > 0) stats.push_back(static_cast<uint8_t>(in.u8()));
  while (par.size() < params && in.n > 0) par.push_back(static_cast<uint16_t>(in.u16()));
  if (pad) {
    codes.resize(code_bytes, 0);
    stats.resize(stat_bytes, 0);
    par.resize(params, 0x3800);  // 0.5
  }
  std::vector<int32_t> row_ptr;
  for (uint32_t r = 0; r <= rows; ++r) row_ptr.push_back(static_cast<int32_t>(in.u8() % 24) - 2);
  std::vector<uint16_t> col, value;
  const uint32_t nnz = in.u8() % 20;
  for (uint32_t i = 0; i < nnz; ++i) col.push_back(static_cast<uint16_t>(in.u8() % (cols + 4)));
  for (uint32_t i = 0; i < nnz; ++i) value.push_back(static_cast<uint16_t>(in.u16()));

  const size_t used = spqr::stat_entries(rows, cols) * 6;
  bool valid = codes.size() == code_bytes && stats.size() == stat_bytes && par.size() == params;
  if (valid && used % 8 != 0) valid = (stats.back() >> (used % 8)) == 0;
  for (size_t i = 0; valid && i < par.size(); ++i) valid = std::isfinite(f16_bits_to_float(par[i]));
  if (valid) {
    valid = row_ptr.front() == 0 && row_ptr.back() == static_cast<int32_t>(nnz);
    for (uint32_t r = 0; valid && r < rows; ++r) {
      valid = row_ptr[r + 1] >= row_ptr[r] && row_ptr[r + 1] <= static_cast<int32_t>(nnz);
      for (int32_t i = row_ptr[r]; valid && i < row_ptr[r + 1]; ++i)
        valid = col[i] < cols && (i == row_ptr[r] || col[i] > col[i - 1]) && std::isfinite(f16_bits_to_float(value[i]));
    }
  }
  auto m = spqr::from_fields(rows, cols, bits, {codes, stats, raw(par), raw(row_ptr), raw(col), raw(value)});
  require(m.is_ok() == valid);
  if (!m.is_ok()) return 0;
  const std::vector<float> w = spqr::decode(*m);
  require(w.size() == size_t{rows} * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      const uint32_t g = c / 16;
      const uint32_t q = bits_at(codes, size_t{r} * spqr::row_code_bytes(cols, bits) * 8 + size_t{c} * bits, bits);
      const uint32_t e = bits_at(stats, (size_t{r} * groups + g) * 6, 6);
      const uint16_t* p = par.data() + (size_t{r / 16} * groups + g) * 4;
      const float s = f16_bits_to_float(p[0]) * (static_cast<float>(e & 7) - f16_bits_to_float(p[1]));
      const float z = f16_bits_to_float(p[2]) * (static_cast<float>(e >> 3) - f16_bits_to_float(p[3]));
      float want = s * (static_cast<float>(q) - z);
      for (int32_t i = row_ptr[r]; i < row_ptr[r + 1]; ++i)
        if (col[i] == c) want += f16_bits_to_float(value[i]);
      require(std::isfinite(w[size_t{r} * cols + c]));
      require(same_bits(w[size_t{r} * cols + c], want));
    }
  return 0;
}
