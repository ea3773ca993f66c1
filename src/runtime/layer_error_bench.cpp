#include "submoe/runtime/layer_error_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <string>

#include "submoe/core/clock.h"
#include "submoe/quant/gptq.h"

namespace submoe::runtime {
namespace {

// H is cols^2 floats and GPTQ keeps two more copies of that size: 16384
// columns already take 3 GiB.
constexpr uint32_t kMaxCols = 16384;
constexpr uint32_t kMaxRows = 65536;
constexpr double kWeightStd = 0.02;

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// D's diagonal: log-normal scales, then round(fraction x cols) distinct
// channels drawn at random (a partial Fisher-Yates shuffle) times the gain.
std::vector<double> channel_scales(const LayerProblemOptions& o, std::mt19937_64& rng) {
  std::normal_distribution<double> n01;
  std::vector<double> d(o.cols);
  for (double& v : d) v = std::exp(o.channel_spread * n01(rng));
  const auto outliers = static_cast<uint32_t>(std::llround(o.outlier_channels * o.cols));
  std::vector<uint32_t> order(o.cols);
  std::iota(order.begin(), order.end(), 0u);
  for (uint32_t i = 0; i < outliers; ++i) {
    std::uniform_int_distribution<uint32_t> pick(i, o.cols - 1);
    std::swap(order[i], order[pick(rng)]);
    d[order[i]] *= o.outlier_gain;
  }
  return d;
}

std::vector<float> weights(const LayerProblemOptions& o, std::mt19937_64& rng) {
  std::vector<float> w(size_t{o.rows} * o.cols);
  if (o.weights == LayerWeights::kGaussian) {
    std::normal_distribution<double> nd(0.0, kWeightStd);
    for (float& v : w) v = static_cast<float>(nd(rng));
  } else {
    // A Student-t variable has variance nu / (nu - 2).
    std::student_t_distribution<double> td(o.nu);
    const double scale = kWeightStd * std::sqrt((o.nu - 2) / o.nu);
    for (float& v : w) v = static_cast<float>(scale * td(rng));
  }
  return w;
}

// H_ij = d_i d_j rho^|i-j|, each entry computed in double.
std::vector<float> analytic_hessian(const std::vector<double>& d, double rho) {
  const size_t n = d.size();
  std::vector<double> rho_pow(n);
  for (size_t k = 0; k < n; ++k) rho_pow[k] = std::pow(rho, static_cast<double>(k));
  std::vector<float> h(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) h[i * n + j] = static_cast<float>(d[i] * d[j] * rho_pow[i > j ? i - j : j - i]);
  return h;
}

}  // namespace

Result<LayerWeights> parse_layer_weights(const std::string& name) {
  if (name == "gaussian") return LayerWeights::kGaussian;
  if (name == "student-t") return LayerWeights::kStudentT;
  return invalid_argument("--weights must be gaussian or student-t, got '" + name + "'");
}

const char* layer_weights_name(LayerWeights w) { return w == LayerWeights::kGaussian ? "gaussian" : "student-t"; }

Status check_layer_problem_options(const LayerProblemOptions& o) {
  if (o.rows == 0 || o.cols == 0 || o.rows > kMaxRows || o.cols > kMaxCols)
    return invalid_argument("--shape must be RxC with rows in [1, " + std::to_string(kMaxRows) + "] and cols in [1, " +
                            std::to_string(kMaxCols) + "] (H is cols x cols), got " + std::to_string(o.rows) + "x" +
                            std::to_string(o.cols));
  // Written as !(in range) so that NaN is refused too.
  if (!(o.nu > 2 && std::isfinite(o.nu)))
    return invalid_argument("--nu must be a finite number above 2 (the variance exists), got " + number_text(o.nu));
  if (!(o.rho >= 0 && o.rho < 1)) return invalid_argument("--rho must be in [0, 1), got " + number_text(o.rho));
  if (!(o.channel_spread >= 0 && std::isfinite(o.channel_spread)))
    return invalid_argument("--channel-spread must be a finite number >= 0, got " + number_text(o.channel_spread));
  if (!(o.outlier_channels >= 0 && o.outlier_channels < 1))
    return invalid_argument("--outlier-channels must be a fraction in [0, 1), got " + number_text(o.outlier_channels));
  if (!(o.outlier_gain > 0 && std::isfinite(o.outlier_gain)))
    return invalid_argument("--outlier-gain must be a finite number above 0, got " + number_text(o.outlier_gain));
  return Status::ok();
}

Result<LayerProblem> make_layer_problem(const LayerProblemOptions& o, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_layer_problem_options(o));
  std::mt19937_64 rng(o.seed);
  LayerProblem p;
  p.rows = o.rows;
  p.cols = o.cols;
  p.channel_scale = channel_scales(o, rng);
  p.w = weights(o, rng);
  p.h = analytic_hessian(p.channel_scale, o.rho);
  p.output_energy = hessian_quadratic_trace(p.w, p.rows, p.cols, p.h, pool);
  return p;
}

