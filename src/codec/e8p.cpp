// The E8P lattice code (codec/e8p.h): tables built from their definitions,
// the exact nearest-codeword search, residual stages and the matrix format.
#include "submoe/codec/e8p.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "submoe/core/bf16.h"

namespace submoe::e8p {
namespace {

// QuIP#'s get_norm12() rows, 2|x_i| per digit, in file order.
constexpr const char* kNorm12Rows[29] = {
    "31113333", "13113333", "11313333", "11133333", "33313311", "33313131", "33311331", "33313113",
    "33311313", "33311133", "33133311", "33133131", "33131331", "33133113", "33131313", "33131133",
    "31333311", "31333131", "31331331", "31333113", "31331313", "13331133", "13333311", "13333131",
    "13331331", "13333113", "13331313", "11331333", "33113331"};
constexpr uint8_t kPermutation[kDim] = {0, 2, 4, 6, 1, 3, 5, 7};  // packed coordinate j holds x[perm[j]]

// 2|x| per coordinate of the 256 abs patterns, in QuIP#'s index order.
std::array<std::array<uint8_t, kDim>, kAbsEntries> abs_patterns_x2() {
  std::array<std::array<uint8_t, kDim>, kAbsEntries> out{};
  size_t n = 0;
  // Lexicographic order over 2|x_i| in {1, 3, 5, 7}, coordinate 0 outermost;
  // every such pattern has a sign choice with even sum (one flip of a
  // half-integer changes the sum's parity), so the ball is the only filter.
  std::array<uint8_t, kDim> v{};
  auto rec = [&](auto&& self, uint32_t i, uint32_t norm_x4) -> void {
    if (norm_x4 > 40) return;  // |x|^2 <= 10, in units of (2x)^2
    if (i == kDim) {
      out[n++] = v;
      return;
    }
    for (uint8_t d = 1; d <= 7; d += 2) {
      v[i] = d;
      self(self, i + 1, norm_x4 + uint32_t{d} * d);
    }
  };
  rec(rec, 0, 0);
  for (const char* row : kNorm12Rows) {
    for (uint32_t i = 0; i < kDim; ++i) v[i] = static_cast<uint8_t>(row[i] - '0');
    out[n++] = v;
  }
  return out;
}

struct Tables {
  std::array<uint32_t, kAbsEntries> packed{};
  // Decoded stored pattern (before the code's signs): 2 v^0_i, coordinates in
  // natural order (coordinate 7 of odd-sum rows negative).
  std::array<std::array<int8_t, kDim>, kAbsEntries> base_x2{};
  // For the encoder: |v^0_i| as floats, and whether the stored pattern has an
  // odd number of negative coordinates.
  std::array<std::array<float, kDim>, kAbsEntries> magnitude{};
  // The same coordinate-major (for scans over the patterns) and |v0|^2.
  std::array<std::array<float, kAbsEntries>, kDim> magnitude_t{};
  std::array<float, kAbsEntries> norm2{};
  std::array<uint8_t, kAbsEntries> negative_parity{};
  std::array<std::array<int8_t, kDim>, kAbsEntries> one_bit{};
  uint32_t crc = 0;

