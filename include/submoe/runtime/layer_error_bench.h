// The quantization error of one synthetic linear layer at a real width
// (`submoe bench layer`): a representation's GPTQ encoding of W against the
// layer's input second moment H, measured as the relative output error
// tr(dW H dW^T) / tr(W H W^T). It compares representations at equal
// serialized size where the embedded model cannot: at its 256 columns a
// per-row table (SqueezeLLM's fp16 LUT, 16 x 2^b / cols bits) costs 0.5 bit a
// weight, at 4096 columns 0.03.
//
// The inputs are never sampled: x = D z with z a stationary AR(1) sequence
// over the channel index (correlation rho^|i-j|) and D the channel scales, so
// H = D R D is known exactly and the measure has no sampling noise.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {

enum class LayerWeights { kGaussian, kStudentT };

// "gaussian" or "student-t"; anything else is an error naming --weights.
Result<LayerWeights> parse_layer_weights(const std::string& name);
const char* layer_weights_name(LayerWeights w);

struct LayerProblemOptions {
  uint32_t rows = 512;   // outputs
  uint32_t cols = 4096;  // inputs
  // N(0, 0.02^2), or Student-t with `nu` degrees of freedom scaled to std 0.02
  // (the heavy tails of trained LLM weights).
  LayerWeights weights = LayerWeights::kStudentT;
  double nu = 5;
  double rho = 0.8;               // AR(1) coefficient over the channel index, [0, 1)
  double channel_spread = 0.5;    // channel scales exp(spread x N(0, 1))
  double outlier_channels = 0.005;  // this fraction of channels (at random) ...
  double outlier_gain = 10;         // ... has its scale multiplied by this
  uint64_t seed = 1;
};

struct LayerProblem {
  uint32_t rows = 0, cols = 0;
  std::vector<float> w;              // [rows, cols]
  std::vector<float> h;              // [cols, cols], D R D computed in float64, stored as float
  std::vector<double> channel_scale;  // D's diagonal, outliers included
  double output_energy = 0;          // tr(W H W^T), the denominator of every row
};

// Errors name the flag of the out-of-range option (--shape, --rho, --nu, ...).
Status check_layer_problem_options(const LayerProblemOptions& options);
// Deterministic from options.seed (std::mt19937_64): channel scales, then the
// outlier channels, then W row by row. `pool` serves tr(W H W^T) only.
Result<LayerProblem> make_layer_problem(const LayerProblemOptions& options, ThreadPool* pool = nullptr);

struct LayerErrorRow {
  std::string representation;    // the codec's summary, e.g. "int (3 bits, group 128)"
  double bits_per_weight = 0;    // 8 x every packed field's bytes / (rows x cols)
  double rel_output_error = 0;   // tr(dW H dW^T) / tr(W H W^T), dW = W - W_hat (in float)
  double rel_weight_mse = 0;     // ||dW||^2 / ||W||^2
  double encode_seconds = 0;     // codec (codebooks where it trains them), rotation, GPTQ, packing
};

// sum_r m_r^T H m_r for m [rows, cols] and H [cols, cols] symmetric: float
// products accumulated in double, rows split over `pool` (nullptr: the
// calling thread); the sum is taken in a fixed order, so the result does not
// depend on the thread count.
double hessian_quadratic_trace(const std::vector<float>& m, uint32_t rows, uint32_t cols,
                               const std::vector<float>& h, ThreadPool* pool);

// Encodes the problem's W with `repr` the way `compress --method gptq` does
// one matrix (the codec's rotation, then GPTQ with default options), and
// measures the reconstruction. Unknown names, options the representation
// does not take and shapes it cannot store are errors naming them. GPTQ's
// rows run on `pool`.
Result<LayerErrorRow> measure_layer_error(const LayerProblem& problem, const ReprOptions& repr, ThreadPool* pool,
                                          const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace submoe::runtime
