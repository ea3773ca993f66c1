// Footprint, residency, traffic and throughput of seed 001's projection
// (equations 1-4; docs/projection.md gives each one with its symbols).
#include <algorithm>
#include <cmath>
#include <limits>

#include "projection_internal.h"
#include "submoe/eval/projection.h"

namespace submoe::eval {
namespace {

constexpr double kGB = 1e9;

struct StepCost {
  double dense_bytes = 0;        // resident dense weights, read every step
  double dense_spill_bytes = 0;  // dense weights fetched from storage every step
  double expert_bytes = 0;       // B(r)
  double expert_params = 0;      // P_e
  double dense_params = 0;
};

// Seconds per weight of one kernel call at batch b, linear in b between the two
// measured batch sizes: a call streams its weights once (the b = 1 cost) and
// does per-token arithmetic on top. Without a batch-32 figure every token is
// charged a separate pass.
double seconds_per_weight(const HostLimits& h, uint32_t b) {
  if (!(h.kernel_gweights_b1 > 0)) return 0;
  const double t1 = 1.0 / (h.kernel_gweights_b1 * kGB);
  if (!(h.kernel_gweights_b32 > 0)) return t1 * b;
  const double t32 = 1.0 / (h.kernel_gweights_b32 * kGB);
  return std::max(t1, t1 + (t32 - t1) * (static_cast<double>(b) - 1.0) / 31.0);
}

ThroughputPoint evaluate(const HostLimits& h, const StepCost& c, uint32_t batch, double loads_total,
                         double loads_missed) {
  ThroughputPoint p;
  p.batch = batch;
  p.experts_loaded = loads_total;
  p.hit_rate = loads_total > 0 ? 1.0 - loads_missed / loads_total : 1.0;
  p.storage_bytes_per_step = loads_missed * c.expert_bytes + c.dense_spill_bytes;
  // Misses land in DRAM and the kernel reads them from there like hits.
  p.dram_bytes_per_step = loads_total * c.expert_bytes + c.dense_bytes + c.dense_spill_bytes;
  p.weights_per_step = loads_total * c.expert_params + c.dense_params;
  p.t_storage = p.storage_bytes_per_step / (h.storage_read_gbps * kGB);
  p.t_dram = p.dram_bytes_per_step / (h.dram_read_gbps * kGB);
  p.t_compute = p.weights_per_step * seconds_per_weight(h, batch);
  const double t = std::max({p.t_storage, p.t_dram, p.t_compute});
  p.bound = t == p.t_storage ? "storage" : (t == p.t_dram ? "dram" : "compute");
  p.tokens_per_s = t > 0 ? batch / t : std::numeric_limits<double>::infinity();
  const double serial = p.t_storage + std::max(p.t_dram, p.t_compute);
  p.tokens_per_s_serial = serial > 0 ? batch / serial : std::numeric_limits<double>::infinity();
  return p;
}

struct RateContext {
  RatePoint point;
  StepCost cost;
  std::vector<uint8_t> pinned;
};

RateContext at_rate(const ProjectionInputs& in, const ParamCounts& pc, const HostLimits& limits, double rate,
                    double dense_bits) {
  RateContext rc;
  RatePoint& r = rc.point;
  const MoeShape& s = in.shape;
  r.rate_bits = rate;
  r.dense_bits = dense_bits;
  r.expert_bytes = pc.expert * rate / 8.0;
  r.footprint_bytes = pc.routed * rate / 8.0 + (pc.total - pc.routed) * dense_bits / 8.0;
  r.dense_bytes = pc.dense_active * dense_bits / 8.0;
  const double budget = std::max(0.0, (in.dram_gb - in.reserve_gb) * kGB);
  r.dense_resident_bytes = std::min(r.dense_bytes, budget);
  r.dense_spill_bytes = r.dense_bytes - r.dense_resident_bytes;
  r.cache_bytes = budget - r.dense_resident_bytes;
  r.total_slots = s.moe_layers * s.num_experts;
  r.resident_slots = static_cast<int64_t>(
      std::min<double>(static_cast<double>(r.total_slots), std::floor(r.cache_bytes / r.expert_bytes)));
  r.resident_fraction = static_cast<double>(r.resident_slots) / static_cast<double>(r.total_slots);
  r.lru_operative = r.resident_slots >= s.top_k * s.moe_layers;
  rc.pinned = pinned_slots(in.profile, r.resident_slots);
  r.hit_rate = pinned_hit_rate(in.profile, r.resident_slots);
  r.storage_bytes_per_token = static_cast<double>(s.moe_layers * s.top_k) * (1.0 - r.hit_rate) * r.expert_bytes +
                              r.dense_spill_bytes;
  rc.cost.dense_bytes = r.dense_resident_bytes;
  rc.cost.dense_spill_bytes = r.dense_spill_bytes;
  rc.cost.expert_bytes = r.expert_bytes;
  rc.cost.expert_params = pc.expert;
  rc.cost.dense_params = pc.dense_active;
  auto point = [&](uint32_t b) {
    const StepLoads l = step_loads(in.profile, rc.pinned, b);
    return evaluate(limits, rc.cost, b, l.total(), l.missed);
  };
  r.batch1 = point(1);
  r.batch32 = point(32);
  r.batch_n = point(in.batch);
  return rc;
}

}  // namespace

Result<ParamCounts> count_params(const MoeShape& s) {
  if (s.num_layers < 1 || s.moe_layers < 1 || s.moe_layers > s.num_layers || s.d_model < 1 || s.num_experts < 1 ||
      s.top_k < 1 || s.top_k > s.num_experts || s.expert_intermediate < 1 || s.expert_matrices < 1 ||
      s.num_shared_experts < 0 || s.vocab_size < 1 || s.attention_params_per_layer < 0) {
    return invalid_argument("model shape: layers, d_model, experts, top_k (<= experts), expert width and vocab must be "
                            "positive and moe_layers <= num_layers");
  }
  if (s.num_shared_experts > 0 && s.shared_expert_intermediate < 1) {
    return invalid_argument("model shape: shared experts need a positive width");
  }
  if (s.moe_layers < s.num_layers && s.dense_mlp_intermediate < 1) {
    return invalid_argument("model shape: layers without routed experts need a dense MLP width");
  }
  ParamCounts p;
  const double d = static_cast<double>(s.d_model), L = static_cast<double>(s.moe_layers);
  const double all_layers = static_cast<double>(s.num_layers);
  const double mats = static_cast<double>(s.expert_matrices);
  p.expert = mats * d * static_cast<double>(s.expert_intermediate);
  p.routed = L * static_cast<double>(s.num_experts) * p.expert;
  p.shared = L * static_cast<double>(s.num_shared_experts) * mats * d * static_cast<double>(s.shared_expert_intermediate);
  p.attention = all_layers * static_cast<double>(s.attention_params_per_layer);
  p.router = L * d * static_cast<double>(s.num_experts);
  p.dense_mlp = (all_layers - L) * mats * d * static_cast<double>(s.dense_mlp_intermediate);
  p.norms = all_layers * 2 * d + d;
  p.embedding = static_cast<double>(s.vocab_size) * d;
  p.lm_head = s.tied_embeddings ? 0 : p.embedding;
  p.total = p.routed + p.shared + p.attention + p.router + p.dense_mlp + p.norms + p.embedding + p.lm_head;
  // The input embedding is a lookup of one row per token: it stays on storage
  // unless it doubles as the output projection, which every token reads whole.
  const double output_projection = static_cast<double>(s.vocab_size) * d;
  p.dense_active = p.shared + p.attention + p.router + p.dense_mlp + p.norms + output_projection;
  p.active = p.dense_active + static_cast<double>(s.top_k) * L * p.expert;
  if (!std::isfinite(p.total) || p.total > 1e16) return invalid_argument("model shape: parameter count overflows");
  return p;
}

Result<ProjectionResult> project(const ProjectionInputs& in) {
  SUBMOE_ASSIGN_OR_RETURN(ParamCounts pc, count_params(in.shape));
  const MoeShape& s = in.shape;
  if (!(in.rate_bits > 0) || in.rate_bits > 64) return invalid_argument("rate must be in (0, 64] bits per weight");
  const double dense_bits = in.dense_bits < 0 ? in.rate_bits : in.dense_bits;
  if (!(dense_bits > 0) || dense_bits > 64) return invalid_argument("dense bits must be in (0, 64]");
  if (!(in.baseline_bits > 0) || in.baseline_bits > 64) return invalid_argument("baseline bits must be in (0, 64]");
  if (!(in.dram_gb > 0) || !std::isfinite(in.dram_gb)) return invalid_argument("DRAM budget must be positive");
  if (!(in.reserve_gb >= 0) || in.reserve_gb >= in.dram_gb) return invalid_argument("reserve must be in [0, DRAM)");
  if (in.batch < 1 || in.batch > 65536) return invalid_argument("batch must be in 1..65536");
  if (in.sweep_points < 2 || in.sweep_points > 1001) return invalid_argument("sweep points must be in 2..1001");
  if (in.profile.layers != s.moe_layers || in.profile.experts != s.num_experts || in.profile.top_k != s.top_k ||
      in.profile.share.size() != static_cast<size_t>(s.moe_layers * s.num_experts)) {
    return invalid_argument("popularity profile does not match the model (layers x experts x top_k)");
  }
  const HostLimits& h = in.limits;
  if (!(h.storage_read_gbps > 0) || !(h.dram_read_gbps > 0) || !(h.kernel_gweights_b1 >= 0) ||
      !(h.kernel_gweights_b32 >= 0) || !(h.baseline_kernel_gweights_b1 >= 0) ||
      !(h.baseline_kernel_gweights_b32 >= 0)) {
    return invalid_argument("host limits: bandwidths must be positive and kernel rates >= 0");
  }

  ProjectionResult r;
  r.shape = s;
  r.params = pc;
  r.profile = in.profile;
  r.limits = h;
  r.dram_bytes = in.dram_gb * kGB;
  r.working_set_slots = s.top_k * s.moe_layers;
  const RateContext main = at_rate(in, pc, h, in.rate_bits, dense_bits);
  HostLimits base_limits = h;
  base_limits.kernel_gweights_b1 = h.baseline_kernel_gweights_b1;
  base_limits.kernel_gweights_b32 = h.baseline_kernel_gweights_b32;
  const RateContext base = at_rate(in, pc, base_limits, in.baseline_bits, in.baseline_bits);
  r.at_rate = main.point;
  r.baseline = base.point;
  r.critical_rate_bits = 8.0 * main.point.cache_bytes / (pc.expert * static_cast<double>(r.working_set_slots));
  r.compression = base.point.footprint_bytes / main.point.footprint_bytes;
  r.capacity_gain = base.point.resident_slots > 0
                        ? static_cast<double>(main.point.resident_slots) / static_cast<double>(base.point.resident_slots)
                        : -1.0;
  r.speedup_b1 = main.point.batch1.tokens_per_s / base.point.batch1.tokens_per_s;
  r.speedup_b32 = main.point.batch32.tokens_per_s / base.point.batch32.tokens_per_s;
  r.amplification_b1 = r.speedup_b1 / r.compression;
  r.amplification_b32 = r.speedup_b32 / r.compression;
  r.traffic_amplification =
      base.point.hit_rate < 1.0 ? (1.0 - main.point.hit_rate) / (1.0 - base.point.hit_rate) : 1.0;

  // Sensitivity: the hit rate imposed instead of modelled; the expected number
  // of distinct loads per step still comes from the profile.
  const std::vector<uint8_t> none(in.profile.share.size(), 0);
  const double loads1 = step_loads(in.profile, none, 1).total();
  const double loads32 = step_loads(in.profile, none, 32).total();
  const double loads_n = step_loads(in.profile, none, in.batch).total();
  for (int i = 0; i < in.sweep_points; ++i) {
    SweepRow row;
    row.hit_rate = static_cast<double>(i) / static_cast<double>(in.sweep_points - 1);
    row.tokens_per_s_b1 = evaluate(h, main.cost, 1, loads1, (1.0 - row.hit_rate) * loads1).tokens_per_s;
    row.tokens_per_s_b32 = evaluate(h, main.cost, 32, loads32, (1.0 - row.hit_rate) * loads32).tokens_per_s;
    row.tokens_per_s_bn = evaluate(h, main.cost, in.batch, loads_n, (1.0 - row.hit_rate) * loads_n).tokens_per_s;
    r.sweep.push_back(row);
  }
  return r;
}

}  // namespace submoe::eval
