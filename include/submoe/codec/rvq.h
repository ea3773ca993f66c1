// Residual vector quantization (seed 001, "Method: Codec"): k-means codebook
// training, the stage-by-stage RVQ trainer, the subvector encoder (greedy and
// beam search), the matrix encoder with fp16 RMS row scales, the reference
// decoder (THE oracle of every fast kernel), validation of untrusted packed
// data, the rate ledger and the synthetic rate-distortion experiment behind
// `submoe codec rvq-synth`. The packed layout is rvq_format.h; docs/rvq.md
// explains the choices and the measured curve.
//
// Determinism: every function here gives bit-identical results for the same
// inputs and seed whatever the thread count (work is cut into fixed chunks,
// partial sums are kept per chunk in double and reduced in chunk order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "submoe/codec/rvq_format.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::rvq {

// ---------------------------------------------------------------------------
// Deterministic Gaussian data. The global codebooks are trained on N(0,1)
// vectors at compression time, so a seed must mean the same vectors on every
// platform: std::normal_distribution differs across standard libraries, so the
// generator is spelled out. splitmix64 (Steele, Lea, Flood 2014: state +=
// 0x9e3779b97f4a7c15, then two xor-shift-multiply rounds) gives 64-bit words;
// uniform(0,1] = ((word >> 11) + 1) * 2^-53; Box-Muller in double turns each
// pair (u1, u2) into sqrt(-2 ln u1) * cos(2 pi u2) and sqrt(-2 ln u1) *
// sin(2 pi u2), in that order, each rounded to float. (Libm's log/cos/sin are
// correctly rounded or within 1 ulp in double on every platform we target; the
// final rounding to float hides that last ulp except in rare ties.)
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // In (0, 1]: never 0, so log() is finite.
  double uniform_open0();

 private:
  uint64_t state_;
};

// out[i] ~ N(0, 1), i.i.d., as described above.
void fill_gaussian(std::span<float> out, uint64_t seed);
// count x kRvqDim floats (row-major), fill_gaussian of that many values.
std::vector<float> gaussian_vectors(size_t count, uint64_t seed);

// ---------------------------------------------------------------------------
// k-means on 16-dimensional points (row-major, kRvqDim floats each).
//
// Seeding: k-means++ (first centre uniform, each next one drawn with
// probability proportional to the squared distance to the nearest chosen
// centre), driven by SplitMix64(seed). Lloyd iterations: assign every point to
// its nearest centroid (score ||c||^2 - 2 x.c with precomputed norms, ties to
// the lower index), move each centroid to the mean of its points (sums in
// double), stop when the relative improvement of the error falls below
// `tolerance` or after `max_iterations` updates.
// Empty-cluster policy: a centroid that lost all its points is re-seeded at the
// point with the largest current error (squared distance to its own
// centroid), the next empty one at the next largest, and so on (ties to the
// lower point index); the chosen points count as error 0 for later picks. This
// never increases the error: the point's contribution drops to 0 and every
// other cluster only moves to its mean.
struct KMeansOptions {
  uint32_t centroids = kRvqEntries;  // k, 1 <= k <= number of points
  uint32_t max_iterations = 25;      // Lloyd updates after seeding
  double tolerance = 1e-4;           // stop when (e_prev - e) / e_prev < tolerance
  uint64_t seed = 1;
  ThreadPool* pool = nullptr;        // nullptr = the calling thread
};

struct KMeansResult {
  std::vector<float> centroids;  // k x kRvqDim
  // Sum of squared errors (exact distances, double) of the assignment to the
  // seeded centroids (element 0), then after each Lloyd update.
  std::vector<double> error_history;
  uint32_t iterations = 0;    // Lloyd updates done
  uint32_t empty_reseeds = 0; // centroids re-seeded by the empty-cluster policy
  bool converged = false;     // stopped on `tolerance`
};

// Seeds with k-means++ and runs Lloyd. Errors: no points, a size that is not a
// multiple of kRvqDim, k of 0 or above the number of points, a non-finite
// point (named by index).
Result<KMeansResult> kmeans16(std::span<const float> points, const KMeansOptions& options);
// Lloyd from the given k x kRvqDim centroids (options.centroids is ignored;
// seed unused).
Result<KMeansResult> kmeans16_from(std::span<const float> points, std::span<const float> initial_centroids,
                                   const KMeansOptions& options);

