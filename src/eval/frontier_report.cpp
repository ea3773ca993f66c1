#include "submoe/eval/frontier_report.h"

#include <algorithm>
#include <cstdio>

#include "submoe/eval/report_format.h"
#include "submoe/eval/svg_chart.h"

namespace submoe::eval {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string fmt(const char* f, double v) { return format_number(f, v); }

std::string budget_name(double mib) { return fmt("%g MiB", mib); }

// A JSON number, or null for NaN / infinity (JSON has neither).
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

const FrontierRate* find_rate(const FrontierData& d, const std::string& label) {
  for (const FrontierRate& r : d.rates)
    if (r.label == label) return &r;
  return nullptr;
}

// Colours shared by the measured and predicted series of one budget.
const char* budget_color(size_t i) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return kColors[i % std::size(kColors)];
}

}  // namespace

int frontier_baseline(const FrontierData& d) {
  int best = -1;
  for (size_t i = 0; i < d.rates.size(); ++i) {
    const FrontierRate& r = d.rates[i];
    if (!r.replayed || !r.error.empty()) continue;
    if (best < 0 || r.expert_bytes > d.rates[static_cast<size_t>(best)].expert_bytes) best = static_cast<int>(i);
  }
  return best;
}

const FrontierPoint* frontier_point(const FrontierData& d, const std::string& label, double budget_mib) {
  for (const FrontierPoint& p : d.points)
    if (p.label == label && p.budget_mib == budget_mib) return &p;
  return nullptr;
}

Amplification frontier_amplification(const FrontierData& d, const FrontierPoint& p) {
  Amplification a;
  const int b = frontier_baseline(d);
  if (b < 0 || !p.error.empty()) return a;
  const FrontierRate& r0 = d.rates[static_cast<size_t>(b)];
  const FrontierRate* r = find_rate(d, p.label);
  const FrontierPoint* p0 = frontier_point(d, r0.label, p.budget_mib);
  if (r == nullptr || p0 == nullptr || !p0->error.empty() || p0->tokens != p.tokens) return a;
  if (r0.expert_bytes > 0) a.rho = r->expert_bytes / r0.expert_bytes;
  if (p0->hit_rate < 1) a.miss_ratio = (1 - p.hit_rate) / (1 - p0->hit_rate);
  if (p0->bytes_read > 0) a.traffic_ratio = p.bytes_read / p0->bytes_read;
  return a;
}

nlohmann::json frontier_json(const FrontierData& d) {
  nlohmann::json rates = nlohmann::json::array(), points = nlohmann::json::array(), curves = nlohmann::json::array();
  for (const FrontierRate& r : d.rates) {
    nlohmann::json j = {{"label", r.label}, {"bits", r.bits}, {"nll", num(r.nll)}, {"expert_bytes", r.expert_bytes},
                        {"experts_bytes", r.experts_bytes}, {"kernel_gweights_per_s", r.kernel_gweights},
                        {"replayed", r.replayed}};
    if (!r.error.empty()) j["error"] = r.error;
    rates.push_back(std::move(j));
  }
  for (const FrontierPoint& p : d.points) {
    nlohmann::json j = {{"label", p.label}, {"budget_mib", p.budget_mib}};
    if (!p.error.empty()) {
      j["error"] = p.error;
    } else {
      const Amplification a = frontier_amplification(d, p);
      j.update({{"resident_fraction", p.resident_fraction},
                {"tokens", p.tokens},
                {"hit_rate", p.hit_rate},
                {"byte_hit_rate", p.byte_hit_rate},
                {"bytes_read", p.bytes_read},
                {"read_seconds", p.read_seconds},
                {"compute_seconds", p.compute_seconds},
                {"tokens_per_s", p.tokens_per_s},
                {"predicted_hit_rate", p.predicted_hit_rate},
                {"predicted_tokens_per_s", p.predicted_tokens_per_s},
                {"predicted_tokens_per_s_serial", p.predicted_tokens_per_s_serial},
                {"predicted_bound", p.predicted_bound},
                {"measured_over_predicted_serial",
                 num(p.predicted_tokens_per_s_serial > 0 ? p.tokens_per_s / p.predicted_tokens_per_s_serial : NAN)},
                {"rho", num(a.rho)},
                {"amplification", num(a.miss_ratio)},
                {"traffic_ratio", num(a.traffic_ratio)}});
    }
    points.push_back(std::move(j));
  }
  for (const HitRateCurve& c : d.curves) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& [slots, h] : c.points) pts.push_back({slots, h});
    curves.push_back({{"name", c.name}, {"points", std::move(pts)}});
  }
  const int b = frontier_baseline(d);
  return {{"format", "submoe-frontier"},
          {"model", d.model},
          {"text", d.text},
          {"calib", d.calib},
          {"trace", d.trace},
          {"profile_trace", d.profile_trace},
          {"replay_source", d.replay_source},
          {"io", d.io},
          {"policy", d.policy},
          {"host_limits", d.host_limits},
          {"layers", d.layers},
          {"experts", d.experts},
          {"top_k", d.top_k},
          {"trace_tokens", d.trace_tokens},
          {"replay_tokens", d.replay_tokens},
          {"expert_shape", {{"hidden", d.hidden}, {"width", d.expert_width}}},
          {"bf16_experts_bytes", d.bf16_experts_bytes},
          {"budgets_mib", d.budgets_mib},
          {"baseline", b >= 0 ? nlohmann::json(d.rates[static_cast<size_t>(b)].label) : nlohmann::json(nullptr)},
          {"lru_zero_bound_slots", d.lru_zero_bound},
          {"lru_first_hit_slots", d.lru_first_hit},
          {"rates", std::move(rates)},
          {"points", std::move(points)},
          {"hit_rate_curves", std::move(curves)}};
}

