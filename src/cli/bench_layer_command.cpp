// `submoe bench layer`: the GPTQ quantization error of one synthetic linear
// layer at a real width for each --reprs entry at each --bits rate
// (runtime/layer_error_bench.h), so representations are compared at equal
// serialized size with their per-row and per-group tables costing what they
// cost at 4096 columns, not at the embedded model's 256.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_subcommands.h"
#include "cli/command.h"
#include "cli/repr_entries.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/layer_error_bench.h"

namespace submoe::cli {
namespace {

struct BenchLayerOptions {
  std::string shape = "512x4096";
  std::string weights = "student-t";
  runtime::LayerProblemOptions problem;
  std::string reprs = "int,squeezellm,spqr,nf4";
  std::string bits = "3,4";
  uint32_t group_size = 128;
  int threads = 0;
  bool json = false;
};

// "RxC" into the problem's shape; the ranges are the library's to check.
Status parse_layer_shape(const std::string& s, runtime::LayerProblemOptions* p) {
  const size_t x = s.find('x');
  auto count = [](const std::string& t, uint32_t* v) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || t[0] == '-' || end != t.c_str() + t.size() || n > 0xffffffffull) return false;
    *v = static_cast<uint32_t>(n);
    return true;
  };
  if (x == std::string::npos || !count(s.substr(0, x), &p->rows) || !count(s.substr(x + 1), &p->cols))
    return invalid_argument("--shape must be RxC (rows x cols, e.g. 512x4096), got '" + s + "'");
  return Status::ok();
}

struct Combination {
  std::string entry;
  double bits = 0;  // 0: the representation's default rate
};

struct Measured {
  Combination c;
  runtime::LayerErrorRow row;
  std::string error;  // non-empty: the representation refused this combination
};

// A refused row has null measurements and its error.
nlohmann::json row_json(const Measured& m) {
  const bool ok = m.error.empty();
  auto measured = [&](double v) { return ok ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"repr", ok ? m.row.representation : m.c.entry},
                      {"entry", m.c.entry},
                      {"bits", m.c.bits > 0 ? nlohmann::json(m.c.bits) : nlohmann::json(nullptr)},
                      {"bits_per_weight", measured(m.row.bits_per_weight)},
                      {"rel_output_error", measured(m.row.rel_output_error)},
                      {"rel_weight_mse", measured(m.row.rel_weight_mse)},
                      {"encode_s", measured(m.row.encode_seconds)}};
  if (!ok) j["error"] = m.error;
  return j;
}

std::string combination_label(const Combination& c) {
  return c.bits > 0 ? c.entry + " @ " + format_bits(c.bits) + " bits" : c.entry;
}

void print_table(const BenchLayerOptions& o, const std::vector<Measured>& rows) {
  const runtime::LayerProblemOptions& p = o.problem;
  std::printf("one %ux%u layer, %s weights%s, inputs AR(1) rho %g, channel spread %g, %g of channels x%g, seed %llu; "
              "GPTQ against the exact H\n",
              p.rows, p.cols, o.weights.c_str(),
              p.weights == runtime::LayerWeights::kStudentT ? (" (nu " + format_bits(p.nu) + ")").c_str() : "", p.rho,
              p.channel_spread, p.outlier_channels, p.outlier_gain, static_cast<unsigned long long>(p.seed));
  auto label = [](const Measured& m) { return m.error.empty() ? m.row.representation : combination_label(m.c); };
  int width = static_cast<int>(std::string("representation").size());
  for (const Measured& m : rows) width = std::max(width, static_cast<int>(label(m).size()));
  std::printf("%-*s %11s %17s %15s %9s\n", width, "representation", "bits/weight", "rel. output error",
              "rel. weight MSE", "encode s");
  for (const Measured& m : rows) {
    if (!m.error.empty()) {
      std::printf("%-*s refused: %s\n", width, label(m).c_str(), m.error.c_str());
      continue;
    }
    std::printf("%-*s %11.4f %17.4e %15.4e %9.1f\n", width, label(m).c_str(), m.row.bits_per_weight,
                m.row.rel_output_error, m.row.rel_weight_mse, m.row.encode_seconds);
  }
}