// ---------------------------------------------------------------------------
// Stage codebooks prepared for encoding: each stage transposed to [16][256]
// (so the 256 scores of one subvector are 16 vectorizable passes) with its
// squared norms. Encoding the same target with the same codebooks gives the
// same codes whether it goes through encode_subvector or an RvqEncoder.
class RvqEncoder {
 public:
  // codebooks: at least `stages` x kRvqCodebookFloats floats (F32 [stages, 256,
  // 16] as in rvq_format.h), finite; stages in 1..kRvqMaxStages.
  static Result<RvqEncoder> create(std::span<const float> codebooks, uint32_t stages);

  uint32_t stages() const { return stages_; }
  // Encodes one subvector with `beam_width` in 1..256 (see encode_subvector).
  // Thread-safe (const, no shared scratch). Returns the squared error
  // sum_j (target[j] - reconstruction[j])^2 accumulated in double.
  double encode(const float* target, uint32_t beam_width, uint8_t* codes_out, float* reconstruction_out) const;

  // Internal tables (for the trainer): stage s's entry c, transposed and norms.
  const float* transposed(uint32_t s) const { return transposed_.data() + size_t{s} * kRvqCodebookFloats; }
  const float* norms(uint32_t s) const { return norms_.data() + size_t{s} * kRvqEntries; }
  const float* codebook(uint32_t s) const { return codebooks_.data() + size_t{s} * kRvqCodebookFloats; }

 private:
  uint32_t stages_ = 0;
  std::vector<float> codebooks_;   // [stages][256][16]
  std::vector<float> transposed_;  // [stages][16][256]
  std::vector<float> norms_;       // [stages][256]
};

// Encodes one subvector of kRvqDim weights (already divided by the row scale)
// with `stages` stages: codes_out[s] is stage s's entry, reconstruction_out is
// sum_{s < stages} codebooks[s][codes_out[s]] summed in ascending s in float32,
// exactly as decode_rvq_reference computes it.
// beam_width 1: greedy, each stage takes the entry nearest to the residual
// target - (reconstruction of the stages before). beam_width B > 1: keeps the B
// best partial reconstructions per stage among the B x 256 extensions (scored
// by squared error, ties to the earlier beam, then the lower entry), picks the
// final one by exact squared error, and also runs the greedy path, returning
// it when it is strictly better: beam search is never worse than greedy. With
// B = 256 and 2 stages every one of the 65536 pairs is scored (exhaustive).
// Returns the squared error (double). Errors: stages outside 1..8, beam_width
// outside 1..256, codebooks shorter than stages x 4096 floats or not finite.
// For many subvectors build an RvqEncoder once (same results, no set-up cost).
Result<double> encode_subvector(const float target[kRvqDim], uint32_t stages, std::span<const float> codebooks,
                                uint32_t beam_width, uint8_t* codes_out, float reconstruction_out[kRvqDim]);

// ---------------------------------------------------------------------------
// Codebook training (the seed): stage s's codebook is k-means (256 entries) on
// the residuals left by stages < s, each residual being sample - the
// reconstruction that the encoder itself (RvqEncoder with `beam_width`) gives
// with s stages, so training and encoding agree.
struct RvqTrainOptions {
  uint32_t max_iterations = 25;
  double tolerance = 1e-4;
  uint64_t seed = 1;       // k-means++ seed of stage s is a hash of (seed, s)
  uint32_t beam_width = 1; // encoder used for the training residuals
  ThreadPool* pool = nullptr;
  // Called after each stage with a one-line summary (e.g. progress on stderr).
  std::function<void(const std::string&)> progress;
};

struct RvqStageStats {
  uint32_t iterations = 0;
  uint32_t empty_reseeds = 0;
  double mse_before = 0;  // mean squared error per weight of the residual entering the stage
  double mse_after = 0;   // after the stage's k-means (greedy assignment)
};

struct RvqTrainResult {
  std::vector<float> codebooks;  // F32 [stages, 256, 16]
  std::vector<RvqStageStats> stages;
};