  Tables() {
    const auto pats = abs_patterns_x2();
    for (uint32_t a = 0; a < kAbsEntries; ++a) {
      int sum_x2 = 0;
      for (uint32_t i = 0; i < kDim; ++i) sum_x2 += pats[a][i];
      const bool odd = (sum_x2 / 2) % 2 != 0;
      uint32_t word = 0;
      for (uint32_t j = 0; j < kDim; ++j) {
        int y = pats[a][kPermutation[j]];
        if (j == 7 && odd) y = -y;
        word |= static_cast<uint32_t>(y + 8) << (4 * j);
      }
      packed[a] = word;
      for (uint32_t i = 0; i < kDim; ++i) {
        const int nib = static_cast<int>((word >> (4 * kE8pNibbleOfCoordinate[i])) & 15u);
        base_x2[a][i] = static_cast<int8_t>(nib - 8);
        magnitude[a][i] = 0.5f * static_cast<float>(std::abs(nib - 8));
      }
      negative_parity[a] = odd ? 1 : 0;
      float mm = 0;
      for (uint32_t i = 0; i < kDim; ++i) {
        magnitude_t[i][a] = magnitude[a][i];
        mm += magnitude[a][i] * magnitude[a][i];
      }
      norm2[a] = mm;
    }
    uint8_t bytes[kAbsEntries * 4];
    for (uint32_t a = 0; a < kAbsEntries; ++a)
      for (uint32_t b = 0; b < 4; ++b) bytes[a * 4 + b] = static_cast<uint8_t>(packed[a] >> (8 * b));
    crc = crc32(bytes);

    // The 1-bit points in 2x units, then sorted.
    std::vector<std::array<int8_t, kDim>> pts;
    pts.push_back({});
    for (uint32_t i = 0; i < kDim; ++i)
      for (uint32_t j = i + 1; j < kDim; ++j)
        for (int si : {-2, 2})
          for (int sj : {-2, 2}) {
            std::array<int8_t, kDim> p{};
            p[i] = static_cast<int8_t>(si);
            p[j] = static_cast<int8_t>(sj);
            pts.push_back(p);
          }
    for (uint32_t s = 0; s < 256; ++s) {
      if (std::popcount(s) % 2 != 0) continue;
      std::array<int8_t, kDim> p{};
      for (uint32_t i = 0; i < kDim; ++i) p[i] = (s >> i) & 1 ? -1 : 1;
      pts.push_back(p);
    }
    for (uint32_t i = 0; i < kDim; ++i)
      for (int s : {-4, 4}) {
        if (i == 7 && s < 0) continue;
        std::array<int8_t, kDim> p{};
        p[i] = static_cast<int8_t>(s);
        pts.push_back(p);
      }
    std::sort(pts.begin(), pts.end());
    std::copy(pts.begin(), pts.end(), one_bit.begin());
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// The applied sign pattern (even weight) and the shift bit of a code.
inline void split_code(uint16_t code, uint32_t* abs_index, uint32_t* signs, uint32_t* parity) {
  uint32_t s = code & 0xffu;
  *parity = static_cast<uint32_t>(std::popcount(s)) & 1u;
  *signs = s ^ *parity;
  *abs_index = code >> 8;
}

}  // namespace

const std::array<uint32_t, kAbsEntries>& packed_abs_table() { return tables().packed; }

uint32_t crc32(std::span<const uint8_t> bytes) {
  uint32_t c = 0xffffffffu;
  for (uint8_t b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

uint32_t packed_abs_table_crc32() { return tables().crc; }

void quarters(uint16_t code, int8_t out[kDim]) {
  uint32_t a, s, p;
  split_code(code, &a, &s, &p);
  const auto& base = tables().base_x2[a];
  for (uint32_t i = 0; i < kDim; ++i) {
    const int v2 = (s >> kE8pNibbleOfCoordinate[i]) & 1u ? -base[i] : base[i];
    out[i] = static_cast<int8_t>(2 * v2 + (p ? -1 : 1));
  }
}

void decode(uint16_t code, float out[kDim]) {
  int8_t q[kDim];
  quarters(code, q);
  for (uint32_t i = 0; i < kDim; ++i) out[i] = 0.25f * static_cast<float>(q[i]);
}

const std::array<std::array<int8_t, kDim>, kAbsEntries>& one_bit_halves() { return tables().one_bit; }

namespace {

// One shift's target y = x - shift: |y|, |y|^2 and the signs.
struct Shifted {
  float ay[kDim], yy;
  uint32_t neg_y, parity_y;
};

Shifted shifted(const float x[kDim], uint32_t p) {
  const float shift = p ? -0.25f : 0.25f;
  Shifted v{};
  for (uint32_t i = 0; i < kDim; ++i) {
    const float y = x[i] - shift;
    v.ay[i] = std::fabs(y);
    v.yy += y * y;
    if (y < 0) {
      v.neg_y |= 1u << i;
      v.parity_y ^= 1u;
    }
  }
  return v;
}

// d^2 to the best-signed codeword of every pattern: |y|^2 + |m|^2 - 2 score,
// score = sum m|y| less 2 min m|y| when the signs of y give the pattern the
// wrong parity of negative coordinates. Patterns innermost (vectorizes); each
// pattern's sums in coordinate order.
void best_sign_distances(const Tables& t, const Shifted& v, float* out) {
  float dot[kAbsEntries], mn[kAbsEntries];
  for (uint32_t a = 0; a < kAbsEntries; ++a) {
    dot[a] = 0;
    mn[a] = std::numeric_limits<float>::infinity();
  }
  for (uint32_t i = 0; i < kDim; ++i) {
    const float y = v.ay[i];
    const float* m = t.magnitude_t[i].data();
    for (uint32_t a = 0; a < kAbsEntries; ++a) {
      const float z = m[a] * y;
      dot[a] += z;
      mn[a] = std::min(mn[a], z);
    }
  }
  for (uint32_t a = 0; a < kAbsEntries; ++a) {
    const float score = (t.negative_parity[a] ^ v.parity_y) ? dot[a] - 2 * mn[a] : dot[a];
    out[a] = v.yy + t.norm2[a] - 2 * score;
  }
}

// The flips (bit i: coordinate i negated relative to the stored pattern) that
// give pattern a the signs of y, and the two coordinates of least m|y|.
uint32_t sign_flips(const Tables& t, const Shifted& v, uint32_t a, float z[kDim], uint32_t* i1, uint32_t* i2) {
  uint32_t base = 0;
  for (uint32_t i = 0; i < kDim; ++i) {
    z[i] = t.magnitude[a][i] * v.ay[i];
    if ((t.base_x2[a][i] < 0) != (((v.neg_y >> i) & 1u) != 0)) base |= 1u << i;
  }
  *i1 = 0;
  *i2 = 1;
  if (z[*i2] < z[*i1]) std::swap(*i1, *i2);
  for (uint32_t i = 2; i < kDim; ++i) {
    if (z[i] < z[*i1]) {
      *i2 = *i1;
      *i1 = i;
    } else if (z[i] < z[*i2]) {
      *i2 = i;
    }
  }
  return base;
}

// The code of abs pattern a with the flips (even weight) and shift bit p.
uint16_t code_of(uint32_t a, uint32_t flips, uint32_t p) {
  uint32_t s = 0;
  for (uint32_t i = 0; i < kDim; ++i)
    if ((flips >> i) & 1u) s |= 1u << kE8pNibbleOfCoordinate[i];
  if (p) s ^= 1u;  // odd popcount: the decoder flips bit 0 back and shifts by -1/4
  return static_cast<uint16_t>((a << 8) | s);
}

}  // namespace

uint16_t nearest(const float x[kDim]) {
  const Tables& t = tables();
  const Shifted sh[2] = {shifted(x, 0), shifted(x, 1)};
  float d[2 * kAbsEntries];
  best_sign_distances(t, sh[0], d);
  best_sign_distances(t, sh[1], d + kAbsEntries);
  uint32_t arg = 0;
  for (uint32_t i = 1; i < 2 * kAbsEntries; ++i)
    if (d[i] < d[arg]) arg = i;
  const uint32_t p = arg / kAbsEntries, a = arg % kAbsEntries;
  float z[kDim];
  uint32_t i1, i2;
  uint32_t flips = sign_flips(t, sh[p], a, z, &i1, &i2);
  if (std::popcount(flips) & 1) flips ^= 1u << i1;
  return code_of(a, flips, p);
}

uint32_t nearest_k(const float x[kDim], uint32_t k, uint16_t* codes) {
  const Tables& t = tables();
  const Shifted sh[2] = {shifted(x, 0), shifted(x, 1)};
  float best[2 * kAbsEntries];
  best_sign_distances(t, sh[0], best);
  best_sign_distances(t, sh[1], best + kAbsEntries);
  // Every candidate of the k nearest belongs to a (shift, pattern) whose best
  // is among the k nearest bests: only those are expanded.
  uint16_t order[2 * kAbsEntries];
  for (uint32_t i = 0; i < 2 * kAbsEntries; ++i) order[i] = static_cast<uint16_t>(i);
  const uint32_t keep = std::min<uint32_t>(k, 2 * kAbsEntries);
  std::partial_sort(order, order + keep, order + 2 * kAbsEntries, [&](uint16_t l, uint16_t r) {
    return best[l] < best[r] || (best[l] == best[r] && l < r);
  });
  struct Candidate {
    float d;
    uint32_t order;
    uint16_t code;
  };
  Candidate all_storage[4 * kAbsEntries];  // 2 per expanded pair, at most 2 x 512
  size_t count = 0;
  auto push = [&](Candidate c) { all_storage[count++] = c; };
  for (uint32_t n = 0; n < keep; ++n) {
    const uint32_t p = order[n] / kAbsEntries, a = order[n] % kAbsEntries;
    const Shifted& v = sh[p];
    float z[kDim];
    uint32_t i1, i2;
    const uint32_t base = sign_flips(t, v, a, z, &i1, &i2);
    float dot = 0;
    for (uint32_t i = 0; i < kDim; ++i) dot += z[i];
    const float mm = t.norm2[a];
    const uint32_t rank = order[n] * 2u;
    if (std::popcount(base) & 1) {
      push({best[order[n]], rank, code_of(a, base ^ (1u << i1), p)});
      push({v.yy + mm - 2 * (dot - 2 * z[i2]), rank + 1, code_of(a, base ^ (1u << i2), p)});
    } else {
      push({best[order[n]], rank, code_of(a, base, p)});
      push({v.yy + mm - 2 * (dot - 2 * z[i1] - 2 * z[i2]), rank + 1, code_of(a, base ^ (1u << i1) ^ (1u << i2), p)});
    }
  }
  const uint32_t out = std::min<uint32_t>(k, static_cast<uint32_t>(count));
  std::partial_sort(all_storage, all_storage + out, all_storage + count, [](const Candidate& l, const Candidate& r) {
    return l.d < r.d || (l.d == r.d && l.order < r.order);
  });
  for (uint32_t i = 0; i < out; ++i) codes[i] = all_storage[i].code;
  return out;
}

uint8_t nearest_one_bit(const float x[kDim]) {
  const auto& pts = tables().one_bit;
  float best = std::numeric_limits<float>::infinity();
  uint8_t arg = 0;
  for (uint32_t e = 0; e < kAbsEntries; ++e) {
    float d = 0;
    for (uint32_t i = 0; i < kDim; ++i) {
      const float diff = x[i] - 0.5f * static_cast<float>(pts[e][i]);
      d += diff * diff;
    }
    if (d < best) {
      best = d;
      arg = static_cast<uint8_t>(e);
    }
  }
  return arg;
}

Stage2 stage2_of_bits(uint32_t bits) {
  return bits == 3 ? Stage2::kOneBit : bits == 4 ? Stage2::kE8p : Stage2::kNone;
}

float rho_of(Stage2 s) { return s == Stage2::kOneBit ? kRho3 : s == Stage2::kE8p ? kRho4 : 0.0f; }

void reconstruct(Stage2 s, uint16_t c1, uint16_t c2, float out[kDim]) {
  decode(c1, out);
  if (s == Stage2::kNone) return;
  float v2[kDim];
  if (s == Stage2::kE8p) {
    decode(c2, v2);
  } else {
    const auto& p = tables().one_bit[c2 & 0xffu];
    for (uint32_t i = 0; i < kDim; ++i) v2[i] = 0.5f * static_cast<float>(p[i]);
  }
  const float rho = rho_of(s);
  for (uint32_t i = 0; i < kDim; ++i) out[i] = out[i] + v2[i] / rho;
}

void encode(Stage2 s, const float x[kDim], uint16_t* c1, uint16_t* c2, float out[kDim]) {
  *c1 = nearest(x);
  *c2 = 0;
  if (s != Stage2::kNone) {
    float v1[kDim], r[kDim];
    decode(*c1, v1);
    const float rho = rho_of(s);
    for (uint32_t i = 0; i < kDim; ++i) r[i] = (x[i] - v1[i]) * rho;
    *c2 = s == Stage2::kE8p ? nearest(r) : nearest_one_bit(r);
  }
  reconstruct(s, *c1, *c2, out);
}

size_t E8pMatrix::bytes() const { return matrix_bytes(rows, cols, bits); }

Status check_bits(uint32_t bits) {
  if (bits < 2 || bits > 4)
    return invalid_argument("e8p codes 2, 3 or 4 bits per weight (E8P, E8P + E8 1-bit, E8P + E8P), not " +
                            std::to_string(bits));
  return Status::ok();
}

Status check_shape(uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0 || cols % kDim != 0)
    return invalid_argument("e8p codes 8-weight vectors along the input axis: [" + std::to_string(rows) + ", " +
                            std::to_string(cols) + "] needs rows > 0 and columns a positive multiple of 8");
  return Status::ok();
}

uint32_t residual_bytes_per_code(uint32_t bits) { return bits == 3 ? 1 : bits == 4 ? 2 : 0; }

size_t matrix_bytes(uint32_t rows, uint32_t cols, uint32_t bits) {
  const size_t codes = size_t{rows} * (cols / kDim);
  return codes * (2 + residual_bytes_per_code(bits)) + size_t{rows} * 2;
}

Result<E8pMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, uint32_t bits, std::span<const uint8_t> codes,
                                    std::span<const uint8_t> residual, std::span<const uint8_t> scales) {
  SUBMOE_RETURN_IF_ERROR(check_bits(bits));
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
  const size_t n = size_t{rows} * (cols / kDim);
  const size_t rb = residual_bytes_per_code(bits);
  if (codes.size() != n * 2 || residual.size() != n * rb || scales.size() != size_t{rows} * 2)
    return corrupt_data("e8p [" + std::to_string(rows) + ", " + std::to_string(cols) + "] at " +
                        std::to_string(bits) + " bits: codes / residual / scales hold " +
                        std::to_string(codes.size()) + " / " + std::to_string(residual.size()) + " / " +
                        std::to_string(scales.size()) + " bytes, the shape needs " + std::to_string(n * 2) + " / " +
                        std::to_string(n * rb) + " / " + std::to_string(size_t{rows} * 2));
  E8pMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  m.codes.resize(n);
  std::memcpy(m.codes.data(), codes.data(), codes.size());
  m.residual.resize(rb ? n : 0);
  if (rb == 2) std::memcpy(m.residual.data(), residual.data(), residual.size());
  if (rb == 1)
    for (size_t k = 0; k < n; ++k) m.residual[k] = residual[k];
  m.scales.resize(rows);
  std::memcpy(m.scales.data(), scales.data(), scales.size());
  for (uint32_t r = 0; r < rows; ++r)
    if (!std::isfinite(f16_bits_to_float(m.scales[r])))
      return corrupt_data("e8p: the scale of row " + std::to_string(r) + " is not finite");
  return m;
}

std::vector<float> decode_matrix(const E8pMatrix& m) {
  std::vector<float> w(size_t{m.rows} * m.cols);
  const uint32_t per_row = m.cols / kDim;
  const Stage2 s = m.stage2();
  for (uint32_t r = 0; r < m.rows; ++r) {
    const float scale = f16_bits_to_float(m.scales[r]);
    for (uint32_t k = 0; k < per_row; ++k) {
      const size_t i = size_t{r} * per_row + k;
      float v[kDim];
      reconstruct(s, m.codes[i], s == Stage2::kNone ? 0 : m.residual[i], v);
      for (uint32_t j = 0; j < kDim; ++j) w[size_t{r} * m.cols + k * kDim + j] = scale * v[j];
    }
  }
  return w;
}

}  // namespace submoe::e8p
