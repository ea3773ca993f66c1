// Residual vector quantization (seed 001, "Method: Codec"): the packed layout of
// one matrix, declared once for the codec (encoder, reference decoder,
// validator), the kernels (kernels/rvq_gemv.h), the artifact and the tests.
//
// A matrix W' [rows, cols] (already rotated by the randomized Hadamard
// transform, when the artifact says so) is coded as:
//   scales    F16 [rows]: one positive finite RMS scale per row;
//   codes     U8  [rows, groups, stages], groups = cols / kRvqDim: row r's
//             subvector g (columns [g*16, g*16+16)) is the sum over stages s of
//             codebook s's entry codes[r][g][s];
//   codebooks F32 [max_stages, 256, 16] (shared by every matrix of an
//             artifact; a matrix with S stages uses stages 0..S-1).
//   value(r, g*16 + j) = f16_to_float(scales[r]) *
//                        sum_{s < S} codebooks[s][codes[r][g][s]][j]
//   The sum over s runs in ascending s in float32, then the product with the
//   scale: the reference decoder does exactly this, and it is the oracle of
//   every fast kernel.
// Rate: S * 8 / 16 = S / 2 bits per weight for the codes, plus 16 / cols for
// the scale, plus the shared codebooks once per artifact.
//
// Why codes are [row][group][stage]: a batch-1 kernel builds one table per
// (group, stage) of the 256 dot products codebook[s][c] . x[g*16 .. g*16+16)
// (laid out as table[(g * S + s) * 256 + c]); a row then sums S * groups table
// entries whose indices are its consecutive code bytes plus (g * S + s) * 256,
// which a gather instruction reads 16 at a time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace submoe::rvq {

inline constexpr uint32_t kRvqDim = 16;          // d: weights per subvector
inline constexpr uint32_t kRvqEntries = 256;     // entries per stage codebook (8-bit index)
inline constexpr uint32_t kRvqMaxStages = 8;     // 0.5 .. 4 bits per weight
inline constexpr double kRvqBitsPerStage = 0.5;  // 8 bits / 16 weights

// Floats of one stage's codebook.
inline constexpr size_t kRvqCodebookFloats = size_t{kRvqEntries} * kRvqDim;
static_assert(kRvqCodebookFloats == 4096);

inline constexpr uint32_t rvq_groups(uint32_t cols) { return cols / kRvqDim; }
// Bytes of codes + scales of one matrix (codebooks not included).
inline constexpr size_t rvq_matrix_bytes(uint32_t rows, uint32_t cols, uint32_t stages) {
  return size_t{rows} * rvq_groups(cols) * stages + size_t{rows} * 2;
}

// Non-owning view of one packed matrix.
struct RvqView {
  uint32_t rows = 0;
  uint32_t cols = 0;     // a multiple of kRvqDim
  uint32_t stages = 0;   // 1..kRvqMaxStages
  const uint8_t* codes = nullptr;       // rows * groups * stages
  const uint16_t* scales = nullptr;     // rows, f16 bits
  const float* codebooks = nullptr;     // >= stages * kRvqCodebookFloats

  uint32_t groups() const { return rvq_groups(cols); }
  const uint8_t* row_codes(uint32_t r) const { return codes + size_t{r} * groups() * stages; }
  const float* codebook(uint32_t s) const { return codebooks + size_t{s} * kRvqCodebookFloats; }
};

}  // namespace submoe::rvq