// samples: count x kRvqDim floats (count >= 256), stages in 1..8.
Result<RvqTrainResult> train_rvq_codebooks(std::span<const float> samples, uint32_t stages,
                                           const RvqTrainOptions& options);

// Encodes `count` subvectors (count x kRvqDim floats) with `stages` stages:
// codes count x stages, reconstruction count x kRvqDim (either may be empty to
// skip it). Returns the total squared error (double, summed per fixed chunk
// then in chunk order).
Result<double> encode_rvq_vectors(std::span<const float> vectors, const RvqEncoder& encoder, uint32_t stages,
                                  uint32_t beam_width, std::span<uint8_t> codes, std::span<float> reconstruction,
                                  ThreadPool* pool);

// ---------------------------------------------------------------------------
// Matrix level.

// Shared global codebooks (one F32 [max_stages, 256, 16] array per artifact).
using RvqCodebookSet = std::shared_ptr<const std::vector<float>>;

// Row scale: f16 of the row's RMS sqrt(sum w^2 / cols) (computed in double,
// rounded to nearest even). A row whose RMS rounds to f16 zero gets a defined
// positive scale instead: 1.0 for an all-zero row (its codes then code the
// zero vector), the smallest f16 subnormal 2^-24 for a non-zero row below
// f16's range. Errors: a non-finite weight, an RMS above f16's largest 65504.
Result<uint16_t> rvq_row_scale(std::span<const float> row);

class RvqMatrix {
 public:
  RvqMatrix() = default;
  RvqMatrix(RvqMatrix&&) noexcept = default;
  RvqMatrix& operator=(RvqMatrix&&) noexcept = default;

  // Copies codes (rows x groups x stages) and scales (rows) into aligned
  // storage, shares the codebooks, and validates everything (validate_rvq).
  static Result<RvqMatrix> from_parts(uint32_t rows, uint32_t cols, uint32_t stages, std::span<const uint8_t> codes,
                                      std::span<const uint16_t> scales, RvqCodebookSet codebooks);

  RvqView view() const;
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  uint32_t stages() const { return stages_; }
  uint32_t groups() const { return rvq_groups(cols_); }
  std::span<const uint8_t> codes() const { return codes_.span(); }
  std::span<const uint16_t> scales() const { return scales_.span(); }
  const RvqCodebookSet& codebooks() const { return codebooks_; }
  // Bytes of codes + scales (rvq_matrix_bytes; the codebooks are the artifact's).
  size_t storage_bytes() const { return rvq_matrix_bytes(rows_, cols_, stages_); }

 private:
  friend Result<RvqMatrix> encode_rvq_matrix(std::span<const float>, uint32_t, uint32_t, uint32_t, RvqCodebookSet,
                                             uint32_t, ThreadPool*);
  uint32_t rows_ = 0;
  uint32_t cols_ = 0;
  uint32_t stages_ = 0;
  AlignedBuffer<uint8_t> codes_;
  AlignedBuffer<uint16_t> scales_;
  RvqCodebookSet codebooks_;
};

// Encodes w (rows x cols, row-major, cols a positive multiple of 16): per row
// the scale of rvq_row_scale, then each subvector w[r][g*16 .. g*16+16) /
// scale (float division) with encode_subvector's algorithm. Rows are
// independent (parallel over rows when a pool is given; identical output).
Result<RvqMatrix> encode_rvq_matrix(std::span<const float> w, uint32_t rows, uint32_t cols, uint32_t stages,
                                    RvqCodebookSet codebooks, uint32_t beam_width, ThreadPool* pool);

// Full check of untrusted data: rows >= 1, cols a positive multiple of 16,
// stages in 1..8, non-null arrays, every scale a finite positive f16 (NaN,
// +-Inf, +-0 and negative rejected), every codebook float of stages 0..S-1
// finite with |x| <= kRvqMaxCodebookMagnitude. Messages name the field (rows /
// cols / stages / scales / codes / codebooks) and the first bad index. Any
// view that passes decodes to finite values (65504 x 8 x 1e30 < FLT_MAX).
inline constexpr float kRvqMaxCodebookMagnitude = 1e30f;
Status validate_rvq(const RvqView& v);

