// `submoe project`: seed 001's cache-amplification projection for an MoE config.
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "submoe/eval/projection.h"
#include "submoe/io/file_util.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/offload/trace_stats.h"

namespace submoe::cli {
namespace {

struct ProjectArgs {
  std::string config;
  double rate = 0;
  double dense_bits = -1;
  double baseline_bits = 16;
  double dram_gb = 0;
  double reserve_gb = 0;
  uint32_t batch = 1;
  std::string profile = "uniform";
  std::string roofline;
  std::string kernel = "none";
  double storage_gbps = 0;
  double dram_gbps = 0;
  int sweep_points = 11;
  bool json = false;
  std::string out;
};

// "uniform", "zipf:S" or a trace file. A trace of another expert count gives its
// fitted Zipf exponent (the seed's scale-invariance assumption).
Result<eval::PopularityProfile> make_profile(const std::string& spec, const eval::MoeShape& s) {
  if (spec == "uniform") return eval::uniform_profile(s.moe_layers, s.num_experts, s.top_k);
  if (spec.rfind("zipf:", 0) == 0) {
    try {
      size_t used = 0;
      const double e = std::stod(spec.substr(5), &used);
      if (used != spec.size() - 5) throw std::invalid_argument("trailing");
      return eval::zipf_profile(s.moe_layers, s.num_experts, s.top_k, e);
    } catch (const std::exception&) {
      return invalid_argument("--profile zipf:S needs a number, got '" + spec + "'");
    }
  }
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace trace, offload::RoutingTrace::load(spec));
  if (trace.num_tokens() == 0) return invalid_argument(spec + ": the trace has no tokens");
  if (static_cast<int64_t>(trace.num_experts()) == s.num_experts) {
    return eval::profile_from_counts(offload::expert_popularity(trace), trace.num_layers(), s.num_experts,
                                     s.moe_layers, s.top_k, "trace:" + spec);
  }
  const double zipf = offload::compute_trace_stats(trace).mean_zipf_exponent;
  SUBMOE_ASSIGN_OR_RETURN(eval::PopularityProfile p, eval::zipf_profile(s.moe_layers, s.num_experts, s.top_k, zipf));
  char buf[96];
  std::snprintf(buf, sizeof(buf), " (fitted exponent of a %u-expert trace)", trace.num_experts());
  p.source = "trace:" + spec + " -> " + p.source + buf;
  return p;
}

Status run_project(const ProjectArgs& a) {
  SUBMOE_ASSIGN_OR_RETURN(eval::MoeShape shape, eval::load_projection_config(a.config));
  SUBMOE_ASSIGN_OR_RETURN(eval::ParamCounts params, eval::count_params(shape));
  eval::ProjectionInputs in;
  in.shape = shape;
  in.rate_bits = a.rate;
  in.dense_bits = a.dense_bits;
  in.baseline_bits = a.baseline_bits;
  in.dram_gb = a.dram_gb;
  in.reserve_gb = a.reserve_gb;
  in.batch = a.batch;
  in.sweep_points = a.sweep_points;
  SUBMOE_ASSIGN_OR_RETURN(in.profile, make_profile(a.profile, shape));
  if (!a.roofline.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_file_to_string(a.roofline));
    SUBMOE_ASSIGN_OR_RETURN(in.limits,
                            eval::host_limits_from_roofline_json(text, params.expert * a.rate / 8.0, a.kernel, a.roofline));
  } else if (a.kernel != "none") {
    return invalid_argument("--kernel needs --roofline (kernel throughput is measured, never assumed)");
  }
  if (a.storage_gbps > 0) in.limits.storage_read_gbps = a.storage_gbps;
  if (a.dram_gbps > 0) in.limits.dram_read_gbps = a.dram_gbps;
  if (a.storage_gbps > 0 || a.dram_gbps > 0) in.limits.source += " + command-line overrides";
  SUBMOE_ASSIGN_OR_RETURN(eval::ProjectionResult r, eval::project(in));
  const std::string json = eval::projection_json(r);
  if (!a.out.empty()) SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(a.out, json + "\n"));
  if (a.json) {
    std::cout << json << "\n";
  } else {
    std::cout << eval::projection_table(r);
  }
  return Status::ok();
}

void setup_project(CLI::App& root) {
  static ProjectArgs a;
  auto* cmd = root.add_subcommand(
      "project",
      "Project an offloaded MoE at a weight rate (seed 001's cache-amplification model, equations\n"
      "in docs/projection.md): footprint, expert slots resident in the DRAM budget and their\n"
      "fraction f, the popularity-pinned hit rate h, storage bytes per token T = L k (1-h) B(r),\n"
      "tokens/s at batch 1, 32 and --batch (each step bounded by storage reads of the misses,\n"
      "DRAM reads of all loaded experts + dense weights and, with --kernel, kernel throughput;\n"
      "tokens/s = batch / max of the three), the same against the bf16 baseline (speedup,\n"
      "compression and their ratio, the amplification), and tokens/s over hit rates 0..1.\n"
      "Host figures: --roofline FILE (from 'submoe roofline --json'), else 3.0 GB/s storage and\n"
      "29.9 GB/s DRAM (documented defaults).");
  cmd->add_option("--config", a.config,
                  "Model: a submoe projection config (configs/t1.json) or an HF config.json (Mixtral, "
                  "Qwen2/3-MoE, OLMoE, DeepSeek-V2/V3)")
      ->required();
  cmd->add_option("--rate", a.rate, "Bits per weight of the routed experts (r)")->required();
  cmd->add_option("--dram-gb", a.dram_gb, "DRAM for weights in GB (1e9 bytes): dense weights, then the expert cache")
      ->required();
  cmd->add_option("--dense-bits", a.dense_bits,
                  "Bits per weight of the dense weights (attention, shared experts, router, output); "
                  "default: the --rate, as in seed 001");
  cmd->add_option("--baseline-bits", a.baseline_bits, "Rate of the baseline for speedup and amplification")
      ->capture_default_str();
  cmd->add_option("--reserve-gb", a.reserve_gb, "DRAM kept back for KV cache, activations and the OS")
      ->capture_default_str();
  cmd->add_option("--batch", a.batch, "Extra batch size to report (1 and 32 are always reported)")
      ->capture_default_str();
  cmd->add_option("--profile", a.profile,
                  "Expert popularity: uniform, zipf:S (share of rank i ~ i^-S, capped at 1/k), or a "
                  "routing trace (its per-layer popularity when its expert count matches the model, "
                  "else its fitted Zipf exponent)")
      ->capture_default_str();
  cmd->add_option("--roofline", a.roofline, "JSON from 'submoe roofline --json' for the host figures");
  cmd->add_option("--kernel", a.kernel,
                  "Add a compute bound with this measured kernel from --roofline: none, qmoe, tunstall, bf16 "
                  "(the baseline then uses bf16)")
      ->capture_default_str();
  cmd->add_option("--storage-gbps", a.storage_gbps, "Override the storage read bandwidth (GB/s)");
  cmd->add_option("--dram-gbps", a.dram_gbps, "Override the DRAM read bandwidth (GB/s)");
  cmd->add_option("--sweep-points", a.sweep_points, "Hit rates in the sensitivity table")->capture_default_str();
  cmd->add_flag("--json", a.json, "Print one JSON object instead of the report");
  cmd->add_option("--out", a.out, "Also write the JSON object to this file (atomically)");
  cmd->callback([] { report("project", run_project(a)); });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("project", setup_project);
}  // namespace submoe::cli
