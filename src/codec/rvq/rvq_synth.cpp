// The synthetic rate-distortion experiment behind `submoe codec rvq-synth`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"
#include "submoe/core/clock.h"

namespace submoe::rvq {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

double lloyd_max_gaussian_mse(double bits) {
  if (bits == 1.0) return 0.3634;
  if (bits == 2.0) return 0.1175;
  if (bits == 3.0) return 0.03454;
  if (bits == 4.0) return 0.009497;
  return -1.0;
}

Result<RvqSynthResult> run_rvq_synth(const RvqSynthOptions& o) {
  const auto t_start = Clock::now();
  if (o.stages < 1 || o.stages > kRvqMaxStages) {
    return invalid_argument("rvq synth: stages " + std::to_string(o.stages) + " outside 1..8");
  }
  if (o.rows == 0) return invalid_argument("rvq synth: rows must be >= 1");
  if (o.cols == 0 || o.cols % kRvqDim != 0) {
    return invalid_argument("rvq synth: cols " + std::to_string(o.cols) + " must be a positive multiple of 16");
  }
  if (o.train_vectors < kRvqEntries) return invalid_argument("rvq synth: train vectors must be >= 256");
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };

  RvqSynthResult result;
  const std::vector<float> train = gaussian_vectors(o.train_vectors, o.seed);
  RvqTrainOptions to;
  to.max_iterations = o.max_iterations;
  to.tolerance = o.tolerance;
  to.seed = o.seed;
  to.beam_width = o.train_beam_width;
  to.pool = o.pool;
  to.progress = o.progress;
  auto t0 = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(RvqTrainResult trained, train_rvq_codebooks(train, o.stages, to));
  result.train_seconds = seconds_since(t0);
  result.train_stages = trained.stages;
  auto codebooks = std::make_shared<const std::vector<float>>(std::move(trained.codebooks));

  // Held-out data: a matrix (seed B) and raw vectors (seed C).
  const size_t weights = size_t{o.rows} * o.cols;
  const std::vector<float> w = gaussian_vectors(weights / kRvqDim, o.seed + 1);
  const std::vector<float> raw = gaussian_vectors(weights / kRvqDim, o.seed + 2);
  const size_t eval_train =
      o.eval_train_vectors == 0 ? o.train_vectors : std::min(o.train_vectors, o.eval_train_vectors);
  const std::span<const float> train_eval(train.data(), eval_train * kRvqDim);
  double w_energy = 0;
  for (float v : w) w_energy += static_cast<double>(v) * v;

  const uint32_t first = o.curve ? 1 : o.stages;
  for (uint32_t s = first; s <= o.stages; ++s) {
    t0 = Clock::now();
    RvqSynthPoint p;
    p.stages = s;
    const RvqLedger l = rvq_ledger(o.rows, o.cols, s);
    p.bits_per_weight = l.bits_per_weight;
    p.code_bits_per_weight = l.code_bits_per_weight;
    p.gaussian_bound = std::exp2(-2.0 * p.code_bits_per_weight);
    p.lloyd_max_scalar_mse = lloyd_max_gaussian_mse(p.code_bits_per_weight);

    SUBMOE_ASSIGN_OR_RETURN(RvqMatrix m, encode_rvq_matrix(w, o.rows, o.cols, s, codebooks, o.beam_width, o.pool));
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> decoded, decode_rvq_reference(m.view()));
    double err = 0;
    for (size_t i = 0; i < weights; ++i) {
      const double d = static_cast<double>(w[i]) - decoded[i];
      err += d * d;
    }
    p.mse = w_energy > 0 ? err / w_energy : 0.0;
    p.encode_seconds = seconds_since(t0);

    SUBMOE_ASSIGN_OR_RETURN(RvqEncoder encoder, RvqEncoder::create(*codebooks, s));
    // Raw vectors, unscaled; also the bit-exact round trip: build a matrix of
    // unit scales from their codes and compare the reference decoder with the
    // encoder's reconstruction.
    const size_t nraw = raw.size() / kRvqDim;
    std::vector<uint8_t> codes(nraw * s);
    std::vector<float> rec(raw.size());
    SUBMOE_ASSIGN_OR_RETURN(double raw_err, encode_rvq_vectors(raw, encoder, s, o.beam_width, codes, rec, o.pool));
    p.mse_raw = raw_err / static_cast<double>(raw.size());
    {
      const uint32_t rt_rows = static_cast<uint32_t>(nraw * kRvqDim / o.cols);
      const std::vector<uint16_t> ones(rt_rows, 0x3c00);
      SUBMOE_ASSIGN_OR_RETURN(RvqMatrix rt, RvqMatrix::from_parts(rt_rows, o.cols, s, codes, ones, codebooks));
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> rt_decoded, decode_rvq_reference(rt.view()));
      p.roundtrip_ok = rt_decoded.size() == rec.size() &&
                       std::memcmp(rt_decoded.data(), rec.data(), rec.size() * sizeof(float)) == 0;
    }
    SUBMOE_ASSIGN_OR_RETURN(double train_err, encode_rvq_vectors(train_eval, encoder, s, o.beam_width, {}, {}, o.pool));
    p.mse_train = train_err / static_cast<double>(train_eval.size());
    result.points.push_back(p);
    char line[200];
    std::snprintf(line, sizeof line, "rvq synth: %.1f bits, mse %.5f (raw %.5f, train %.5f), 2^-2R %.5f, %.1f s",
                  p.code_bits_per_weight, p.mse, p.mse_raw, p.mse_train, p.gaussian_bound, seconds_since(t0));
    say(line);
  }
  result.seconds = seconds_since(t_start);
  return result;
}

}  // namespace submoe::rvq