// Interprets raw little-endian arrays (e.g. tensors mapped from a file) as a
// view: checks shape parameters and byte sizes (codes rows * groups * stages,
// scales 2 * rows, codebooks a whole number of 16384-byte stages, at least
// `stages` and at most kRvqMaxStages) and the alignment of scales (2) and
// codebooks (4), then runs validate_rvq.
Result<RvqView> make_rvq_view(uint32_t rows, uint32_t cols, uint32_t stages, std::span<const std::byte> codes,
                              std::span<const std::byte> scales, std::span<const std::byte> codebooks);

// Reference decoder (validates first): rows x cols floats, value(r, g*16 + j) =
// f16_to_float(scales[r]) * sum_{s < S} codebooks[s][codes[r][g][s]][j], the
// sum in ascending s in float32, then the product.
Result<std::vector<float>> decode_rvq_reference(const RvqView& v);

// ---------------------------------------------------------------------------
// Rate ledger of one matrix (exact, in bits).
struct RvqLedger {
  uint64_t weights = 0;
  uint64_t code_bytes = 0;       // rows * groups * stages
  uint64_t scale_bytes = 0;      // 2 * rows
  uint64_t codebook_bytes = 0;   // stages * 16384 (shared by the artifact)
  double code_bits_per_weight = 0;   // stages / 2
  double scale_bits_per_weight = 0;  // 16 / cols
  double bits_per_weight = 0;        // codes + scales (what every matrix pays)
  double bits_per_weight_with_codebooks = 0;  // + the codebooks counted against this matrix alone
};
RvqLedger rvq_ledger(uint32_t rows, uint32_t cols, uint32_t stages);

// ---------------------------------------------------------------------------
// Synthetic rate-distortion experiment (`submoe codec rvq-synth`).
//
// Trains max(stages) codebooks on train_vectors i.i.d. N(0,1) 16-dim vectors
// (seed A = seed), then for each S in 1..stages (or only S = stages): encodes
// a fresh rows x cols N(0,1) matrix (seed B = seed + 1) with the fp16 row
// scales and the decoded error through decode_rvq_reference; the same number
// of fresh raw vectors without scaling (seed C = seed + 2); and the training
// set itself (the first min(train_vectors, eval_train_vectors) vectors).
// Stage-by-stage training makes the S-stage codebooks a prefix of the
// max-stage ones, so one training serves the whole curve.
struct RvqSynthOptions {
  uint32_t stages = 4;
  uint32_t rows = 128;
  uint32_t cols = 4096;
  size_t train_vectors = 131072;
  size_t eval_train_vectors = 65536;  // 0 = the whole training set
  uint32_t beam_width = 8;
  uint32_t train_beam_width = 1;
  uint32_t max_iterations = 25;
  double tolerance = 1e-4;
  uint64_t seed = 1;
  bool curve = false;  // every S in 1..stages, else only S = stages
  ThreadPool* pool = nullptr;
  std::function<void(const std::string&)> progress;
};

struct RvqSynthPoint {
  uint32_t stages = 0;
  double bits_per_weight = 0;       // ledger: codes + scales
  double code_bits_per_weight = 0;  // stages / 2
  double mse = 0;       // ||W - decode||^2 / ||W||^2 of the held-out matrix (with row scales)
  double mse_raw = 0;   // mean squared error per weight of held-out raw vectors (variance 1)
  double mse_train = 0; // same on the training vectors
  double gaussian_bound = 0;  // 2^(-2 R), R = code bits per weight
  double lloyd_max_scalar_mse = -1;  // Gaussian Lloyd-Max optimum at an integer rate, else -1
  bool roundtrip_ok = false;  // decode_rvq_reference matches the encoder's reconstruction bit for bit
  double encode_seconds = 0;
};

struct RvqSynthResult {
  std::vector<RvqSynthPoint> points;  // ascending stages; last one is S = stages
  std::vector<RvqStageStats> train_stages;
  double train_seconds = 0;
  double seconds = 0;  // whole experiment
};

Result<RvqSynthResult> run_rvq_synth(const RvqSynthOptions& options);

// Gaussian Lloyd-Max scalar quantizer MSE (unit variance) at 1..4 bits (Max
// 1960): 0.3634, 0.1175, 0.03454, 0.009497; -1 for any other rate.
double lloyd_max_gaussian_mse(double bits);

}  // namespace submoe::rvq
