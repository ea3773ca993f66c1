#include "expert_layer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "submoe/model/layer_runner.h"
#include "submoe/model/linear_op.h"
#include "submoe/linalg/dense.h"
#include "submoe/quant/gptq.h"

namespace submoe::calib::detail {
namespace {

using artifact::Projection;

// Tokens of one expert: positions in the layer's token list and routing slots.
struct ExpertTokens {
  std::vector<uint32_t> tokens;    // ascending
  std::vector<uint32_t> slots;     // token * k + j, for the routing weight
  std::vector<uint32_t> hessian;   // unmasked tokens used for the Hessians (capped)
  bool capped = false;
};

// State of one expert while its group is processed.
struct ExpertWork {
  std::vector<float> w[3];                 // original weights, f32
  std::vector<float> h_in, h_act;          // Hessians of gate/up input and of down input
  std::vector<float> w_own[3], h_own[3];   // a rotating encoder's own copies of W and H
  std::unique_ptr<runtime::MatrixEncoder> enc[3];
  quant::GptqStats stats[3];
  // Squared errors: sum (W - W_hat)^2 and sum W^2; with a Hessian also the
  // output-space sums tr((W - W_hat) H (W - W_hat)^T) and tr(W H W^T).
  double weight_err[3] = {}, weight_ref[3] = {}, output_err[3] = {}, output_ref[3] = {};
  std::vector<double> row_zeros[3];        // fraction of zero reconstructed weights per row
};

std::string proj_name(int p) { return std::string(artifact::projection_name(static_cast<Projection>(p))); }

// Dense f32 ops over weight matrices the caller keeps alive.
struct DenseExpert {
  std::unique_ptr<model::LinearOp> gate, up, down;
  DenseExpert(const std::vector<float>& g, const std::vector<float>& u, const std::vector<float>& d, size_t I,
              size_t H)
      : gate(model::make_dense_linear(g.data(), model::DenseDType::kF32, I, H)),
        up(model::make_dense_linear(u.data(), model::DenseDType::kF32, I, H)),
        down(model::make_dense_linear(d.data(), model::DenseDType::kF32, H, I)) {}
  model::ExpertOps ops() const { return {gate.get(), up.get(), down.get()}; }
};

// x rows `tokens` gathered into out [n, H].
void gather(const float* x, size_t H, std::span<const uint32_t> tokens, float* out) {
  for (size_t i = 0; i < tokens.size(); ++i) std::copy_n(x + size_t{tokens[i]} * H, H, out + i * H);
}

// H = X^T X / n over the Hessian tokens, in chunks of at most `chunk` rows.
void hessian_of(const float* x, size_t H, std::span<const uint32_t> tokens, size_t chunk, std::vector<float>* h,
                std::vector<float>& scratch) {
  h->assign(H * H, 0.0f);
  if (tokens.empty()) return;
  const float alpha = 1.0f / static_cast<float>(tokens.size());
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t n = std::min(chunk, tokens.size() - b);
    scratch.resize(n * H);
    gather(x, H, tokens.subspan(b, n), scratch.data());
    linalg::accumulate_gram_f32(n, H, scratch.data(), H, alpha, h->data());
  }
}

// sum over rows of a_r^T H b_r for A, B [rows, cols] and H [cols, cols] (f64 sums).
double hessian_inner(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& h,
                     size_t rows, size_t cols, std::vector<float>& scratch) {
  scratch.resize(rows * cols);
  linalg::gemm_f32(false, false, rows, cols, cols, 1.0f, a.data(), cols, h.data(), cols, 0.0f, scratch.data(), cols);
  double sum = 0;
  for (size_t i = 0; i < rows * cols; ++i) sum += double{scratch[i]} * b[i];
  return sum;
}

// Fraction of exactly-zero reconstructed weights per row.
void row_sparsity(const std::vector<float>& w, size_t rows, size_t cols, std::vector<double>* out) {
  for (size_t r = 0; r < rows; ++r) {
    size_t zeros = 0;
    for (size_t c = 0; c < cols; ++c) zeros += w[r * cols + c] == 0.0f;
    out->push_back(static_cast<double>(zeros) / static_cast<double>(cols));
  }
}

}  // namespace

