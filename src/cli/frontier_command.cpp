// `submoe frontier`: the rate x memory frontier of one model (issue 15 section
// 2). Records the model's routing on a held-out text (and a profile on the
// calibration text), compresses it at each requested representation and rate,
// optionally builds synthetic experts of a real model's width with the same
// layout, replays the trace on each rate's experts under each DRAM budget with
// real reads, and sets the measurements beside the cache simulator, Belady and
// seed 001's projection model for the same host. Every measurement is this
// binary's own subcommand in a child process; each step's result is saved in
// OUT/steps/ as it finishes, so an interrupted sweep continues where it stopped.
#include <algorithm>
#include <cmath>
#include <functional>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/child_steps.h"
#include "cli/command.h"
#include "cli/repr_entries.h"
#include "cli/subprocess.h"
#include "submoe/eval/frontier_report.h"
#include "submoe/eval/projection.h"
#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"
#include "submoe/offload/artifact_offload.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/runtime/artifact.h"

namespace submoe::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

struct FrontierOptions {
  std::string model, calib, text, out;
  std::string reprs = "bf16,int@4,int@2,ternary_dict";
  std::string budgets = "10%,3%,1%";
  std::string synth_scale;  // HIDDENxFFN: replay on synthetic experts of this width
  std::string policy = "pinned";
  std::string io = "direct";
  std::string roofline;     // host figures; empty: measured into OUT/roofline.json
  std::string method = "gptq";
  uint32_t group_size = 128;
  uint64_t trace_tokens = 1024, profile_tokens = 4096, replay_tokens = 256;
  size_t samples = 0, seq_len = 0;
  bool no_loss = false, no_bench = false, overwrite = false;
  int threads = 0;
};

// One --reprs entry: REPR[:KEY=VALUE...][@BITS], or bf16 (the source's experts).
struct RateSpec {
  std::string label;
  ReprEntry entry;
  double bits = 0;  // 0: the representation's default
  bool bf16 = false;
};

Result<std::vector<RateSpec>> parse_rates(const std::string& list) {
  std::vector<RateSpec> out;
  for (const std::string& item : split_list(list)) {
    RateSpec r;
    r.label = item;
    if (item == "bf16") {
      r.bf16 = true;
      out.push_back(r);
      continue;
    }
    std::string entry = item;
    if (const size_t at = item.rfind('@'); at != std::string::npos) {
      entry = item.substr(0, at);
      const std::string b = item.substr(at + 1);
      char* end = nullptr;
      r.bits = std::strtod(b.c_str(), &end);
      if (b.empty() || *end != '\0' || !(r.bits > 0) || r.bits > 16)
        return invalid_argument("--reprs: '" + item + "': the rate after @ must be a number in (0, 16]");
    }
    SUBMOE_ASSIGN_OR_RETURN(r.entry, parse_repr_entry(entry));
    for (const RateSpec& seen : out)
      if (seen.label == item) return invalid_argument("--reprs: '" + item + "' is listed twice");
    out.push_back(r);
  }
  if (out.empty()) return invalid_argument("--reprs is empty");
  return out;
}

// --budgets-mb: MiB values, or N% of the replayed experts' bf16 footprint.
Result<std::vector<double>> parse_budgets(const std::string& list, double bf16_experts_bytes) {
  std::vector<double> out;
  for (const std::string& item : split_list(list)) {
    const bool percent = !item.empty() && item.back() == '%';
    const std::string v = percent ? item.substr(0, item.size() - 1) : item;
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x > 0) || !std::isfinite(x) || (percent && x > 100) || (!percent && x > 1e9))
      return invalid_argument("--budgets-mb: '" + item + "' is not a positive MiB value or a percentage in (0, 100]");
    const double mib = percent ? std::round(x / 100 * bf16_experts_bytes / kMiB * 1000) / 1000 : x;
    if (!(mib > 0)) return invalid_argument("--budgets-mb: '" + item + "' is less than 0.001 MiB");
    out.push_back(mib);
  }
  if (out.empty()) return invalid_argument("--budgets-mb is empty");
  return out;
}

