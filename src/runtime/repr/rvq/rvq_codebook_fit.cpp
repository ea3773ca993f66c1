#include "submoe/runtime/rvq_codebook_fit.h"

#include <chrono>
#include <cmath>

#include "runtime/repr/rvq/rvq_rotation.h"
#include "submoe/codec/rvq.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/model_weights.h"
#include "submoe/model/moe_model.h"

namespace submoe::runtime {
namespace {

using repr::RvqRotation;

// One matrix rotated as the encoder rotates it, rows scaled to RMS 1, appended
// to `out` as consecutive 16-weight subvectors.
Status append_subvectors(const io::TensorView& t, bool rotate, std::vector<float>& out) {
  const auto rows = static_cast<uint32_t>(t.shape[0]), cols = static_cast<uint32_t>(t.shape[1]);
  if (cols % rvq::kRvqDim != 0)
    return invalid_argument("tensor '" + t.name + "' has " + std::to_string(cols) +
                            " columns, not a multiple of the 16-weight subvectors");
  std::vector<float> w(size_t{rows} * cols);
  SUBMOE_RETURN_IF_ERROR(io::read_as_f32(t, w));
  if (rotate) {
    SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, RvqRotation::create(rows, cols, repr::rvq_default_seed(rows),
                                                                 repr::rvq_default_seed(cols)));
    SUBMOE_RETURN_IF_ERROR(kernels::rotate_matrix(rot.out, rot.in, std::span<float>(w), rows, cols));
  }
  for (uint32_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (uint32_t c = 0; c < cols; ++c) ss += double{w[size_t{r} * cols + c]} * w[size_t{r} * cols + c];
    const double rms = std::sqrt(ss / cols);
    if (!(rms > 0) || !std::isfinite(rms)) continue;  // an all-zero row codes exactly; leave it out
    for (uint32_t c = 0; c < cols; ++c) out.push_back(static_cast<float>(w[size_t{r} * cols + c] / rms));
  }
  return Status::ok();
}

// At most `limit` subvectors, evenly spaced (all when fewer).
std::vector<float> evenly(const std::vector<float>& v, size_t limit) {
  const size_t n = v.size() / rvq::kRvqDim;
  if (n <= limit) return v;
  std::vector<float> out(limit * rvq::kRvqDim);
  for (size_t i = 0; i < limit; ++i)
    std::copy_n(v.data() + (i * n / limit) * rvq::kRvqDim, rvq::kRvqDim, out.data() + i * rvq::kRvqDim);
  return out;
}

double sum_squares(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double{x} * x;
  return s;
}

Result<rvq::RvqEncoder> trained_encoder(std::span<const float> samples, uint32_t stages,
                                        const RvqCodebookFitOptions& o) {
  rvq::RvqTrainOptions t;
  t.max_iterations = o.iters;
  t.seed = o.seed;
  t.pool = o.pool;
  SUBMOE_ASSIGN_OR_RETURN(rvq::RvqTrainResult r, rvq::train_rvq_codebooks(samples, stages, t));
  return rvq::RvqEncoder::create(r.codebooks, stages);
}

Result<double> relative_mse(const std::vector<float>& x, const rvq::RvqEncoder& enc, const RvqCodebookFitOptions& o) {
  SUBMOE_ASSIGN_OR_RETURN(double err, rvq::encode_rvq_vectors(x, enc, enc.stages(), o.beam, {}, {}, o.pool));
  return err / sum_squares(x);
}

}  // namespace

Result<RvqCodebookFitReport> fit_rvq_codebooks(const std::string& model_dir, const RvqCodebookFitOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const double stages_d = o.bits / rvq::kRvqBitsPerStage;
  if (!(stages_d >= 1 && stages_d <= rvq::kRvqMaxStages) || stages_d != std::floor(stages_d))
    return invalid_argument("--bits must be 0.5 to 4 in steps of 0.5, got " + std::to_string(o.bits));
  if (o.beam < 1 || o.beam > rvq::kRvqEntries) return invalid_argument("--beam must be 1..256");
  if (o.train_vectors < rvq::kRvqEntries) return invalid_argument("--train-vectors must be at least 256");
  const auto stages = static_cast<uint32_t>(stages_d);
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<model::MoeModel> model, model::MoeModel::load(model_dir));
  SUBMOE_ASSIGN_OR_RETURN(auto source, io::SafetensorsModel::open(model_dir));
  const io::MoeModelConfig& c = model->config();
  if (c.num_experts < 2) return invalid_argument("'" + model_dir + "' has fewer than 2 routed experts per layer");

  RvqCodebookFitReport rep;
  rep.stages = stages;
  if (o.progress) o.progress("training the global codebooks on N(0, 1) vectors");
  SUBMOE_ASSIGN_OR_RETURN(rvq::RvqEncoder global,
                          trained_encoder(rvq::gaussian_vectors(o.train_vectors, o.seed), stages, o));
  double err_g = 0, err_l = 0, total = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.is_moe_layer(l)) continue;
    SUBMOE_ASSIGN_OR_RETURN(model::LayerExpertWeights lw,
                            model::find_layer_expert_weights(*source, c, model->architecture(), l));
    std::vector<float> train, test;
    for (size_t e = 0; e < lw.experts.size(); ++e)
      for (const io::TensorView* t : {&lw.experts[e].gate, &lw.experts[e].up, &lw.experts[e].down})
        SUBMOE_RETURN_IF_ERROR(append_subvectors(*t, o.rotate, e % 2 == 0 ? train : test));
    train = evenly(train, o.train_vectors);
    test = evenly(test, o.test_vectors);
    if (o.progress) o.progress("layer " + std::to_string(l) + ": training its own codebooks");
    SUBMOE_ASSIGN_OR_RETURN(rvq::RvqEncoder own, trained_encoder(train, stages, o));
    RvqCodebookFitLayer r;
    r.layer = static_cast<size_t>(l);
    r.train_vectors = train.size() / rvq::kRvqDim;
    r.test_vectors = test.size() / rvq::kRvqDim;
    SUBMOE_ASSIGN_OR_RETURN(r.mse_global, relative_mse(test, global, o));
    SUBMOE_ASSIGN_OR_RETURN(r.mse_layer, relative_mse(test, own, o));
    SUBMOE_ASSIGN_OR_RETURN(r.mse_layer_train, relative_mse(train, own, o));
    const double ss = sum_squares(test);
    err_g += r.mse_global * ss;
    err_l += r.mse_layer * ss;
    total += ss;
    rep.layers.push_back(r);
  }
  if (rep.layers.empty()) return invalid_argument("'" + model_dir + "' has no MoE layer");
  rep.mse_global = err_g / total;
  rep.mse_layer = err_l / total;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace submoe::runtime