std::string frontier_markdown(const FrontierData& d) {
  const int b = frontier_baseline(d);
  const std::string base = b >= 0 ? d.rates[static_cast<size_t>(b)].label : std::string("none");
  const double slots = static_cast<double>(d.layers) * d.experts;
  std::string s = "# Rate x memory frontier\n\n";
  s += "- model `" + d.model + "`, held-out text `" + d.text + "`; its trace `" + d.trace + "` (" +
       std::to_string(d.trace_tokens) + " tokens, " + std::to_string(d.layers) + " MoE layers x " +
       std::to_string(d.experts) + " experts, top-" + std::to_string(d.top_k) + ")\n";
  s += "- replayed on " + d.replay_source + " (experts " + std::to_string(d.expert_width) + " x " + std::to_string(d.hidden) +
       ", " + fmt("%.1f", d.bf16_experts_bytes / kMiB) + " MiB of experts at bf16), " + std::to_string(d.replay_tokens) +
       " tokens, policy " + d.policy + ", io " + d.io + "\n";
  s += "- popularity profile (pinned policies and the projection): `" + d.profile_trace + "`\n";
  s += "- host figures of the projection: " + d.host_limits + "\n";
  s += "- amplification baseline r0: " + base + " (the replayed rate with the most bits)\n\n";

  s += "## Rates\n\n| representation | bits/weight | expert MiB | experts MiB | kernel Gweights/s | held-out nll |\n"
       "|---|---:|---:|---:|---:|---:|\n";
  for (const FrontierRate& r : d.rates) {
    if (!r.error.empty()) {
      s += "| " + r.label + " | failed: " + r.error + " | | | | |\n";
      continue;
    }
    s += "| " + r.label + " | " + fmt("%.4f", r.bits) + " | " + fmt("%.3f", r.expert_bytes / kMiB) + " | " +
         fmt("%.1f", r.experts_bytes / kMiB) + " | " + (r.kernel_gweights > 0 ? fmt("%.2f", r.kernel_gweights) : "-") +
         " | " + (std::isfinite(r.nll) ? fmt("%.4f", r.nll) : "-") + " |\n";
  }

  s += "\n## Replays\n\nMeasured: the trace's routing executed on the experts through the cache (misses read with --io "
       "from the artifact). Predicted: seed 001's projection model for the same experts, rate, budget, profile and "
       "host, serial (reads, then compute, as a replay without prefetch runs) and overlapped. Amplification: "
       "(1 - h(r)) / (1 - h(r0)) at the same budget; traffic ratio: bytes read at r over bytes read at r0, against "
       "rho = B(r) / B(r0), the compression alone.\n\n"
       "| budget | representation | f | hit rate (by bytes) | MB read | read s | compute s | tokens/s | predicted hit | "
       "predicted tok/s serial / overlapped | measured / predicted | rho | amplification | traffic ratio |\n"
       "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n";
  for (double budget : d.budgets_mib)
    for (const FrontierPoint& p : d.points) {
      if (p.budget_mib != budget) continue;
      if (!p.error.empty()) {
        s += "| " + budget_name(budget) + " | " + p.label + " | failed: " + p.error + " | | | | | | | | | | | |\n";
        continue;
      }
      const Amplification a = frontier_amplification(d, p);
      const auto opt = [](double v, const char* f) { return std::isfinite(v) ? fmt(f, v) : std::string("-"); };
      s += "| " + budget_name(budget) + " | " + p.label + " | " + fmt("%.3f", p.resident_fraction) + " | " +
           fmt("%.1f%%", 100 * p.hit_rate) + " (" + fmt("%.1f%%", 100 * p.byte_hit_rate) + ") | " +
           fmt("%.1f", p.bytes_read / 1e6) + " | " +
           fmt("%.2f", p.read_seconds) + " | " + fmt("%.2f", p.compute_seconds) + " | " + fmt("%.1f", p.tokens_per_s) +
           " | " + fmt("%.1f%%", 100 * p.predicted_hit_rate) + " | " + fmt("%.1f", p.predicted_tokens_per_s_serial) +
           " / " + fmt("%.1f", p.predicted_tokens_per_s) + " (" + p.predicted_bound + ") | " +
           opt(p.predicted_tokens_per_s_serial > 0 ? p.tokens_per_s / p.predicted_tokens_per_s_serial : NAN, "%.2f") +
           " | " + opt(a.rho, "%.3f") + " | " + opt(a.miss_ratio, "%.3f") + " | " + opt(a.traffic_ratio, "%.4f") + " |\n";
    }

  s += "\n## Hit rate against capacity (simulator, one cache shared by all layers)\n\n";
  s += "A token reads k L = " + std::to_string(d.top_k * d.layers) +
       " expert slots, layer after layer. An expert a layer used at one token is used again at the next token at the "
       "earliest after the other L - 1 layers' k experts each (k L - k = " + std::to_string(d.lru_zero_bound) +
       " other slots), so LRU evicts it first whenever the capacity is at most k L - k: LRU hits nothing up to " +
       std::to_string(d.lru_zero_bound) + " slots, not k L as seed 001 writes (from k L - k + 1 on it can hit, when a layer "
       "reuses an expert it chose last at one token and first at the next). ";
  s += d.lru_first_hit >= 0 ? "On this trace LRU first hits at " + std::to_string(d.lru_first_hit) + " slots.\n\n"
                            : std::string("LRU never hit at the simulated capacities.\n\n");
  if (!d.curves.empty()) {
    s += "| capacity slots | share |";
    for (const HitRateCurve& c : d.curves) s += " " + c.name + " |";
    s += "\n|---:|---:|";
    for (size_t i = 0; i < d.curves.size(); ++i) s += "---:|";
    s += "\n";
    // At most about 24 rows (every point is in frontier.json and hit_rate.svg),
    // always with the LRU bound, the capacity after it and k L.
    const size_t n = d.curves.front().points.size();
    const size_t stride = std::max<size_t>(1, (n + 23) / 24);
    for (size_t i = 0; i < n; ++i) {
      const double cap = d.curves.front().points[i].first;
      const auto near_bound = [&](double c) { return c == static_cast<double>(d.lru_zero_bound) || c == static_cast<double>(d.lru_zero_bound + 1) || c == static_cast<double>(d.lru_zero_bound + d.top_k); };
      if (i % stride != 0 && i + 1 != n && !near_bound(cap)) continue;
      s += "| " + fmt("%.0f", cap) + " | " + fmt("%.3f", slots > 0 ? cap / slots : 0) + " |";
      for (const HitRateCurve& c : d.curves)
        s.append(" ").append(i < c.points.size() ? fmt("%.1f%%", 100 * c.points[i].second) : "-").append(" |");
      s += "\n";
    }
  }
  s += "\n## Figures\n\nfootprint.svg, resident_fraction.svg, hit_rate.svg, tokens_per_s.svg, amplification.svg";
  bool any_loss = false;
  for (const FrontierRate& r : d.rates) any_loss = any_loss || std::isfinite(r.nll);
  s += any_loss ? ", loss.svg\n" : "\n";
  return s;
}