double hessian_quadratic_trace(const std::vector<float>& m, uint32_t rows, uint32_t cols, const std::vector<float>& h,
                               ThreadPool* pool) {
  // One pass over H serves 8 rows: at 4096 columns H is 64 MiB and streams
  // from memory once per pass, while the 8 partial products (256 KiB of
  // doubles) stay in L2.
  constexpr size_t kRowsPerPass = 8;
  const size_t passes = (size_t{rows} + kRowsPerPass - 1) / kRowsPerPass;
  std::vector<double> partial(passes, 0.0);
  auto run = [&](size_t first, size_t last, int) {
    std::vector<double> v(kRowsPerPass * cols);
    for (size_t pass = first; pass < last; ++pass) {
      const size_t r0 = pass * kRowsPerPass, n = std::min(kRowsPerPass, rows - r0);
      std::fill(v.begin(), v.end(), 0.0);
      // v_k = H m_k as a sum of H's rows (H symmetric): an axpy per weight,
      // which vectorizes without reassociating a reduction. A float x float
      // product is exact in double, so only the sums round.
      for (size_t j = 0; j < cols; ++j) {
        const float* hj = h.data() + j * cols;
        for (size_t k = 0; k < n; ++k) {
          const double a = m[(r0 + k) * cols + j];
          if (a == 0) continue;
          double* vk = v.data() + k * cols;
          for (size_t i = 0; i < cols; ++i) vk[i] += a * hj[i];
        }
      }
      double s = 0;
      for (size_t k = 0; k < n; ++k)
        for (size_t i = 0; i < cols; ++i) s += double{m[(r0 + k) * cols + i]} * v[k * cols + i];
      partial[pass] = s;
    }
  };
  if (pool) {
    pool->parallel_for(passes, 1, run);
  } else {
    run(0, passes, 0);
  }
  return std::accumulate(partial.begin(), partial.end(), 0.0);
}

Result<LayerErrorRow> measure_layer_error(const LayerProblem& p, const ReprOptions& repr, ThreadPool* pool,
                                          const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  if (p.w.size() != size_t{p.rows} * p.cols || p.h.size() != size_t{p.cols} * p.cols || !(p.output_energy > 0))
    return invalid_argument("bench layer: the problem's W, H or tr(W H W^T) does not fit its shape");
  const auto t0 = std::chrono::steady_clock::now();
  auto made = make_codec(repr);
  if (!made.is_ok()) return made.status().with_context("representation '" + repr.name + "'");
  const std::shared_ptr<const MatrixCodec> codec = std::move(made).value();
  const std::string summary = codec->summary();
  SUBMOE_RETURN_IF_ERROR(codec->check_encodable(p.rows, p.cols).with_context(summary));
  auto encoder = codec->make_encoder(p.rows, p.cols);
  if (!encoder.is_ok()) return encoder.status().with_context(summary);
  MatrixEncoder& enc = **encoder;

  say("encoding " + std::to_string(p.rows) + "x" + std::to_string(p.cols) + " with " + summary + " (GPTQ)");
  // As the compression pipeline does one matrix: the codec's rotation on its
  // own copies of W and H, then GPTQ with the default options.
  std::vector<float> w = p.w;
  std::vector<float> h_rotated;
  const std::vector<float>* h = &p.h;
  if (enc.rotates()) {
    h_rotated = p.h;
    SUBMOE_RETURN_IF_ERROR(enc.prepare(w, h_rotated).with_context(summary));
    h = &h_rotated;
  }
  auto gptq = quant::gptq_quantize(w, p.rows, p.cols, *h, enc, quant::GptqOptions{}, pool);
  if (!gptq.is_ok()) return gptq.status().with_context(summary);
  // A fallback would measure round to nearest under GPTQ's name.
  if (gptq->rtn_fallback)
    return numerical_error(summary + ": GPTQ fell back to round to nearest (" + gptq->fallback_reason + ")");
  auto packed = enc.pack();
  if (!packed.is_ok()) return packed.status().with_context(summary);
  LayerErrorRow row;
  row.representation = summary;
  row.encode_seconds = seconds_since(t0);

  size_t bytes = 0;
  for (const PackedTensor& t : *packed) bytes += t.bytes.size();
  const double weight_count = static_cast<double>(p.rows) * p.cols;
  row.bits_per_weight = 8.0 * static_cast<double>(bytes) / weight_count;

  const std::vector<float> w_hat = enc.dequantize();
  if (w_hat.size() != p.w.size())
    return internal_error(summary + ": the encoder reconstructed " + std::to_string(w_hat.size()) + " weights, not " +
                          std::to_string(p.w.size()));
  say("measuring the error of " + summary);
  std::vector<float> dw(p.w.size());
  double dw_sq = 0, w_sq = 0;
  for (size_t i = 0; i < dw.size(); ++i) {
    dw[i] = p.w[i] - w_hat[i];
    dw_sq += double{dw[i]} * dw[i];
    w_sq += double{p.w[i]} * p.w[i];
  }
  row.rel_output_error = hessian_quadratic_trace(dw, p.rows, p.cols, p.h, pool) / p.output_energy;
  row.rel_weight_mse = w_sq > 0 ? dw_sq / w_sq : 0;
  return row;
}

}  // namespace submoe::runtime