Status compress_expert_layer(const ExpertLayerInput& in, const CompressOptions& options, LayerPacker& packer,
                             float* block, LayerReport* report, ThreadPool* pool,
                             const std::function<void(size_t, size_t)>& on_expert_done) {
  const size_t T = in.tokens, H = in.hidden, I = in.inner;
  const size_t k = in.routing->k;
  const size_t E = in.weights->experts.size();
  const int layer = static_cast<int>(in.layer);

  // Token lists per expert, ascending token order (as the forward pass groups them).
  std::vector<ExpertTokens> et(E);
  for (size_t t = 0; t < T; ++t)
    for (size_t j = 0; j < k; ++j) {
      const auto e = static_cast<size_t>(in.routing->experts[t * k + j]);
      et[e].tokens.push_back(static_cast<uint32_t>(t));
      et[e].slots.push_back(static_cast<uint32_t>(t * k + j));
    }
  size_t unmasked_total = 0;
  for (auto& x : et) {
    for (uint32_t t : x.tokens)
      if (!in.masked[t]) x.hessian.push_back(t);
    unmasked_total += x.hessian.size();
  }
  // QMoE's cap: at most factor x mean tokens per expert go into its Hessian,
  // taken evenly over its token list; every token's output is still computed.
  const double mean = static_cast<double>(unmasked_total) / static_cast<double>(E);
  const size_t cap = std::max<size_t>(1, static_cast<size_t>(std::ceil(options.token_cap_factor * mean)));
  report->tokens_min = SIZE_MAX;
  for (auto& x : et) {
    report->tokens_min = std::min(report->tokens_min, x.hessian.size());
    report->tokens_max = std::max(report->tokens_max, x.hessian.size());
    if (x.hessian.empty()) ++report->experts_without_tokens;
    if (x.hessian.size() > cap) {
      std::vector<uint32_t> kept(cap);
      for (size_t i = 0; i < cap; ++i) kept[i] = x.hessian[i * x.hessian.size() / cap];
      x.hessian = std::move(kept);
      x.capped = true;
      ++report->capped_experts;
    }
  }
  report->tokens_mean = mean;

  quant::GptqOptions gopt;
  gopt.damp = options.damp;
  gopt.act_order = options.act_order;
  const bool use_gptq = options.method == QuantMethod::kGptq;
  std::vector<double> sparsity;
  double weight_err[2] = {}, weight_ref[2] = {}, output_err[2] = {}, output_ref[2] = {};  // gate+up, down
  const size_t group = std::max<size_t>(1, options.expert_group);
  const size_t threads = pool ? static_cast<size_t>(pool->num_threads()) : 1;
  struct Scratch {
    std::vector<float> xs, g, u, y;
  };
  std::vector<Scratch> scratch(threads);
  auto for_each_expert = [&](size_t begin, size_t end, const std::function<Status(size_t e, Scratch& s)>& fn) {
    std::vector<Status> st(end - begin);
    auto body = [&](size_t b, size_t e2, int thread) {
      for (size_t i = b; i < e2; ++i) st[i] = fn(begin + i, scratch[static_cast<size_t>(thread)]);
    };
    if (pool)
      pool->parallel_for(end - begin, 1, body);
    else
      body(0, end - begin, 0);
    for (const Status& s : st) SUBMOE_RETURN_IF_ERROR(s);
    return Status::ok();
  };

  for (size_t g0 = 0; g0 < E; g0 += group) {
    const size_t g1 = std::min(E, g0 + group);
    std::vector<ExpertWork> work(g1 - g0);
    // Weights (read lazily from the mapped checkpoint) and the input Hessians.
    const auto load_weights_and_hessians = [&](size_t e, Scratch& s) -> Status {
      ExpertWork& w = work[e - g0];
      const model::ExpertWeightViews& v = in.weights->experts[e];
      const io::TensorView* views[3] = {&v.gate, &v.up, &v.down};
      for (int p = 0; p < 3; ++p) {
        w.w[p].resize(static_cast<size_t>(views[p]->numel()));
        SUBMOE_RETURN_IF_ERROR(io::read_as_f32(*views[p], w.w[p]));
        for (float f : w.w[p])
          if (!std::isfinite(f))
            return numerical_error("layer " + std::to_string(layer) + " expert " + std::to_string(e) + " " +
                                   proj_name(p) + " (tensor '" + views[p]->name + "') has a non-finite weight");
      }
      if (use_gptq) hessian_of(in.x, H, et[e].hessian, cap, &w.h_in, s.xs);
      for (int p = 0; p < 3; ++p) {
        const bool down = p == 2;
        const auto rows = static_cast<uint32_t>(down ? H : I), cols = static_cast<uint32_t>(down ? I : H);
        SUBMOE_ASSIGN_OR_RETURN(w.enc[p],
                                packer.codec(in.layer, e, static_cast<Projection>(p)).make_encoder(rows, cols));
      }
      return Status::ok();
    };
    auto t_h = std::chrono::steady_clock::now();
    SUBMOE_RETURN_IF_ERROR(for_each_expert(g0, g1, load_weights_and_hessians));
    report->hessian_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_h).count();
    auto run_jobs = [&](std::initializer_list<int> projs) -> Status {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<quant::GptqJob> jobs;
      std::vector<std::pair<size_t, int>> who;
      for (size_t i = 0; i < work.size(); ++i)
        for (int p : projs) {
          ExpertWork& w = work[i];
          const bool down = p == 2;
          quant::GptqJob j;
          j.rows = down ? H : I;
          j.cols = down ? I : H;
          const bool with_h = use_gptq && !et[g0 + i].hessian.empty();
          const std::vector<float>& h_src = down ? w.h_act : w.h_in;
          if (w.enc[p]->rotates()) {
            // Coded in other coordinates: the encoder rewrites its own copies
            // (the original W still feeds down's Hessian).
            w.w_own[p] = w.w[p];
            w.h_own[p] = with_h ? h_src : std::vector<float>{};
            SUBMOE_RETURN_IF_ERROR(w.enc[p]->prepare(w.w_own[p], w.h_own[p]));
            j.w = w.w_own[p];
            if (with_h) j.h = w.h_own[p];
          } else {
            j.w = w.w[p];
            if (with_h) j.h = h_src;
          }
          j.quantizer = w.enc[p].get();
          jobs.push_back(j);
          who.emplace_back(i, p);
        }
      Status st = quant::gptq_quantize_group(jobs, gopt, pool);
      if (!st.is_ok()) return st.with_context("layer " + std::to_string(layer) + " experts " + std::to_string(g0) +
                                              ".." + std::to_string(g1 - 1));
      for (size_t j = 0; j < jobs.size(); ++j) work[who[j].first].stats[who[j].second] = jobs[j].stats;
      report->gptq_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return Status::ok();
    };
    SUBMOE_RETURN_IF_ERROR(run_jobs({0, 1}));
    // Down's Hessian: activations of the original gate/up (QMoE's default), or of
    // the compressed ones with true-sequential.
    if (use_gptq) {
      const auto down_hessians = [&](size_t e, Scratch& s) -> Status {
        ExpertWork& w = work[e - g0];
        const auto& tokens = et[e].hessian;
        w.h_act.assign(I * I, 0.0f);
        if (tokens.empty()) return Status::ok();
        std::vector<float> qg, qu;
        if (options.true_sequential) {
          qg = w.enc[0]->dequantize();
          qu = w.enc[1]->dequantize();
        }
        const bool ts = options.true_sequential;
        const DenseExpert ops(ts ? qg : w.w[0], ts ? qu : w.w[1], w.w[2], I, H);
        const float alpha = 1.0f / static_cast<float>(tokens.size());
        for (size_t b = 0; b < tokens.size(); b += cap) {
          const size_t n = std::min(cap, tokens.size() - b);
          s.xs.resize(n * H);
          gather(in.x, H, std::span(tokens).subspan(b, n), s.xs.data());
          model::expert_activations(in.mlp(e), ops.ops(), s.xs.data(), n, s.g, s.u, nullptr);
          linalg::accumulate_gram_f32(n, I, s.g.data(), I, alpha, w.h_act.data());
        }
        return Status::ok();
      };
      t_h = std::chrono::steady_clock::now();
    SUBMOE_RETURN_IF_ERROR(for_each_expert(g0, g1, down_hessians));
    report->hessian_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_h).count();
    }
    SUBMOE_RETURN_IF_ERROR(run_jobs({2}));

    // The compressed experts on ALL their tokens, in chunks of at most `cap`.
    std::vector<std::vector<float>> outputs(work.size());
    const auto run_compressed = [&](size_t e, Scratch& s) -> Status {
      ExpertWork& w = work[e - g0];
      const std::vector<float> wg = w.enc[0]->dequantize(), wu = w.enc[1]->dequantize(), wd = w.enc[2]->dequantize();
      const std::vector<float>* hat[3] = {&wg, &wu, &wd};
      for (int p = 0; p < 3; ++p) {
        row_sparsity(*hat[p], p == 2 ? H : I, p == 2 ? I : H, &w.row_zeros[p]);
        std::vector<float> err(w.w[p].size());
        for (size_t i = 0; i < err.size(); ++i) {
          err[i] = w.w[p][i] - (*hat[p])[i];
          w.weight_err[p] += double{err[i]} * err[i];
          w.weight_ref[p] += double{w.w[p][i]} * w.w[p][i];
        }
        const std::vector<float>& hp = p == 2 ? w.h_act : w.h_in;
        if (use_gptq && !et[e].hessian.empty() && !hp.empty()) {
          const size_t rows = p == 2 ? H : I, cols = p == 2 ? I : H;
          w.output_err[p] = hessian_inner(err, err, hp, rows, cols, s.y);
          w.output_ref[p] = hessian_inner(w.w[p], w.w[p], hp, rows, cols, s.y);
        }
      }
      const DenseExpert ops(wg, wu, wd, I, H);
      const auto& tokens = et[e].tokens;
      std::vector<float>& y = outputs[e - g0];
      y.resize(tokens.size() * H);
      for (size_t b = 0; b < tokens.size(); b += cap) {
        const size_t n = std::min(cap, tokens.size() - b);
        s.xs.resize(n * H);
        gather(in.x, H, std::span(tokens).subspan(b, n), s.xs.data());
        model::expert_forward(in.mlp(e), ops.ops(), s.xs.data(), n, &y[b * H], s.g, s.u, nullptr);
      }
      return Status::ok();
    };
    SUBMOE_RETURN_IF_ERROR(for_each_expert(g0, g1, run_compressed));
    // Scatter in ascending expert order, as the forward pass accumulates.
    for (size_t i = 0; i < work.size(); ++i)
      model::add_expert_rows(outputs[i].data(), et[g0 + i].tokens, et[g0 + i].slots, in.routing->weights, H, block);

    // Pack (in parallel) and append in artifact order.
    std::vector<std::vector<PackedTensor>> packed(work.size() * 3);
    const auto pack_group = [&](size_t e, Scratch&) -> Status {
      for (int p = 0; p < 3; ++p) {
        auto r = packer.pack(layer, static_cast<int>(e), static_cast<Projection>(p), *work[e - g0].enc[p]);
        if (!r.is_ok())
          return r.status().with_context("packing layer " + std::to_string(layer) + " expert " + std::to_string(e) +
                                         " " + proj_name(p));
        packed[(e - g0) * 3 + static_cast<size_t>(p)] = std::move(r.value());
      }
      return Status::ok();
    };
    SUBMOE_RETURN_IF_ERROR(for_each_expert(g0, g1, pack_group));
    for (size_t i = 0; i < work.size(); ++i) {
      for (int p = 0; p < 3; ++p) {
        packer.append(std::move(packed[i * 3 + static_cast<size_t>(p)]));
        const ExpertWork& w = work[i];
        // An expert without calibration tokens is RTN by design (counted in
        // experts_without_tokens); a fallback is a failed factorization.
        if (use_gptq && w.stats[p].rtn_fallback && !et[g0 + i].hessian.empty()) {
          ++report->rtn_fallbacks;
          report->fallback_matrices.push_back("layer " + std::to_string(layer) + " expert " +
                                              std::to_string(g0 + i) + " " + proj_name(p) + ": " +
                                              w.stats[p].fallback_reason);
        }
        const size_t pi = static_cast<size_t>(p == 2);
        weight_err[pi] += w.weight_err[p];
        weight_ref[pi] += w.weight_ref[p];
        output_err[pi] += w.output_err[p];
        output_ref[pi] += w.output_ref[p];
        sparsity.insert(sparsity.end(), w.row_zeros[p].begin(), w.row_zeros[p].end());
        report->weights += w.enc[p]->rows() * w.enc[p]->cols();
      }
    }
    if (on_expert_done) on_expert_done(g1, E);
  }

  for (size_t i = 0; i < 2; ++i) {
    report->weight_rel_error[i] = weight_ref[i] > 0 ? weight_err[i] / weight_ref[i] : 0;
    report->output_rel_error[i] = output_ref[i] > 0 ? output_err[i] / output_ref[i] : -1;
  }
  double sum = 0, sq = 0;
  for (double s : sparsity) sum += s;
  report->sparsity_mean = sparsity.empty() ? 0 : sum / static_cast<double>(sparsity.size());
  for (double s : sparsity) sq += (s - report->sparsity_mean) * (s - report->sparsity_mean);
  report->sparsity_std = sparsity.empty() ? 0 : std::sqrt(sq / static_cast<double>(sparsity.size()));
  return Status::ok();
}

}  // namespace submoe::calib::detail
