// QuIP#'s E8P lattice code (seed 002, 0x06E and 0x06F; REPRESENTATIONS.md §3.7,
// §3.11 and §4): 8 weights per 16-bit code, decoded from a 256-entry table of
// absolute patterns plus sign bits, and its residual stages for 3 and 4 bits.
//
// The 256 abs patterns (2|x| per coordinate, odd integers 1..7): the 227
// distinct |x| of the half-integer points x of D8^ = D8 + 1/2 with even sum and
// |x|^2 <= 10, in lexicographic order, then QuIP#'s 29 hand-listed |x|^2 = 12
// rows. QuIP#'s packed table (grid_packed_abs, packed_abs_table below) permutes
// the coordinates to [0,2,4,6,1,3,5,7], negates coordinate 7 of the rows with
// an odd coordinate sum, and stores nibble 2x + 8 of permuted coordinate j at
// bits 4j..4j+3; its CRC-32 is kE8pTableCrc32.
//
// A code c = (a << 8) | s decodes as: p = popcount(s) & 1; s ^= p; coordinate i
// reads nibble j = kE8pNibbleOfCoordinate[i] of packed[a]: v_i = ((nib - 8) / 2)
// x (-1)^(bit j of s); then v_i += 1/4 when p = 0, -1/4 when p = 1. The 65,536
// codewords are distinct and lie in E8 + 1/4. Every value is an odd multiple of
// 1/4 in [-15/4, 15/4]: `quarters` below gives 4 v_i as int8.
//
// Residual stages (QuIP#'s E8P12RVQ3B / RVQ4B): x_hat = c1 + c2 / rho with
//   3 bits: c2 one of the 256 points of the E8 "1-bit" table (0, the 240 roots
//           of norm^2 2, and the 15 norm^2 4 points +-2 e_i except -2 e_8), an
//           8-bit index, rho = 2.04;
//   4 bits: c2 a second E8P code, rho = 3.45.
// The 1-bit table's order is this project's own (QuIP# artifacts are not
// read): the 256 points in lexicographic order of their coordinates.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::e8p {

inline constexpr uint32_t kDim = 8;
inline constexpr uint32_t kAbsEntries = 256;
inline constexpr uint32_t kE8pTableCrc32 = 0xb1a1a044u;
inline constexpr uint8_t kE8pNibbleOfCoordinate[kDim] = {0, 4, 1, 5, 2, 6, 3, 7};
inline constexpr float kRho3 = 2.04f;  // E8P + E8 1-bit
inline constexpr float kRho4 = 3.45f;  // E8P + E8P

// QuIP#'s grid_packed_abs (256 little-endian uint32).
const std::array<uint32_t, kAbsEntries>& packed_abs_table();
// CRC-32 (IEEE 802.3, the zlib one) of bytes.
uint32_t crc32(std::span<const uint8_t> bytes);
// The packed table's CRC-32: what an artifact records and a loader checks.
uint32_t packed_abs_table_crc32();

// Code c as 4 v (odd integers in [-15, 15]), coordinates in natural order.
void quarters(uint16_t code, int8_t out[kDim]);
// Code c as floats (exact).
void decode(uint16_t code, float out[kDim]);

// The E8 1-bit table: entry e as 2 c (integers in [-4, 4]).
const std::array<std::array<int8_t, kDim>, kAbsEntries>& one_bit_halves();

// The nearest codeword to x (Euclidean); ties go to the first found. Exact:
// per abs pattern and shift, the best signs under the parity rule in closed
// form (QuIP#'s two-coset rounding, scanned over all 256 patterns).
uint16_t nearest(const float x[kDim]);
// Up to k codes (k <= 1024) near x, nearest first by Euclidean distance (ties:
// first found): per abs pattern and shift, the best signs under the parity
// rule and the second best (one other coordinate flipped, or two), the k
// nearest of those 1,024. The first is as near as nearest(x)'s. For choosing a
// codeword under another metric (the solver's block metric) by rescoring.
uint32_t nearest_k(const float x[kDim], uint32_t k, uint16_t* codes);
// The nearest of the 256 1-bit points to x (exhaustive).
uint8_t nearest_one_bit(const float x[kDim]);

// Stage layout of a rate: 2 bits E8P alone, 3 adds a 1-bit stage, 4 a second E8P.
enum class Stage2 : uint8_t { kNone = 0, kOneBit = 1, kE8p = 2 };
Stage2 stage2_of_bits(uint32_t bits);
float rho_of(Stage2 s);  // 0 for kNone

// x_hat = c1 + c2 / rho as floats, the one formula the decoder and the encoder
// share (c2 ignored for kNone).
void reconstruct(Stage2 s, uint16_t c1, uint16_t c2, float out[kDim]);
// Encodes one 8-vector greedily stage by stage (QuIP#): c1 = nearest(x),
// c2 = nearest stage-2 point of (x - c1) rho; writes the codes and x_hat.
void encode(Stage2 s, const float x[kDim], uint16_t* c1, uint16_t* c2, float out[kDim]);

// A matrix of E8P vectors along the input axis: row r, columns 8k..8k+7 are
//   W[r][8k + i] = f16 scale[r] x x_hat(code[r][k], residual[r][k])_i
// codes u16 [rows, cols / 8]; residual u8 (3 bits) or u16 (4 bits) [rows,
// cols / 8], empty at 2 bits; scales f16 [rows], finite.
struct E8pMatrix {
  uint32_t rows = 0, cols = 0, bits = 2;
  std::vector<uint16_t> codes;
  std::vector<uint16_t> residual;  // widened to u16 for the 1-bit stage too
  std::vector<uint16_t> scales;
  Stage2 stage2() const { return stage2_of_bits(bits); }
  // Ledger bytes of the stored fields (codes, residual at its stored width, scales).
  size_t bytes() const;
};

Status check_bits(uint32_t bits);                     // 2, 3 or 4
Status check_shape(uint32_t rows, uint32_t cols);     // rows > 0, cols a positive multiple of 8
// Stored bytes of a [rows, cols] matrix at `bits`.
size_t matrix_bytes(uint32_t rows, uint32_t cols, uint32_t bits);
// Bytes of the residual field per code: 0, 1 or 2.
uint32_t residual_bytes_per_code(uint32_t bits);

// Copies and validates untrusted field bytes: sizes, finite scales (every code
// is valid). `residual` is empty at 2 bits.
Result<E8pMatrix> matrix_from_bytes(uint32_t rows, uint32_t cols, uint32_t bits, std::span<const uint8_t> codes,
                                    std::span<const uint8_t> residual, std::span<const uint8_t> scales);
// The reference decoder: W [rows, cols] row-major.
std::vector<float> decode_matrix(const E8pMatrix& m);

}  // namespace submoe::e8p