Result<std::pair<int64_t, int64_t>> parse_scale(const std::string& s) {
  const size_t x = s.find('x');
  char *e1 = nullptr, *e2 = nullptr;
  const std::string a = x == std::string::npos ? "" : s.substr(0, x), b = x == std::string::npos ? "" : s.substr(x + 1);
  const long long h = std::strtoll(a.c_str(), &e1, 10), f = std::strtoll(b.c_str(), &e2, 10);
  if (a.empty() || b.empty() || *e1 != '\0' || *e2 != '\0' || h < 64 || f < 16 || h > 65536 || f > 262144)
    return invalid_argument("--synth-scale must be HIDDENxFFN, e.g. 2048x3584 (hidden 64..65536, ffn 16..262144), got '" + s + "'");
  return std::make_pair(static_cast<int64_t>(h), static_cast<int64_t>(f));
}

// Bytes of the experts an artifact pages: (mean per expert, all of them).
Result<std::pair<double, double>> artifact_expert_bytes(const std::string& dir) {
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::Artifact> a, runtime::Artifact::open(dir));
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const offload::ExpertSource> src,
                          offload::make_artifact_expert_source(a, runtime::ExecutionMode::kFused));
  const std::vector<uint64_t> charges = offload::expert_charges(*src);
  if (charges.empty()) return invalid_argument(dir + ": the artifact has no routed experts to page");
  double total = 0;
  for (uint64_t c : charges) total += static_cast<double>(c);
  return std::make_pair(total / static_cast<double>(charges.size()), total);
}

bool file_exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

class Sweep {
 public:
  Sweep(const FrontierOptions& o, std::string self) : o_(o), self_(std::move(self)), steps_(fs::path(o.out) / "steps") {}

  void set_total(size_t n) { total_ = n; }

  // Runs a step unless its result was saved; `valid` says whether a saved result
  // still stands (its files exist). Failures are saved too (and tried again next time).
  Result<json> step(const std::string& name, const std::vector<std::string>& argv, const std::string& what,
                    const std::function<bool(const json&)>& valid = nullptr) {
    return run_step(name, argv, valid, [&] { return run_json(argv, what); });
  }

  // A step whose result is a file it writes (a child that prints no one-line JSON).
  Status step_file(const std::string& name, const std::vector<std::string>& argv, const std::string& what,
                   const std::string& path) {
    const auto exists = [&](const json&) { return file_exists(path); };
    return run_step(name, argv, exists, [&]() -> Result<json> {
             SUBMOE_ASSIGN_OR_RETURN(SubprocessResult r, run_subprocess(argv));
             if (r.exit_code != 0 || !file_exists(path))
               return internal_error(what + " failed (exit " + std::to_string(r.exit_code) + "): " + last_line(r.err));
             return json{{"file", path}};
           })
        .status();
  }

  // A saved result stands only for the same command line (other flags, other
  // measurement); the first element, this binary's path, may differ.
  static bool same_step(const json& saved, const std::vector<std::string>& argv) {
    const auto it = saved.find("step_argv");
    if (it == saved.end() || !it->is_array() || it->size() != argv.size()) return false;
    for (size_t i = 1; i < argv.size(); ++i)
      if (!(*it)[i].is_string() || (*it)[i].get<std::string>() != argv[i]) return false;
    return true;
  }

  std::vector<std::string> cmd(std::initializer_list<std::string> args) const {
    std::vector<std::string> v = {self_};
    v.insert(v.end(), args);
    v.insert(v.end(), {"--threads", std::to_string(o_.threads)});
    return v;
  }

