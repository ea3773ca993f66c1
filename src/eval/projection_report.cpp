// Renderings of a projection: one JSON object and a readable report.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "submoe/eval/projection.h"

namespace submoe::eval {
namespace {

using nlohmann::json;

// JSON has no infinity; an unbounded figure (nothing to read) is written as null.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json point_json(const ThroughputPoint& p) {
  return {{"batch", p.batch},
          {"hit_rate", num(p.hit_rate)},
          {"experts_loaded_per_step", num(p.experts_loaded)},
          {"storage_bytes_per_step", num(p.storage_bytes_per_step)},
          {"dram_bytes_per_step", num(p.dram_bytes_per_step)},
          {"weights_per_step", num(p.weights_per_step)},
          {"t_storage_s", num(p.t_storage)},
          {"t_dram_s", num(p.t_dram)},
          {"t_compute_s", num(p.t_compute)},
          {"tokens_per_s", num(p.tokens_per_s)},
          {"tokens_per_s_serial", num(p.tokens_per_s_serial)},
          {"bound", p.bound}};
}

json rate_json(const RatePoint& r) {
  return {{"rate_bits", r.rate_bits},
          {"dense_bits", r.dense_bits},
          {"footprint_bytes", num(r.footprint_bytes)},
          {"expert_bytes", num(r.expert_bytes)},
          {"dense_bytes", num(r.dense_bytes)},
          {"dense_resident_bytes", num(r.dense_resident_bytes)},
          {"dense_spill_bytes", num(r.dense_spill_bytes)},
          {"cache_bytes", num(r.cache_bytes)},
          {"resident_slots", r.resident_slots},
          {"total_slots", r.total_slots},
          {"resident_fraction", num(r.resident_fraction)},
          {"lru_operative", r.lru_operative},
          {"hit_rate", num(r.hit_rate)},
          {"storage_bytes_per_token", num(r.storage_bytes_per_token)},
          {"batch1", point_json(r.batch1)},
          {"batch32", point_json(r.batch32)},
          {"batch_n", point_json(r.batch_n)}};
}

}  // namespace

std::string projection_json(const ProjectionResult& r) {
  const MoeShape& s = r.shape;
  const ParamCounts& p = r.params;
  json j;
  j["model"] = {{"name", s.name}, {"layers", s.num_layers}, {"moe_layers", s.moe_layers}, {"d_model", s.d_model},
                {"experts", s.num_experts}, {"top_k", s.top_k}, {"expert_intermediate", s.expert_intermediate},
                {"shared_experts", s.num_shared_experts}, {"vocab", s.vocab_size}};
  j["params"] = {{"expert", p.expert},       {"routed", p.routed}, {"shared", p.shared},
                 {"attention", p.attention}, {"router", p.router}, {"dense_mlp", p.dense_mlp},
                 {"norms", p.norms},         {"embedding", p.embedding}, {"lm_head", p.lm_head},
                 {"total", p.total},         {"dense_active", p.dense_active}, {"active", p.active}};
  j["profile"] = r.profile.source;
  j["host"] = {{"source", r.limits.source},
               {"storage_read_GBps", r.limits.storage_read_gbps},
               {"storage_block_bytes", r.limits.storage_block_bytes},
               {"dram_read_GBps", r.limits.dram_read_gbps},
               {"kernel", r.limits.kernel_name},
               {"kernel_gweights_b1", r.limits.kernel_gweights_b1},
               {"kernel_gweights_b32", r.limits.kernel_gweights_b32},
               {"baseline_kernel_gweights_b1", r.limits.baseline_kernel_gweights_b1},
               {"baseline_kernel_gweights_b32", r.limits.baseline_kernel_gweights_b32}};
  j["dram_bytes"] = r.dram_bytes;
  j["working_set_slots"] = r.working_set_slots;
  j["critical_rate_bits"] = num(r.critical_rate_bits);
  j["at_rate"] = rate_json(r.at_rate);
  j["baseline"] = rate_json(r.baseline);
  j["compression"] = num(r.compression);
  j["capacity_gain"] = r.capacity_gain >= 0 ? num(r.capacity_gain) : json(nullptr);
  j["speedup_b1"] = num(r.speedup_b1);
  j["speedup_b32"] = num(r.speedup_b32);
  j["amplification_b1"] = num(r.amplification_b1);
  j["amplification_b32"] = num(r.amplification_b32);
  j["traffic_amplification"] = num(r.traffic_amplification);
  json sweep = json::array();
  for (const SweepRow& row : r.sweep) {
    sweep.push_back({{"hit_rate", row.hit_rate}, {"tokens_per_s_b1", num(row.tokens_per_s_b1)},
                     {"tokens_per_s_b32", num(row.tokens_per_s_b32)},
                     {"tokens_per_s_bn", num(row.tokens_per_s_bn)}});
  }
  j["sweep"] = sweep;
  j["sweep_batch"] = r.at_rate.batch_n.batch;
  return j.dump();
}