Status bench_layer(BenchLayerOptions o) {
  // Everything the flags can get wrong is refused before any work.
  SUBMOE_RETURN_IF_ERROR(parse_layer_shape(o.shape, &o.problem));
  SUBMOE_ASSIGN_OR_RETURN(o.problem.weights, runtime::parse_layer_weights(o.weights));
  SUBMOE_RETURN_IF_ERROR(runtime::check_layer_problem_options(o.problem));
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<std::string> entries, parse_repr_list(o.reprs));
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<double> bits, parse_bits_list(o.bits));

  ThreadPool pool(o.threads > 0 ? o.threads : hardware_threads());
  std::fprintf(stderr, "[bench layer] building the %ux%u problem (W, the exact H, tr(W H W^T))\n", o.problem.rows,
               o.problem.cols);
  SUBMOE_ASSIGN_OR_RETURN(const runtime::LayerProblem problem, runtime::make_layer_problem(o.problem, &pool));

  std::vector<Combination> combinations;
  for (const std::string& e : entries)
    for (double b : bits) combinations.push_back({e, b});
  std::vector<Measured> rows;
  for (size_t i = 0; i < combinations.size(); ++i) {
    Measured m{combinations[i], {}, {}};
    const std::string label = combination_label(m.c);
    std::fprintf(stderr, "[bench layer] [%zu/%zu] %s\n", i + 1, combinations.size(), label.c_str());
    SUBMOE_ASSIGN_OR_RETURN(const ReprEntry entry, parse_repr_entry(m.c.entry));
    auto row = runtime::measure_layer_error(problem, entry_options(entry, m.c.bits, o.group_size), &pool,
                                            [](const std::string& s) { std::fprintf(stderr, "[bench layer]   %s\n", s.c_str()); });
    if (row.is_ok()) {
      m.row = *row;
      std::fprintf(stderr, "[bench layer]   %.4f bits/weight, rel. output error %.4e (%.1f s)\n", m.row.bits_per_weight,
                   m.row.rel_output_error, m.row.encode_seconds);
    } else {
      m.error = row.status().message();
      std::fprintf(stderr, "[bench layer]   refused: %s\n", m.error.c_str());
    }
    rows.push_back(std::move(m));
  }

  if (!o.json) {
    print_table(o, rows);
    return Status::ok();
  }
  const runtime::LayerProblemOptions& p = o.problem;
  nlohmann::json out = {{"shape", {p.rows, p.cols}},
                        {"weights", o.weights},
                        {"nu", p.nu},
                        {"rho", p.rho},
                        {"channel_spread", p.channel_spread},
                        {"outlier_channels", p.outlier_channels},
                        {"outlier_gain", p.outlier_gain},
                        {"seed", p.seed},
                        {"rows", nlohmann::json::array()}};
  for (const Measured& m : rows) out["rows"].push_back(row_json(m));
  std::printf("%s\n", out.dump(2).c_str());
  return Status::ok();
}

}  // namespace

