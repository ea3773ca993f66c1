#include "submoe/eval/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "submoe/eval/report_format.h"
#include "submoe/eval/svg_chart.h"

namespace submoe::eval {
namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

// A table cell: pipes escaped, line breaks as spaces.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace

std::string compare_markdown(const CompareTable& t) {
  double source_nll = NAN;
  for (const CompareRow& r : t.rows)
    if (r.repr == "source" && r.error.empty()) source_nll = r.nll;
  std::string s = "| representation | --bits | effective bits | held-out nll | vs source | artifact MiB | "
                  "load peak RSS MiB | compress s | compress peak RSS MiB | gemv b1 us | gemv b8 us | decode tok/s |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CompareRow& r : t.rows) {
    const std::string bits = r.requested_bits > 0 ? fmt("%g", r.requested_bits) : "-";
    if (!r.error.empty()) {
      s += "| " + r.repr + " | " + bits + " | failed: " + cell(r.error) + " | | | | | | | | | |\n";
      continue;
    }
    const auto opt = [](double v, const char* f) { return v > 0 ? fmt(f, v) : std::string("-"); };
    s += "| " + r.repr + " | " + bits + " | " + fmt("%.4f", r.effective_bits) + " | " + fmt("%.4f", r.nll) + " | " +
         (std::isnan(source_nll) || r.repr == "source" ? std::string("-") : fmt("%+.4f", r.nll - source_nll)) + " | " +
         fmt("%.2f", static_cast<double>(r.artifact_bytes) / (1024.0 * 1024.0)) + " | " +
         opt(r.load_peak_rss_mb, "%.0f") + " | " + opt(r.compress_seconds, "%.1f") + " | " +
         opt(r.compress_peak_rss_mb, "%.0f") + " | " + opt(r.gemv_b1_us, "%.1f") + " | " + opt(r.gemv_b8_us, "%.1f") +
         " | " + opt(r.decode_tokens_per_s, "%.1f") + " |\n";
  }
  return s;
}

nlohmann::json compare_json(const CompareTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CompareRow& r : t.rows) {
    nlohmann::json j = {{"repr", r.repr}, {"requested_bits", r.requested_bits}};
    if (!r.error.empty()) {
      j["error"] = r.error;
    } else {
      j.update({{"effective_bits", r.effective_bits},
                {"nll", r.nll},
                {"artifact_bytes", r.artifact_bytes},
                {"load_peak_rss_mb", r.load_peak_rss_mb},
                {"compress_seconds", r.compress_seconds},
                {"compress_peak_rss_mb", r.compress_peak_rss_mb},
                {"gemv_batch1_us", r.gemv_b1_us},
                {"gemv_batch8_us", r.gemv_b8_us},
                {"decode_tokens_per_s", r.decode_tokens_per_s}});
    }
    rows.push_back(std::move(j));
  }
  return {{"model", t.model},
          {"text", t.text},
          {"expert_shape", {t.expert_rows, t.expert_cols}},
          {"rows", std::move(rows)}};
}

std::string compare_svg(const CompareTable& t) {
  Chart c;
  c.title = "held-out loss against effective bits per expert weight: " + t.model;
  c.x_label = "effective bits per weight (experts, from the artifact's ledger)";
  c.y_label = "held-out nll (nats/token)";
  std::map<std::string, ChartSeries> lines;
  for (const CompareRow& r : t.rows) {
    if (!r.error.empty() || !std::isfinite(r.nll)) continue;
    if (r.repr == "source") {
      c.rules.push_back({r.nll, "source (uncompressed)", false});
      continue;
    }
    ChartSeries& s = lines[r.repr];
    s.name = r.repr;
    s.points.push_back({r.effective_bits, r.nll});
  }
  for (auto& [name, s] : lines) c.series.push_back(std::move(s));
  return render_svg(c);
}

}  // namespace submoe::eval