std::string projection_table(const ProjectionResult& r) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof(line), fmt, args...);
    out += line;
  };
  const MoeShape& s = r.shape;
  const ParamCounts& p = r.params;
  const double G = 1e9;
  add("model %s: %lld layers (%lld MoE), d_model %lld, %lld routed experts + %lld shared, top-%lld, expert width %lld\n",
      s.name.c_str(), static_cast<long long>(s.num_layers), static_cast<long long>(s.moe_layers),
      static_cast<long long>(s.d_model), static_cast<long long>(s.num_experts),
      static_cast<long long>(s.num_shared_experts), static_cast<long long>(s.top_k),
      static_cast<long long>(s.expert_intermediate));
  add("params: %.1f B total, %.2f B active per token; P_e = %.2f M per expert; %lld expert slots, k L = %lld\n",
      p.total / G, p.active / G, p.expert / 1e6, static_cast<long long>(r.at_rate.total_slots),
      static_cast<long long>(r.working_set_slots));
  add("host (%s): storage %.2f GB/s, DRAM %.2f GB/s, kernel %s (%.2f / %.2f Gweights/s at batch 1 / 32)\n",
      r.limits.source.c_str(), r.limits.storage_read_gbps, r.limits.dram_read_gbps, r.limits.kernel_name.c_str(),
      r.limits.kernel_gweights_b1, r.limits.kernel_gweights_b32);
  add("profile: %s; DRAM for weights %.1f GB\n\n", r.profile.source.c_str(), r.dram_bytes / G);
  add("%-34s %14s %14s\n", "", "requested", "baseline");
  // digits < 0: %g with -digits significant digits, else %f with digits decimals.
  auto row = [&](const char* name, double a, double b, int digits) {
    char fa[64], fb[64];
    if (digits < 0) {
      std::snprintf(fa, sizeof(fa), "%.*g", -digits, a);
      std::snprintf(fb, sizeof(fb), "%.*g", -digits, b);
    } else {
      std::snprintf(fa, sizeof(fa), "%.*f", digits, a);
      std::snprintf(fb, sizeof(fb), "%.*f", digits, b);
    }
    add("%-34s %14s %14s\n", name, fa, fb);
  };
  const RatePoint& a = r.at_rate;
  const RatePoint& b = r.baseline;
  row("expert rate r (bits/weight)", a.rate_bits, b.rate_bits, 3);
  row("dense rate (bits/weight)", a.dense_bits, b.dense_bits, 3);
  row("footprint (GB)", a.footprint_bytes / G, b.footprint_bytes / G, 1);
  row("expert block B(r) (MB)", a.expert_bytes / 1e6, b.expert_bytes / 1e6, 2);
  row("dense resident (GB)", a.dense_resident_bytes / G, b.dense_resident_bytes / G, 2);
  row("dense spilled to storage (GB)", a.dense_spill_bytes / G, b.dense_spill_bytes / G, 2);
  row("expert cache M (GB)", a.cache_bytes / G, b.cache_bytes / G, 2);
  row("resident slots", static_cast<double>(a.resident_slots), static_cast<double>(b.resident_slots), 0);
  row("resident fraction f", a.resident_fraction, b.resident_fraction, 4);
  add("%-34s %14s %14s\n", "LRU operative (slots >= k L)", a.lru_operative ? "yes" : "no",
      b.lru_operative ? "yes" : "no");
  row("hit rate h (pinned, batch 1)", a.hit_rate, b.hit_rate, 4);
  row("storage bytes per token (GB)", a.storage_bytes_per_token / G, b.storage_bytes_per_token / G, 3);
  row("tokens/s batch 1", a.batch1.tokens_per_s, b.batch1.tokens_per_s, -4);
  row("tokens/s batch 32", a.batch32.tokens_per_s, b.batch32.tokens_per_s, -4);
  if (a.batch_n.batch != 1 && a.batch_n.batch != 32) {
    char name[64];
    std::snprintf(name, sizeof(name), "tokens/s batch %u", a.batch_n.batch);
    row(name, a.batch_n.tokens_per_s, b.batch_n.tokens_per_s, -4);
  }
  row("tokens/s batch 1, no overlap", a.batch1.tokens_per_s_serial, b.batch1.tokens_per_s_serial, -4);
  add("%-34s %14s %14s\n", "bound at batch 1 / 32", (a.batch1.bound + "/" + a.batch32.bound).c_str(),
      (b.batch1.bound + "/" + b.batch32.bound).c_str());
  add("\ncritical rate r* = 8M/(P_e k L): %.3f bits/weight (LRU cannot hit above it)\n", r.critical_rate_bits);
  add("compression %.2fx -> throughput %.2fx at batch 1 (amplification %.2fx), %.2fx at batch 32 (%.2fx)\n",
      r.compression, r.speedup_b1, r.amplification_b1, r.speedup_b32, r.amplification_b32);
  if (r.capacity_gain >= 0) {
    add("resident slots %.2fx the baseline's; miss-traffic factor (1-h)/(1-h0) = %.3f\n", r.capacity_gain,
        r.traffic_amplification);
  } else {
    add("the baseline holds no expert slot; miss-traffic factor (1-h)/(1-h0) = %.3f\n", r.traffic_amplification);
  }
  const bool extra = a.batch_n.batch != 1 && a.batch_n.batch != 32;
  add("\ntokens/s over the hit-rate range at r = %.3f (hit rate imposed; distinct loads per step from the profile)\n",
      a.rate_bits);
  add("  %8s %12s %12s", "hit rate", "batch 1", "batch 32");
  if (extra) add(" %9s %2u", "batch", a.batch_n.batch);
  out += "\n";
  for (const SweepRow& w : r.sweep) {
    add("  %8.2f %12.4g %12.4g", w.hit_rate, w.tokens_per_s_b1, w.tokens_per_s_b32);
    if (extra) add(" %12.4g", w.tokens_per_s_bn);
    out += "\n";
  }
  return out;
}

}  // namespace submoe::eval
