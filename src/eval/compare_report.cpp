#include "submoe/eval/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace submoe::eval {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// About five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double span = hi > lo ? hi - lo : 1.0;
  const double raw = span / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push_back(v);
  return out;
}

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
  constexpr double W = 720, H = 440, left = 70, right = 170, top = 30, bottom = 50;
  std::map<std::string, std::vector<std::pair<double, double>>> lines;
  double source_nll = NAN;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const CompareRow& r : t.rows) {
    if (!r.error.empty() || !std::isfinite(r.nll)) continue;
    y0 = std::min(y0, r.nll);
    y1 = std::max(y1, r.nll);
    if (r.repr == "source") {
      source_nll = r.nll;
      continue;
    }
    lines[r.repr].push_back({r.effective_bits, r.nll});
    x0 = std::min(x0, r.effective_bits);
    x1 = std::max(x1, r.effective_bits);
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1;
  if (!std::isfinite(y0)) y0 = 0, y1 = 1;
  const double xpad = std::max(0.05, 0.05 * (x1 - x0)), ypad = std::max(1e-4, 0.08 * (y1 - y0));
  x0 -= xpad, x1 += xpad, y0 -= ypad, y1 += ypad;
  const auto X = [&](double v) { return left + (v - x0) / (x1 - x0) * (W - left - right); };
  const auto Y = [&](double v) { return H - bottom - (v - y0) / (y1 - y0) * (H - top - bottom); };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" +
                  fmt("%.0f", H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"18\">held-out loss against effective bits per expert weight: " +
       escape_xml(t.model) + "</text>\n";
  const double xa = H - bottom, ya = left;
  s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", xa) + "\" x2=\"" + fmt("%.1f", W - right) +
       "\" y2=\"" + fmt("%.1f", xa) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + fmt("%.1f", ya) + "\" y1=\"" + fmt("%.1f", top) + "\" x2=\"" + fmt("%.1f", ya) + "\" y2=\"" +
       fmt("%.1f", xa) + "\" stroke=\"black\"/>\n";
  for (double v : ticks(x0, x1))
    s += "<text x=\"" + fmt("%.1f", X(v)) + "\" y=\"" + fmt("%.1f", xa + 16) + "\" text-anchor=\"middle\">" +
         fmt("%g", v) + "</text>\n";
  for (double v : ticks(y0, y1))
    s += "<text x=\"" + fmt("%.1f", ya - 6) + "\" y=\"" + fmt("%.1f", Y(v) + 4) + "\" text-anchor=\"end\">" +
         fmt("%.4g", v) + "</text>\n";
  s += "<text x=\"" + fmt("%.1f", (left + W - right) / 2) + "\" y=\"" + fmt("%.1f", H - 12) +
       "\" text-anchor=\"middle\">effective bits per weight (experts, from the artifact's ledger)</text>\n";
  s += "<text transform=\"translate(16," + fmt("%.1f", (top + xa) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">held-out nll (nats/token)</text>\n";
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  size_t k = 0;
  double legend_y = top + 10;
  for (auto& [name, pts] : lines) {
    std::sort(pts.begin(), pts.end());
    const char* color = kColors[k++ % std::size(kColors)];
    std::string poly;
    for (const auto& [x, y] : pts) poly += fmt("%.1f", X(x)) + "," + fmt("%.1f", Y(y)) + " ";
    s += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + poly + "\"/>\n";
    for (const auto& [x, y] : pts)
      s += "<circle cx=\"" + fmt("%.1f", X(x)) + "\" cy=\"" + fmt("%.1f", Y(y)) + "\" r=\"3.5\" fill=\"" + color +
           "\"><title>" + escape_xml(name) + fmt(": %.4f bits, ", x) + fmt("nll %.5f", y) + "</title></circle>\n";
    s += "<line x1=\"" + fmt("%.1f", W - right + 15) + "\" y1=\"" + fmt("%.1f", legend_y) + "\" x2=\"" +
         fmt("%.1f", W - right + 40) + "\" y2=\"" + fmt("%.1f", legend_y) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"/>\n";
    s += "<text x=\"" + fmt("%.1f", W - right + 46) + "\" y=\"" + fmt("%.1f", legend_y + 4) + "\">" +
         escape_xml(name) + "</text>\n";
    legend_y += 18;
  }
  if (std::isfinite(source_nll)) {
    s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", Y(source_nll)) + "\" x2=\"" +
         fmt("%.1f", W - right) + "\" y2=\"" + fmt("%.1f", Y(source_nll)) +
         "\" stroke=\"gray\" stroke-dasharray=\"6,4\"/>\n";
    s += "<text x=\"" + fmt("%.1f", W - right + 15) + "\" y=\"" + fmt("%.1f", legend_y + 4) +
         "\" fill=\"gray\">source (uncompressed)</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace submoe::eval