 private:
  Result<json> run_step(const std::string& name, const std::vector<std::string>& argv,
                        const std::function<bool(const json&)>& valid, const std::function<Result<json>()>& run) {
    ++done_;
    const std::string saved = (steps_ / (file_label(name) + ".json")).string();
    if (!o_.overwrite)
      if (auto j = load_saved_json(saved); j && same_step(*j, argv) && !j->contains("error") && (!valid || valid(*j))) {
        print_sweep_progress(done_, total_, name + ": measured earlier");
        return *j;
      }
    print_sweep_progress(done_ - 1, total_, name + " ...");
    Result<json> r = run();
    json record = r.is_ok() ? *r : json{{"error", r.status().message()}};
    record["step_argv"] = argv;
    SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(saved, record.dump() + "\n"));
    if (!r.is_ok()) std::cerr << "  " << name << " failed: " << r.status().message() << "\n";
    return r;
  }

  const FrontierOptions& o_;
  std::string self_;
  fs::path steps_;
  size_t done_ = 0, total_ = 0;
};

// compress's arguments for one rate. The entry option alloc=thirds|waterfill is
// compress --alloc (per-expert rates from popularity, mean --bits), driven by
// the profile trace of the trained source in both the source's and the
// synthetic experts' compression; every other option is a --repr-opt.
std::vector<std::string> compress_args(const FrontierOptions& o, const RateSpec& r, bool rtn, const std::string& profile) {
  std::vector<std::string> c = {"--repr", r.entry.name, "--method", rtn ? "rtn" : o.method, "--json", "--quiet", "--overwrite"};
  for (const auto& [k, v] : r.entry.options)
    if (k == "alloc")
      c.insert(c.end(), {"--alloc", v, "--popularity", profile});
    else
      c.insert(c.end(), {"--repr-opt", k + "=" + v});
  if (r.bits > 0) c.insert(c.end(), {"--bits", format_bits(r.bits)});
  if (takes_group_size(r.entry, r.bits, o.group_size)) c.insert(c.end(), {"--group-size", std::to_string(o.group_size)});
  if (o.samples > 0) c.insert(c.end(), {"--samples", std::to_string(o.samples)});
  if (o.seq_len > 0) c.insert(c.end(), {"--seq-len", std::to_string(o.seq_len)});
  return c;
}

std::vector<std::string> bench_args(const FrontierOptions& o, const RateSpec& r) {
  std::vector<std::string> b = {"--repr", r.entry.name};
  for (const auto& [k, v] : r.entry.options)
    if (k != "alloc") b.insert(b.end(), {"--repr-opt", k + "=" + v});  // the kernel at the mean rate
  if (r.bits > 0) b.insert(b.end(), {"--bits", format_bits(r.bits)});
  if (takes_group_size(r.entry, r.bits, o.group_size)) b.insert(b.end(), {"--group-size", std::to_string(o.group_size)});
  return b;
}

// Hit rate against capacity for each policy, Belady and the popularity model.
Result<std::vector<eval::HitRateCurve>> hit_rate_curves(const offload::RoutingTrace& trace,
                                                        const std::vector<uint64_t>& popularity,
                                                        const offload::ForecastProbabilities& forecast,
                                                        const eval::PopularityProfile& profile, int64_t lru_zero_bound) {
  const int64_t slots = static_cast<int64_t>(trace.num_layers()) * trace.num_experts();
  std::vector<int64_t> caps;
  if (slots <= 200) {
    for (int64_t c = 1; c <= slots; ++c) caps.push_back(c);
  } else {
    for (int i = 1; i <= 40; ++i) caps.push_back(std::max<int64_t>(1, slots * i / 40));
    for (int64_t c : {lru_zero_bound, lru_zero_bound + 1, lru_zero_bound + trace.top_k()})
      if (c >= 1 && c <= slots) caps.push_back(c);
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  }
  std::vector<eval::HitRateCurve> curves;
  for (offload::CachePolicy p : {offload::CachePolicy::kLru, offload::CachePolicy::kLfu, offload::CachePolicy::kPinned,
                                 offload::CachePolicy::kHybrid, offload::CachePolicy::kForecast,
                                 offload::CachePolicy::kBelady}) {
    eval::HitRateCurve c{offload::cache_policy_name(p), {}};
    for (int64_t cap : caps) {
      offload::SimulationOptions so;
      so.policy = p;
      so.capacity_slots = static_cast<uint64_t>(cap);
      so.popularity = popularity;
      so.choose_probability = forecast.choose;
      so.repeat_probability = forecast.repeat;
      SUBMOE_ASSIGN_OR_RETURN(offload::SimulationResult r, offload::simulate_cache(trace, so));
      c.points.push_back({static_cast<double>(cap), r.hit_rate()});
    }
    curves.push_back(std::move(c));
  }
  eval::HitRateCurve model{"popularity model", {}};
  for (int64_t cap : caps) model.points.push_back({static_cast<double>(cap), eval::pinned_hit_rate(profile, cap)});
  curves.push_back(std::move(model));
  return curves;
}

