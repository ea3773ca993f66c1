// libFuzzer target: the learned-codebook formats' untrusted-input surface,
// AQLM (codec/aqlm.h) and VPTQ (codec/vptq.h): matrix_from_bytes
// (validation) and the reference decoders. The first byte picks the format;
// the next ones the shape (small rows / cols, codebook bits, residual,
// outliers, row scales) and whether arrays are zero-padded to full size; the
// rest are the fields in order. Beyond "no crash":
//   - acceptance implies every field has its documented size (checked here
//     independently) and every decoded value is finite;
//   - on acceptance one value per row is rebuilt here from the documented
//     formula (the B-bit index streams read LSB-first by hand) and must equal
//     the decoder's;
//   - an accepted matrix re-packs (codes_to_bytes / pack_indices) to exactly
//     the bytes it was read from.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <vector>

#include "submoe/codec/aqlm.h"
#include "submoe/codec/vptq.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::take;

// Index k of a little-endian, LSB-first stream of `bits`-bit fields.
uint32_t field(const uint8_t* stream, size_t k, uint32_t bits) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < bits; ++b) {
    const size_t bit = k * bits + b;
    v |= uint32_t{(stream[bit >> 3] >> (bit & 7)) & 1u} << b;
  }
  return v;
}
float f16(const std::vector<uint8_t>& b, size_t i) {
  return f16_bits_to_float(static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8)));
}

void fuzz_aqlm(Reader& r) {
  const uint32_t rows = 1 + r.u8() % 8, cols = 8 * (1 + r.u8() % 6);
  const uint32_t shape = r.u8();
  const aqlm::Shape s{1 + shape % 3, 1 + (shape >> 2) % 10};
  const bool pad = (shape & 0x80) != 0;
  const size_t nc = aqlm::codes_bytes(rows, cols, s), nb = aqlm::codebook_bytes(s), ns = size_t{rows} * 2;
  const std::vector<uint8_t> codes = take(r, nc, pad), books = take(r, nb, pad), scales = take(r, ns, pad);
  auto m = aqlm::matrix_from_bytes(rows, cols, s, codes, books, scales);
  if (!m.is_ok()) return;
  require(codes.size() == nc && books.size() == nb && scales.size() == ns);  // aqlm accepted wrong sizes
  require(aqlm::codes_to_bytes(*m) == codes);  // aqlm codes do not re-pack to their bytes
  const std::vector<float> w = aqlm::decode_matrix(*m);
  const size_t row_bytes = aqlm::codes_row_bytes(cols, s);
  for (uint32_t row = 0; row < rows; ++row) {
    const uint32_t c = (row * 5) % cols, g = c / aqlm::kDim;
    float sum = 0;
    for (uint32_t k = 0; k < s.codebooks; ++k) {
      const uint32_t a = field(codes.data() + row * row_bytes, size_t{g} * s.codebooks + k, s.code_bits);
      sum += f16(books, (size_t{k} * s.entries() + a) * aqlm::kDim + c % aqlm::kDim);
    }
    const float want = f16(scales, row) * sum;
    require(std::isfinite(w[size_t{row} * cols + c]));  // aqlm decoded a non-finite value
    require(w[size_t{row} * cols + c] == want);  // aqlm decode differs from the documented formula
  }
}

void fuzz_vptq(Reader& r) {
  const uint32_t rows = 8 * (1 + r.u8() % 4), cols = 1 + r.u8() % 6;
  const uint32_t shape = r.u8();
  vptq::Shape s{1 + shape % 9, (shape >> 4) % 3 == 0 ? 0u : 1 + (shape >> 4) % 5, (shape & 0x08) != 0};
  const bool pad = (shape & 0x80) != 0;
  const uint32_t outliers = r.u8() % 3;
  const size_t ni = size_t{cols} * vptq::index_column_bytes(rows, s.bits), nb = size_t{s.entries()} * 16;
  const size_t nri = s.residual_bits ? size_t{cols} * vptq::index_column_bytes(rows, s.residual_bits) : 0;
  const size_t nrb = size_t{s.residual_entries()} * 16;
  const std::vector<uint8_t> idx = take(r, ni, pad), cb = take(r, nb, pad), ridx = take(r, nri, pad),
                             rcb = take(r, nrb, pad), oc = take(r, size_t{outliers} * 4, pad),
                             ocb = take(r, outliers ? nb : 0, pad), sc = take(r, size_t{cols} * 2, pad),
                             rs = take(r, s.row_scaled ? size_t{rows} * 2 : 0, pad);
  auto m = vptq::matrix_from_bytes(rows, cols, s, {idx, cb, ridx, rcb, oc, ocb, sc, rs});
  if (!m.is_ok()) return;
  require(idx.size() == ni && cb.size() == nb && ridx.size() == nri && rcb.size() == nrb &&
              sc.size() == size_t{cols} * 2 && ocb.size() == (oc.empty() ? 0 : nb));  // vptq accepted wrong sizes
  // Outlier columns increasing and in range.
  for (size_t i = 0; i < m->outlier_columns.size(); ++i)
    require(m->outlier_columns[i] < cols && (i == 0 || m->outlier_columns[i] > m->outlier_columns[i - 1]));
  require(vptq::pack_indices(m->indices, rows, cols, s.bits) == idx);  // vptq indices do not re-pack to their bytes
  const std::vector<float> w = vptq::decode_matrix(*m);
  const size_t col_bytes = vptq::index_column_bytes(rows, s.bits);
  for (uint32_t q = 0; q < cols; ++q) {
    const uint32_t row = (q * 3) % rows, j = row / vptq::kDim, i = row % vptq::kDim;
    bool outlier = false;
    for (uint32_t c : m->outlier_columns) outlier = outlier || c == q;
    const uint32_t a = field(idx.data() + q * col_bytes, j, s.bits);
    float v = f16(outlier ? ocb : cb, size_t{a} * vptq::kDim + i);
    if (s.residual_bits) {
      const uint32_t e = field(ridx.data() + q * vptq::index_column_bytes(rows, s.residual_bits), j, s.residual_bits);
      v += f16(rcb, size_t{e} * vptq::kDim + i);
    }
    float want = f16(sc, q) * v;
    if (s.row_scaled) want = f16(rs, row) * want;
    const float got = w[size_t{row} * cols + q];
    require(std::isfinite(got));  // vptq decoded a non-finite value
    require(got == want);  // vptq decode differs from the documented formula
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  if (r.u8() & 1) {
    fuzz_vptq(r);
  } else {
    fuzz_aqlm(r);
  }
  return 0;
}
