// The rotation of one rvq matrix: W' = T_o W T_i^T (kernels/hadamard.h), with
// the sign seeds the artifact records per matrix.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/kernels/hadamard.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {

// The seed the writer uses for a width: one per width, so gate and up (same
// input width) share their input rotation T_i and its rotated Hessian.
uint64_t rvq_default_seed(uint32_t n);

struct RvqRotation {
  kernels::RandomizedHadamard out;  // T_o, rows
  kernels::RandomizedHadamard in;   // T_i, cols
  static Result<RvqRotation> create(uint32_t rows, uint32_t cols, uint64_t seed_out, uint64_t seed_in);
  // W <- T_o^T W T_i (rows x cols, row-major): back to the source's coordinates.
  Status unrotate(std::span<float> w) const;
  // An encoding problem into the rotated coordinates: W <- T_o W T_i^T and,
  // when h is not empty (GPTQ), H <- T_i H T_i^T (accumulated in double).
  Status rotate_problem(std::vector<float>& w, std::vector<float>& h) const;
};

// The rotation an `rht_seeds` field names (U64 [2]: the seeds of T_o and
// T_i); kCorruptData naming `repr` when it is not 16 bytes.
Result<RvqRotation> rotation_of_seeds(uint32_t rows, uint32_t cols, std::span<const std::byte> seeds,
                                      std::string_view repr);
// The `rht_seeds` field to pack.
PackedTensor seeds_field(uint64_t seed_out, uint64_t seed_in);

}  // namespace submoe::runtime::repr