Status run_frontier(const FrontierOptions& o) {
  if (o.method != "gptq" && o.method != "rtn") return invalid_argument("--method must be gptq or rtn, got '" + o.method + "'");
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<RateSpec> rates, parse_rates(o.reprs));
  for (const std::string* f : {&o.calib, &o.text})
    if (!fs::is_regular_file(*f)) return not_found(*f + ": no such file");
  if (!o.roofline.empty() && !fs::is_regular_file(o.roofline)) return not_found(o.roofline + ": no such file");
  SUBMOE_ASSIGN_OR_RETURN(offload::CachePolicy policy, offload::parse_cache_policy(o.policy));
  if (policy == offload::CachePolicy::kBelady || policy == offload::CachePolicy::kForecast)
    return invalid_argument(std::string("--policy ") + offload::cache_policy_name(policy) +
                            " exists only in the simulator (its curve is in the hit-rate figure), not as a cache to replay");
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig cfg, io::load_hf_config((fs::path(o.model) / "config.json").string()));
  const int64_t src_width = cfg.moe_intermediate_size > 0 ? cfg.moe_intermediate_size : cfg.intermediate_size;
  int64_t hidden = cfg.hidden_size, width = src_width;
  const bool synth = !o.synth_scale.empty();
  if (synth) {
    SUBMOE_ASSIGN_OR_RETURN(auto hw, parse_scale(o.synth_scale));
    hidden = hw.first, width = hw.second;
  }
  const double bf16_expert_bytes = 3.0 * static_cast<double>(hidden) * static_cast<double>(width) * 2.0;
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) moe_layers += cfg.is_moe_layer(static_cast<int>(l)) ? 1 : 0;
  const double bf16_experts_bytes = bf16_expert_bytes * static_cast<double>(moe_layers) * static_cast<double>(cfg.num_experts);
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<double> budgets, parse_budgets(o.budgets, bf16_experts_bytes));
  SUBMOE_ASSIGN_OR_RETURN(std::string self, self_executable());
  std::error_code ec;
  fs::create_directories(fs::path(o.out) / "steps", ec);
  if (ec) return io_error(o.out + ": " + ec.message());
  const fs::path out(o.out);
  const std::string trace_path = (out / "trace.smtrace").string(), profile_path = (out / "profile.smtrace").string();
  const std::string roofline_path = o.roofline.empty() ? (out / "roofline.json").string() : o.roofline;

  Sweep sw(o, self);
  size_t compressed = 0;
  for (const RateSpec& r : rates) compressed += r.bf16 ? 0 : 1;
  // Steps: trace, profile, roofline, source eval, synth-model, then per compressed rate: compress, eval,
  // synth compress, bench and one replay per budget.
  const size_t per_rate = 1 + (o.no_loss ? 0 : 1) + (synth ? 1 : 0) + (o.no_bench ? 0 : 1) + budgets.size();
  sw.set_total(2 + (o.roofline.empty() ? 1 : 0) + (o.no_loss ? 0 : 1) + (synth ? 1 : 0) + compressed * per_rate);

  const auto exists_at = [](const std::string& p) { return [p](const json&) { return file_exists(p); }; };
  SUBMOE_RETURN_IF_ERROR(sw.step("trace",
                                 sw.cmd({"trace", "record", "--model", o.model, "--text", o.text, "--out", trace_path,
                                         "--max-tokens", std::to_string(o.trace_tokens), "--json"}),
                                 "trace record", exists_at(trace_path))
                             .status());
  SUBMOE_RETURN_IF_ERROR(sw.step("profile",
                                 sw.cmd({"trace", "record", "--model", o.model, "--text", o.calib, "--out", profile_path,
                                         "--max-tokens", std::to_string(o.profile_tokens), "--json"}),
                                 "trace record (profile)", exists_at(profile_path))
                             .status());
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace trace, offload::RoutingTrace::load(trace_path));
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace profile_trace, offload::RoutingTrace::load(profile_path));
  if (o.roofline.empty()) {
    // Storage and DRAM only: the kernels are measured per rate at the expert shape below.
    std::vector<std::string> rl = {self, "roofline", "--dir", o.out, "--file-mb", "256", "--cell-seconds", "0.25",
                                   "--no-kernels", "--no-gpu", "--out", roofline_path};
    SUBMOE_RETURN_IF_ERROR(sw.step_file("roofline", rl, "roofline", roofline_path));
  }
  SUBMOE_ASSIGN_OR_RETURN(std::string roofline_text, io::read_text_file(roofline_path));

  eval::FrontierData d;
  d.model = o.model, d.text = o.text, d.calib = o.calib, d.trace = trace_path, d.profile_trace = profile_path;
  d.io = o.io, d.policy = o.policy, d.host_limits = "roofline " + roofline_path;
  d.layers = static_cast<int>(trace.num_layers()), d.experts = static_cast<int>(trace.num_experts());
  d.top_k = static_cast<int>(trace.top_k());
  d.trace_tokens = trace.num_tokens();
  d.replay_tokens = o.replay_tokens > 0 ? std::min<uint64_t>(o.replay_tokens, trace.num_tokens()) : trace.num_tokens();
  d.hidden = hidden, d.expert_width = width;
  d.bf16_experts_bytes = bf16_expert_bytes * d.layers * d.experts;  // the trace's layout (checked against the artifacts by replay)
  d.replay_source = synth ? "synthetic experts " + o.synth_scale + " (synth-model, compressed with rtn)" : "the compressed artifacts";
  d.budgets_mib = budgets;
  d.lru_zero_bound = static_cast<int64_t>(d.top_k) * d.layers - d.top_k;

  // Loss of the source and of each compressed rate.
  const auto loss_of = [&](const std::string& name, const std::string& dir) -> double {
    if (o.no_loss) return NAN;
    auto j = sw.step(name, sw.cmd({"eval", "--model", dir, "--text", o.text, "--ctx", "256", "--json"}), "eval");
    return j.is_ok() ? json_number(*j, "nll") : NAN;
  };
  const double source_nll = loss_of("eval-source", o.model);

  std::string synth_dir;
  if (synth) {
    synth_dir = (out / "synth" / "source").string();
    const std::string vocab = std::to_string(cfg.vocab_size);
    SUBMOE_RETURN_IF_ERROR(sw.step("synth-model",
                                   sw.cmd({"synth-model", "--arch", cfg.model_type, "--layers", std::to_string(cfg.num_hidden_layers),
                                           "--experts", std::to_string(cfg.num_experts), "--top-k",
                                           std::to_string(cfg.num_experts_per_tok), "--hidden", std::to_string(hidden), "--ffn",
                                           std::to_string(width), "--vocab", vocab, "--tokenizer-from", o.model, "--out",
                                           synth_dir, "--force", "--json"}),
                                   "synth-model", exists_at((fs::path(synth_dir) / "config.json").string()))
                               .status());
  }

  for (const RateSpec& r : rates) {
    eval::FrontierRate fr;
    fr.label = r.label;
    if (r.bf16) {
      fr.bits = 16;
      fr.nll = source_nll;
      fr.expert_bytes = bf16_expert_bytes;
      fr.experts_bytes = d.bf16_experts_bytes;
      d.rates.push_back(fr);
      continue;
    }
    const std::string art = (out / "artifacts" / file_label(r.label)).string();
    std::vector<std::string> c = sw.cmd({"compress", "--model", o.model, "--calib", o.calib, "--out", art});
    const std::vector<std::string> extra = compress_args(o, r, false, profile_path);
    c.insert(c.end(), extra.begin(), extra.end());
    auto cj = sw.step("compress-" + r.label, c, "compress", exists_at((fs::path(art) / "config.json").string()));
    if (!cj.is_ok()) {
      fr.error = cj.status().message();
      d.rates.push_back(fr);
      continue;
    }
    fr.bits = json_number(*cj, "expert_bits_per_weight");
    fr.nll = loss_of("eval-" + r.label, art);
    std::string replay_dir = art;
    if (synth) {
      replay_dir = (out / "synth" / file_label(r.label)).string();
      std::vector<std::string> sc = sw.cmd({"compress", "--model", synth_dir, "--calib", o.calib, "--out", replay_dir});
      const std::vector<std::string> sx = compress_args(o, r, true, profile_path);
      sc.insert(sc.end(), sx.begin(), sx.end());
      auto sj = sw.step("synth-compress-" + r.label, sc, "compress (synthetic experts)",
                        exists_at((fs::path(replay_dir) / "config.json").string()));
      if (!sj.is_ok()) {
        fr.error = sj.status().message();
        d.rates.push_back(fr);
        continue;
      }
      fr.bits = json_number(*sj, "expert_bits_per_weight");
    }
    auto bytes = artifact_expert_bytes(replay_dir);
    if (!bytes.is_ok()) {
      fr.error = bytes.status().message();
      d.rates.push_back(fr);
      continue;
    }
    fr.expert_bytes = bytes->first, fr.experts_bytes = bytes->second;
    fr.replayed = true;
    if (!o.no_bench) {
      std::vector<std::string> b = sw.cmd({"bench", "gemv", "--shape", std::to_string(width) + "x" + std::to_string(hidden),
                                           "--batch", "1", "--iters", "20", "--json"});  // --threads as the replay
      const std::vector<std::string> bx = bench_args(o, r);
      b.insert(b.end(), bx.begin(), bx.end());
      auto bj = sw.step("bench-" + r.label, b, "bench gemv");
      const double us = bj.is_ok() ? json_number(*bj, "compressed_us") : 0;
      if (us > 0) fr.kernel_gweights = static_cast<double>(width) * static_cast<double>(hidden) / (us * 1e3);
    }
    d.rates.push_back(fr);
    for (double budget : d.budgets_mib) {
      eval::FrontierPoint p;
      p.label = r.label;
      p.budget_mib = budget;
      p.resident_fraction = std::min(1.0, budget * kMiB / fr.experts_bytes);
      std::vector<std::string> rp = sw.cmd({"trace", "replay", "--artifact", replay_dir, "--trace", trace_path,
                                            "--expert-cache-mb", format_bits(budget), "--policy", o.policy, "--cache-profile",
                                            profile_path, "--io", o.io, "--tokens", std::to_string(d.replay_tokens), "--json"});
      auto rj = sw.step("replay-" + r.label + "-" + format_bits(budget) + "MiB", rp, "trace replay");
      if (!rj.is_ok()) {
        p.error = rj.status().message();
      } else {
        p.tokens = static_cast<uint64_t>(json_number(*rj, "tokens"));
        p.hit_rate = json_number(*rj, "hit_rate");
        p.byte_hit_rate = json_number(*rj, "byte_hit_rate");
        p.bytes_read = json_number(*rj, "bytes_read");
        p.read_seconds = json_number(*rj, "read_seconds");
        p.compute_seconds = json_number(*rj, "compute_seconds");
        p.tokens_per_s = json_number(*rj, "tokens_per_s");
      }
      d.points.push_back(p);
    }
  }

  // The simulator's policies, Belady and the popularity model, on the held-out trace with the profile's popularity.
  const std::vector<uint64_t> popularity = offload::expert_popularity(profile_trace);
  SUBMOE_ASSIGN_OR_RETURN(eval::PopularityProfile pop,
                          eval::profile_from_counts(popularity, profile_trace.num_layers(), d.experts, d.layers, d.top_k,
                                                    "trace:" + profile_path));
  SUBMOE_ASSIGN_OR_RETURN(d.curves, hit_rate_curves(trace, popularity, offload::forecast_probabilities(profile_trace), pop,
                                                    d.lru_zero_bound));
  for (const auto& [cap, h] : d.curves.front().points)
    if (h > 0) {
      d.lru_first_hit = static_cast<int64_t>(cap);
      break;
    }

  // The projection for each replayed point: the same experts, rate, budget, profile and host.
  for (eval::FrontierPoint& p : d.points) {
    if (!p.error.empty()) continue;
    const eval::FrontierRate* fr = nullptr;
    for (const eval::FrontierRate& r : d.rates)
      if (r.label == p.label) fr = &r;
    eval::ProjectionInputs in;
    in.shape = {"replayed experts", d.layers, d.layers, hidden, d.experts, d.top_k, width, 3, 0, 0, 0, 0, 1, true};
    const double pe = 3.0 * static_cast<double>(hidden) * static_cast<double>(width);
    in.rate_bits = 8.0 * fr->expert_bytes / pe;
    in.dense_bits = 16;
    in.dram_gb = p.budget_mib * kMiB / 1e9;
    in.profile = pop;
    auto limits = eval::host_limits_from_roofline_json(roofline_text, fr->expert_bytes, "none", roofline_path);
    if (!limits.is_ok()) return limits.status();
    in.limits = *limits;
    in.limits.kernel_gweights_b1 = in.limits.kernel_gweights_b32 = fr->kernel_gweights;
    auto proj = eval::project(in);
    if (!proj.is_ok()) {
      p.predicted_bound = "projection failed: " + proj.status().message();
      continue;
    }
    p.predicted_hit_rate = proj->at_rate.hit_rate;
    p.predicted_tokens_per_s = proj->at_rate.batch1.tokens_per_s;
    p.predicted_tokens_per_s_serial = proj->at_rate.batch1.tokens_per_s_serial;
    p.predicted_bound = proj->at_rate.batch1.bound;
  }

  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / "frontier.json").string(), eval::frontier_json(d).dump(1) + "\n"));
  const std::string md = eval::frontier_markdown(d);
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / "report.md").string(), md));
  for (const auto& [name, svg] : eval::frontier_svgs(d))
    SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / name).string(), svg));
  std::cout << md;
  std::cerr << "wrote " << (out / "frontier.json").string() << ", report.md and the figures in " << o.out << "\n";
  return Status::ok();
}

