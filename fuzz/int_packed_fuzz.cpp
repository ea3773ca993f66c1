// libFuzzer target: the int representation's untrusted-input surface
// (codec/int_packed.h): make_packed_int_view, validate_packed_int and the
// reference decoders. The first bytes give the shape (rows, cols <= 64), bits
// (2, 3, 4) and group_size (0, 32, 64, 128); the rest are qweight, scales and
// zeros in that order (a short input gives short arrays, which the view must
// refuse, or, by one byte's choice, zero-padded ones, so that validation sees
// full-size matrices). Beyond "no crash":
//   - the view accepts exactly the arrays of the documented sizes;
//   - validation accepts exactly what an independent check of the documented
//     rules accepts (finite scales, zeros <= 2^bits - 1, zero padding bits);
//   - on acceptance both decoders succeed, every value is finite and equals
//     f16(scale) * (code - zero) computed here from the raw bytes (for every
//     element of small matrices, sampled ones of larger), bit for bit;
//   - from_parts accepts the same arrays, and pack_int_codes of the decoded
//     codes with the stored grid reproduces the input bytes exactly.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "submoe/codec/int_packed.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::intn;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;
using submoe::fuzz::same_bits;

// IEEE half -> float, written out here rather than taken from core/bf16.h.
float half_to_float(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// Code of (row, col) read bit by bit from the row's bytes (LSB-first stream).
uint32_t code_from_bytes(const uint8_t* row, uint32_t c, uint32_t bits) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < bits; ++b) {
    const size_t bit = size_t{c} * bits + b;
    v |= ((row[bit / 8] >> (bit % 8)) & 1u) << b;
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = 1 + r.u8() % 64, cols = 1 + r.u8() % 64;
  const uint32_t shape_byte = r.u8();
  const uint32_t bits = 2 + shape_byte % 3;
  static constexpr uint32_t kGroups[] = {0, 32, 64, 128};
  const uint32_t group_size = kGroups[(shape_byte / 3) % 4];
  const bool pad = (shape_byte & 0x80) != 0;
  const uint32_t groups = int_groups_per_row(cols, group_size);
  const size_t row_bytes = int_row_bytes(cols, bits);
  const size_t qbytes = size_t{rows} * row_bytes, ngroups = size_t{rows} * groups;

  auto take = [&](size_t want) {
    std::vector<uint8_t> out(std::min(want, r.n));
    if (!out.empty()) std::memcpy(out.data(), r.p, out.size());
    r.p += out.size();
    r.n -= out.size();
    if (pad) out.resize(want, 0);
    return out;
  };
  const std::vector<uint8_t> qweight = take(qbytes);
  const std::vector<uint8_t> scale_bytes = take(ngroups * 2);
  const std::vector<uint8_t> zeros = take(ngroups);
  std::vector<uint16_t> scales(scale_bytes.size() / 2);  // aligned copy
  if (!scales.empty()) std::memcpy(scales.data(), scale_bytes.data(), scales.size() * 2);

  auto view = make_packed_int_view(rows, cols, bits, group_size, std::as_bytes(std::span(qweight)),
                                   std::as_bytes(std::span(scales)).first(scale_bytes.size() & ~size_t{1}),
                                   std::as_bytes(std::span(zeros)));
  const bool sizes_ok = qweight.size() == qbytes && scale_bytes.size() == ngroups * 2 && zeros.size() == ngroups;
  require(view.is_ok() == sizes_ok);
  if (!view.is_ok()) return 0;
  const PackedIntView& v = *view;
  require(v.rows == rows && v.cols == cols && v.row_bytes == row_bytes && v.groups() == groups);

  // The documented rules, checked independently.
  const uint32_t maxq = (1u << bits) - 1u;
  bool valid = true;
  for (size_t i = 0; i < ngroups && valid; ++i) valid = std::isfinite(half_to_float(scales[i])) && zeros[i] <= maxq;
  for (uint32_t row = 0; row < rows && valid; ++row)
    for (size_t bit = size_t{cols} * bits; bit < row_bytes * 8 && valid; ++bit)
      valid = ((qweight[row * row_bytes + bit / 8] >> (bit % 8)) & 1u) == 0;
  const Status st = validate_packed_int(v);
  require(st.is_ok() == valid);
  auto parts = PackedIntMatrix::from_parts(rows, cols, bits, group_size, qweight, scales, zeros);
  require(parts.is_ok() == valid);
  auto codes = decode_int_codes(v);
  auto w = decode_int_to_float(v);
  require(codes.is_ok() == valid && w.is_ok() == valid);
  if (!valid) return 0;

  require(codes->size() == size_t{rows} * cols && w->size() == codes->size());
  for (float x : *w) require(std::isfinite(x));
  const size_t n = w->size();
  const size_t step = n <= 1024 ? 1 : 1 + (data[0] | (data[size > 1 ? 1 : 0] << 8)) % 61;
  for (size_t i = 0; i < n; i += step) {
    const uint32_t row = static_cast<uint32_t>(i / cols), c = static_cast<uint32_t>(i % cols);
    const uint32_t code = code_from_bytes(qweight.data() + row * row_bytes, c, bits);
    const size_t g = size_t{row} * groups + (group_size == 0 ? 0 : c / group_size);
    const float expect = half_to_float(scales[g]) * static_cast<float>(static_cast<int>(code) - zeros[g]);
    require((*codes)[i] == code);
    require(same_bits((*w)[i], expect));
  }

  // Repacking the decoded codes on the stored grid gives the same bytes.
  std::vector<float> fscales(ngroups), fzeros(ngroups);
  for (size_t i = 0; i < ngroups; ++i) {
    fscales[i] = half_to_float(scales[i]);
    fzeros[i] = static_cast<float>(zeros[i]);
  }
  auto packed = pack_int_codes(*codes, rows, cols, bits, group_size, fscales, fzeros);
  require(packed.is_ok());
  require(std::equal(packed->qweight().begin(), packed->qweight().end(), qweight.begin(), qweight.end()));
  require(std::equal(packed->scales().begin(), packed->scales().end(), scales.begin(), scales.end()));
  require(std::equal(packed->zeros().begin(), packed->zeros().end(), zeros.begin(), zeros.end()));
  require(parts->storage_bytes() == packed_int_bytes(rows, cols, bits, group_size));
  return 0;
}