void setup_bench_layer(CLI::App& bench) {
  auto o = std::make_shared<BenchLayerOptions>();
  auto* cmd = bench.add_subcommand(
      "layer",
      "The quantization error of ONE synthetic linear layer at a real width, for each --reprs entry at each\n"
      "--bits rate: W is encoded as `compress --method gptq` encodes one matrix (the codec's rotation, then\n"
      "GPTQ with the default options) against the layer's input second moment H, and the reconstruction\n"
      "W_hat (the encoder's, = the reference decoder's) is measured.\n"
      "Why: representations are compared at equal serialized size, and what a per-row or per-group table\n"
      "costs depends on the width. In the embedded model (256 columns) SqueezeLLM's fp16 table per row\n"
      "(16 x 2^b / cols bits) costs 0.5 bit a weight; at 4096 columns it costs 0.03. This puts every\n"
      "representation at the widths real experts have.\n"
      "The layer: W [rows, cols] ~ N(0, 0.02^2) or Student-t (--nu degrees of freedom) scaled to std 0.02,\n"
      "the heavy tails of trained weights. Inputs x = D z, z a stationary AR(1) sequence over the channel\n"
      "index (correlation rho^|i-j|), D = diag(exp(--channel-spread x N(0,1))) with --outlier-channels of\n"
      "the channels (at random) times --outlier-gain; H = D R D is exact (no tokens are sampled), so the\n"
      "numbers carry no sampling noise. Deterministic from --seed.\n"
      "Per row: bits/weight = 8 x the bytes of every packed field / (rows x cols) (tensors shared by all\n"
      "matrices of an artifact, such as trained codebooks, are not counted); rel. output error =\n"
      "tr(dW H dW^T) / tr(W H W^T) with dW = W - W_hat (the output error's share of the output energy);\n"
      "rel. weight MSE = ||dW||^2 / ||W||^2; encode s = the codec, rotation, GPTQ and packing.\n"
      "--reprs takes compare's entries (NAME or NAME:KEY=VALUE[:KEY=VALUE], each KEY=VALUE a --repr-opt);\n"
      "every entry runs at every --bits rate (empty: each one's default), with --group-size where the\n"
      "representation takes one at that rate. A combination the representation refuses is a row saying\n"
      "why; a malformed entry or an unknown name is an error before any work.\n"
      "Output (stdout): a table in the order given, or with --json one object {shape: [rows, cols], weights,\n"
      "nu, rho, channel_spread, outlier_channels, outlier_gain, seed, rows: [{repr, entry, bits (null: default),\n"
      "bits_per_weight, rel_output_error, rel_weight_mse, encode_s, error (refused rows only, their\n"
      "measurements null)}]}.\n"
      "Progress goes to stderr.");
  cmd->add_option("--shape", o->shape, "RxC: rows (outputs) x cols (inputs); H is cols x cols")->capture_default_str();
  cmd->add_option("--weights", o->weights, "gaussian or student-t")->capture_default_str();
  cmd->add_option("--nu", o->problem.nu, "Student-t degrees of freedom, > 2 (smaller: heavier tails)")
      ->capture_default_str();
  cmd->add_option("--rho", o->problem.rho, "AR(1) correlation of neighbouring input channels, in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--channel-spread", o->problem.channel_spread,
                  "std of the log channel scales (0: every channel at scale 1)")
      ->capture_default_str();
  cmd->add_option("--outlier-channels", o->problem.outlier_channels,
                  "fraction of input channels, in [0, 1), whose scale is multiplied by --outlier-gain")
      ->capture_default_str();
  cmd->add_option("--outlier-gain", o->problem.outlier_gain, "scale factor of the outlier channels, > 0")
      ->capture_default_str();
  cmd->add_option("--seed", o->problem.seed, "seed of the channel scales, outlier channels and weights")
      ->capture_default_str();
  cmd->add_option("--reprs", o->reprs,
                  "comma-separated registry names, each optionally NAME:KEY=VALUE[:KEY=VALUE] (as compare; e.g.\n"
                  "squeezellm:outliers=0.0045, aqlm:shape=3x5)")
      ->capture_default_str();
  cmd->add_option("--bits", o->bits, "comma-separated requested rates (empty: each representation's default)")
      ->capture_default_str();
  cmd->add_option("--group-size", o->group_size,
                  "columns per scale group, given to every representation that takes one at that rate (0: each\n"
                  "one's default)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads (GPTQ rows, the error's rows); 0 = all hardware threads")
      ->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--json", o->json, "print one JSON object instead of the table");
  cmd->callback([o] { report("bench layer", bench_layer(*o)); });
}

}  // namespace submoe::cli