void setup(CLI::App& root) {
  auto o = std::make_shared<FrontierOptions>();
  CLI::App* cmd = root.add_subcommand(
      "frontier",
      "The rate x memory frontier of one model (seed 001's cache amplification, measured): records the model's\n"
      "routing on --text (and a popularity profile on --calib), compresses it at each of --reprs, replays the\n"
      "trace on each rate's experts under each of --budgets-mb through the expert cache with real reads\n"
      "(`trace replay`; with --synth-scale on synthetic experts of a real model's width and the same layout),\n"
      "and sets each measurement beside seed 001's projection model for this host (`roofline`, the kernel at\n"
      "the expert shape), the cache simulator's policies, Belady's bound and the popularity model.\n"
      "Writes OUT/frontier.json, OUT/report.md and the figures OUT/footprint.svg, resident_fraction.svg,\n"
      "hit_rate.svg, tokens_per_s.svg, amplification.svg and loss.svg. Every step runs as this binary's own\n"
      "subcommand in a child process and is saved in OUT/steps/ as it finishes, so an interrupted sweep\n"
      "continues where it stopped (failed steps, and with --overwrite every step, run again).");
  cmd->add_option("--model", o->model, "source checkpoint directory (Hugging Face layout)")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--calib", o->calib, "calibration text (compress; the popularity profile)")->required();
  cmd->add_option("--text", o->text, "held-out text (the replayed trace; the loss)")->required();
  cmd->add_option("--out", o->out, "output directory")->required();
  cmd->add_option("--reprs", o->reprs,
                  "comma-separated rates: REPR[:KEY=VALUE...][@BITS] (registry names as compress --repr, options as\n"
                  "--repr-opt, @BITS as --bits; alloc=thirds|waterfill gives compress --alloc, per-expert rates from\n"
                  "the profile's popularity with mean @BITS, e.g. int:alloc=thirds@3), or bf16 (the source's\n"
                  "experts: footprint, simulator and projection; not replayed, no representation stores\n"
                  "uncompressed experts)")
      ->capture_default_str();
  cmd->add_option("--budgets-mb", o->budgets,
                  "comma-separated DRAM budgets for the experts: MiB, or N% of the replayed experts at bf16")
      ->capture_default_str();
  cmd->add_option("--synth-scale", o->synth_scale,
                  "HIDDENxFFN: replay on synthetic experts of this width (synth-model with the source's architecture,\n"
                  "layers, experts and top-k, compressed with rtn at each rate), e.g. 2048x3584");
  cmd->add_option("--policy", o->policy, "replay cache policy: lru | lfu | pinned | hybrid (pinned/hybrid use the profile)")
      ->capture_default_str();
  cmd->add_option("--io", o->io, "replay reads: pread | direct | uring | uring-direct (direct: cold reads bypass the page cache)")
      ->check(CLI::IsMember({"pread", "direct", "uring", "uring-direct"}))
      ->capture_default_str();
  cmd->add_option("--roofline", o->roofline,
                  "host figures from 'submoe roofline --json' (else storage and DRAM are measured once into\nOUT/roofline.json with a 256 MiB test file in OUT, about 10 s)");
  cmd->add_option("--method", o->method, "compress method of the source: gptq or rtn")->capture_default_str();
  cmd->add_option("--group-size", o->group_size, "columns per scale group where a representation takes one (0: its default)")
      ->capture_default_str();
  cmd->add_option("--samples", o->samples, "calibration samples per compress (default: compress's)");
  cmd->add_option("--seq-len", o->seq_len, "tokens per calibration sample (default: compress's)");
  cmd->add_option("--trace-tokens", o->trace_tokens, "tokens of --text recorded (0 = all)")->capture_default_str();
  cmd->add_option("--profile-tokens", o->profile_tokens, "tokens of --calib recorded as the popularity profile (0 = all)")
      ->capture_default_str();
  cmd->add_option("--replay-tokens", o->replay_tokens, "tokens replayed per point (0 = the whole trace)")->capture_default_str();
  cmd->add_flag("--no-loss", o->no_loss, "skip the held-out loss (e.g. for an untrained source)");
  cmd->add_flag("--no-bench", o->no_bench, "skip the kernel timings (the projection then has no compute term)");
  cmd->add_flag("--overwrite", o->overwrite, "measure every step again (else steps saved in OUT/steps/ are reused)");
  cmd->add_option("--threads", o->threads, "worker threads of each step; 0 = all hardware threads")
      ->capture_default_str()
      ->check(thread_count(true));
  cmd->callback([o] { report("frontier", run_frontier(*o)); });
}

SUBMOE_REGISTER_COMMAND("frontier", setup);

}  // namespace
}  // namespace submoe::cli
