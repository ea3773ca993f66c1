// AQLM's conversion of one matrix (seed 002, 0x05C-0x05F): the input-adaptive
// objective L = tr((W - W_hat) G (W - W_hat)^T) with G = H + damp x mean(diag
// H) x I from the calibration inputs (G = I without them), minimized by
//
//   phase 0  row scales s_r = RMS(w_r); residual k-means over the 8-weight
//            groups of W / s (codebook m clusters what codebooks < m left;
//            2^B > 1024 entries start as all sums of two residual k-means
//            codebooks of 2^(B/2) entries, so 1x16 starts at a 2x8 fit);
//   phase 1  codes: for each 8-column group (one at a time, every row) the
//            code tuple minimizing L with everything else fixed, by beam
//            search over single-code replacements (0x05D: unary terms c G c,
//            pairwise terms through G_JJ, the cross-group coupling through
//            the running residual times G);
//   phase 2  codebooks by conjugate gradients on their normal equations
//            (L is quadratic in the codebook entries with the codes fixed),
//            then each row scale by its closed-form least squares, both
//            rounded to f16 as stored;
//
// alternating 1 and 2 until L improves by less than the tolerance (relative)
// or the iteration cap. Every decode inside uses the stored f16 values, so
// the returned matrix decodes (aqlm::decode_matrix) to exactly what was
// scored. Phase 3 of the paper (block fine-tuning) is not done.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/codec/aqlm.h"
#include "submoe/core/status.h"

namespace submoe::runtime::repr::aqlm_solver {

struct Options {
  aqlm::Shape shape;
  uint32_t beam = 4;              // hypotheses kept per beam round (1..64)
  uint32_t max_iterations = 4;    // phase 1 + 2 alternations after the initial code pass
  double tolerance = 1e-3;        // stop when (L_prev - L) / L_prev < tolerance
  uint32_t kmeans_iterations = 12;
  uint32_t kmeans_points = 65536;  // k-means trains on at most this many groups (a fixed-stride sample)
  uint32_t cg_iterations = 16;    // conjugate-gradient steps per codebook update
  uint64_t seed = 1;
};

struct Report {
  // L after phase 0 (codes from the init), then after each alternation.
  std::vector<double> loss_history;
  uint32_t iterations = 0;
  bool converged = false;  // stopped on the tolerance
};

// Whether a [rows, cols] matrix can be fitted: the codebooks' 2^B entries
// must not outnumber the matrix's groups (else k-means has nothing to fit).
Status check_fittable(uint32_t rows, uint32_t cols, aqlm::Shape shape);

// W [rows, cols] row-major; h [cols, cols] (empty: G = I); damp as in GPTQ.
Result<aqlm::AqlmMatrix> solve(std::span<const float> w, uint32_t rows, uint32_t cols, std::span<const float> h,
                               double damp, const Options& options, Report* report);

}  // namespace submoe::runtime::repr::aqlm_solver