std::vector<std::pair<std::string, std::string>> frontier_svgs(const FrontierData& d) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<const FrontierRate*> ok;
  for (const FrontierRate& r : d.rates)
    if (r.error.empty()) ok.push_back(&r);

  Chart foot;
  foot.title = "routed experts' footprint against rate, with the memory budgets";
  foot.x_label = "bits per expert weight";
  foot.y_label = "routed experts, MiB";
  foot.log_y = true;
  ChartSeries fs{"footprint", {}, false, true, ""};
  for (const FrontierRate* r : ok) fs.points.push_back({r->bits, r->experts_bytes / kMiB});
  foot.series.push_back(fs);
  for (double b : d.budgets_mib) foot.rules.push_back({b, "budget " + budget_name(b), false});
  out.emplace_back("footprint.svg", render_svg(foot));

  Chart res;
  res.title = "resident fraction f of the expert slots against rate";
  res.x_label = "bits per expert weight";
  res.y_label = "resident fraction f";
  res.y_range = std::make_pair(0.0, 1.05);
  for (size_t i = 0; i < d.budgets_mib.size(); ++i) {
    ChartSeries s{"budget " + budget_name(d.budgets_mib[i]), {}, false, true, budget_color(i)};
    for (const FrontierRate* r : ok)
      if (r->experts_bytes > 0) s.points.push_back({r->bits, std::min(1.0, d.budgets_mib[i] * kMiB / r->experts_bytes)});
    res.series.push_back(s);
  }
  out.emplace_back("resident_fraction.svg", render_svg(res));

  Chart hit;
  hit.title = "hit rate against cache capacity (simulated on the trace)";
  hit.x_label = "capacity, expert slots (of " + std::to_string(d.layers * d.experts) + ")";
  hit.y_label = "hit rate";
  hit.y_range = std::make_pair(0.0, 1.0);
  for (const HitRateCurve& c : d.curves)
    hit.series.push_back({c.name, c.points, c.name == "popularity model", false, ""});
  hit.rules.push_back({static_cast<double>(d.lru_zero_bound), "kL-k", true});
  hit.rules.push_back({static_cast<double>(d.lru_zero_bound + d.top_k), "kL", true});
  out.emplace_back("hit_rate.svg", render_svg(hit));

  Chart tps;
  tps.title = "tokens/s against rate at each budget: measured (solid), projected serial (dashed)";
  tps.x_label = "bits per expert weight";
  tps.y_label = "tokens/s (routed experts only)";
  tps.log_y = true;
  for (size_t i = 0; i < d.budgets_mib.size(); ++i) {
    ChartSeries m{budget_name(d.budgets_mib[i]) + " measured", {}, false, true, budget_color(i)};
    ChartSeries p{budget_name(d.budgets_mib[i]) + " projected", {}, true, false, budget_color(i)};
    for (const FrontierPoint& pt : d.points) {
      const FrontierRate* r = find_rate(d, pt.label);
      if (pt.budget_mib != d.budgets_mib[i] || !pt.error.empty() || r == nullptr) continue;
      m.points.push_back({r->bits, pt.tokens_per_s});
      p.points.push_back({r->bits, pt.predicted_tokens_per_s_serial});
    }
    tps.series.push_back(m);
    tps.series.push_back(p);
  }
  out.emplace_back("tokens_per_s.svg", render_svg(tps));

  Chart amp;
  amp.title = "storage traffic T(r)/T(r0) against compression rho = B(r)/B(r0); below T ~ rho: amplification";
  amp.x_label = "rho (expert bytes against the baseline)";
  amp.y_label = "T(r) / T(r0), measured bytes read";
  amp.log_x = amp.log_y = true;
  ChartSeries naive{"T ~ rho", {}, true, false, "gray"};
  for (size_t i = 0; i < d.budgets_mib.size(); ++i) {
    ChartSeries s{budget_name(d.budgets_mib[i]), {}, false, true, budget_color(i)};
    for (const FrontierPoint& pt : d.points) {
      if (pt.budget_mib != d.budgets_mib[i]) continue;
      const Amplification a = frontier_amplification(d, pt);
      if (!std::isfinite(a.rho) || !std::isfinite(a.traffic_ratio) || a.traffic_ratio <= 0) continue;
      s.points.push_back({a.rho, a.traffic_ratio});
      naive.points.push_back({a.rho, a.rho});
    }
    amp.series.push_back(s);
  }
  amp.series.push_back(naive);
  out.emplace_back("amplification.svg", render_svg(amp));

  Chart loss;
  loss.title = "held-out loss against rate";
  loss.x_label = "bits per expert weight";
  loss.y_label = "held-out nll (nats/token)";
  ChartSeries ls{"held-out nll", {}, false, true, ""};
  for (const FrontierRate* r : ok)
    if (std::isfinite(r->nll)) ls.points.push_back({r->bits, r->nll});
  if (!ls.points.empty()) {
    loss.series.push_back(ls);
    out.emplace_back("loss.svg", render_svg(loss));
  }
  return out;
}

}  // namespace submoe::eval
