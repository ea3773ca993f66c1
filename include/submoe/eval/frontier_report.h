// The rate x memory frontier (issue 15 section 2; `submoe frontier`): what one
// model's routed experts cost and deliver at each representation and rate under
// each DRAM budget, measured by replaying a recorded trace through the expert
// cache with real reads, beside seed 001's projection model for the same host,
// the cache simulator's policies and Belady's bound. This header holds the
// measured data and its reports (frontier.json, report.md, the SVG figures);
// the command that measures it is cli/frontier_command.cpp.
//
// Seed 001's cache amplification (its equations 1-3): at rate r an expert takes
// B(r) bytes, a budget M holds the fraction f(r) = M / (B(r) L E) of the
// expert slots, and a token reads T(r) = L k (1 - h(f(r))) B(r) bytes from
// storage. Against a baseline rate r0, with rho = B(r) / B(r0),
//   T(r) / T(r0) = rho * (1 - h(f0 / rho)) / (1 - h(f0)),
// whose second factor is the amplification: below 1 when the smaller experts
// raise the hit rate. Here both factors are measured: rho from the artifacts'
// expert bytes, the traffic ratio from the bytes the replays read.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace submoe::eval {

// One representation at one rate.
struct FrontierRate {
  std::string label;          // the --reprs entry ("int@4", "ternary_dict"), or "bf16"
  double bits = 0;            // bits per routed-expert weight (the artifact's ledger; 16 for bf16)
  double nll = NAN;           // held-out loss of the source model at this rate (NaN: not measured)
  double expert_bytes = 0;    // one expert as the cache holds it, mean over the replayed artifact's experts
  double experts_bytes = 0;   // every routed expert of the replayed artifact (its footprint)
  double kernel_gweights = 0; // the expert kernel, weights/s / 1e9 at batch 1 (bench gemv; 0: not measured)
  bool replayed = false;      // false for bf16: no artifact stores uncompressed experts to page
  std::string error;          // non-empty: this rate failed, and why
};

// One replay: a rate under a budget.
struct FrontierPoint {
  std::string label;           // FrontierRate::label
  double budget_mib = 0;
  double resident_fraction = 0;  // f = min(1, budget / footprint)
  uint64_t tokens = 0;
  double hit_rate = 0, bytes_read = 0, read_seconds = 0, compute_seconds = 0, tokens_per_s = 0;
  double byte_hit_rate = 0;  // the hit rate by bytes (differs from hit_rate with mixed-rate experts)
  // The projection model (eval::project) for the same expert shape, rate,
  // budget, popularity profile and host: its popularity-pinned hit rate and
  // tokens/s with reads overlapped with compute and without (a replay without
  // prefetch reads, then computes).
  double predicted_hit_rate = 0, predicted_tokens_per_s = 0, predicted_tokens_per_s_serial = 0;
  std::string predicted_bound;
  std::string error;  // non-empty: the replay failed (e.g. the budget holds no expert)
};

// Hit rate against cache capacity (in expert slots) for one policy or model.
struct HitRateCurve {
  std::string name;  // "lru", ..., "belady", "popularity model"
  std::vector<std::pair<double, double>> points;  // (capacity slots, hit rate)
};

struct FrontierData {
  std::string model, text, calib, trace, profile_trace;
  std::string replay_source;  // "artifacts" (the compressed source) or "synth HxF" (synthetic experts of that width)
  std::string io, policy, host_limits;
  int layers = 0, experts = 0, top_k = 0;
  uint64_t trace_tokens = 0, replay_tokens = 0;
  int64_t hidden = 0, expert_width = 0;  // the replayed experts' shape
  double bf16_experts_bytes = 0;         // the replayed shape's experts at bf16
  std::vector<double> budgets_mib;
  std::vector<FrontierRate> rates;
  std::vector<FrontierPoint> points;
  std::vector<HitRateCurve> curves;
  int64_t lru_zero_bound = 0;    // k L - k: LRU cannot hit at or below this capacity
  int64_t lru_first_hit = -1;    // the smallest simulated capacity where LRU hit (-1: none)
};

// The baseline r0 of the amplification: the replayed rate with the most bits
// (-1 when none was replayed).
int frontier_baseline(const FrontierData& d);
// The replay of `label` at `budget_mib`, or nullptr.
const FrontierPoint* frontier_point(const FrontierData& d, const std::string& label, double budget_mib);

// The measured amplification of a point against the baseline at the same budget.
struct Amplification {
  double rho = NAN;            // B(r) / B(r0)
  double miss_ratio = NAN;     // (1 - h(r)) / (1 - h(r0)): the seed's amplification factor
  double traffic_ratio = NAN;  // bytes read at r / at r0, over the same tokens: T(r) / T(r0)
};
Amplification frontier_amplification(const FrontierData& d, const FrontierPoint& p);

nlohmann::json frontier_json(const FrontierData& d);
std::string frontier_markdown(const FrontierData& d);
// (file name, SVG document) for each figure: footprint.svg, resident_fraction.svg,
// hit_rate.svg, tokens_per_s.svg, amplification.svg and, when losses were
// measured, loss.svg.
std::vector<std::pair<std::string, std::string>> frontier_svgs(const FrontierData& d);

}  // namespace submoe::eval
