#include "submoe/eval/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "submoe/eval/report_format.h"

namespace submoe::eval {
namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

// About five round tick values covering [lo, hi].
std::vector<double> linear_ticks(double lo, double hi) {
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
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push_back(std::fabs(v) < 1e-12 * span ? 0.0 : v);
  return out;
}

// Powers of ten (and 2x, 5x when the span is under two decades) in [lo, hi], lo > 0.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  const bool fine = std::log10(hi / lo) < 2;
  for (double p = std::pow(10.0, std::floor(std::log10(lo))); p <= hi * (1 + 1e-9); p *= 10)
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && !fine) continue;
      const double v = p * m;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
  return out;
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double t(double v) const {  // 0..1 along the axis
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
  }
  bool valid(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// The data's range of one coordinate, padded, unless fixed.
Axis make_axis(std::vector<double> values, bool log, const std::optional<std::pair<double, double>>& fixed) {
  Axis a;
  a.log = log;
  if (fixed) {
    a.lo = fixed->first, a.hi = fixed->second;
    if (!(a.hi > a.lo) || (log && !(a.lo > 0))) a.lo = log ? 1 : 0, a.hi = log ? 10 : 1;
    return a;
  }
  values.erase(std::remove_if(values.begin(), values.end(), [&](double v) { return !a.valid(v); }), values.end());
  if (values.empty()) {
    a.lo = log ? 1 : 0, a.hi = log ? 10 : 1;
    return a;
  }
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  double lo = *mn, hi = *mx;
  if (log) {
    if (hi <= lo) lo /= 2, hi *= 2;
    a.lo = lo / std::pow(hi / lo, 0.04), a.hi = hi * std::pow(hi / lo, 0.04);
  } else {
    const double pad = hi > lo ? 0.06 * (hi - lo) : std::max(1e-4, 0.1 * std::fabs(lo));
    a.lo = lo - pad, a.hi = hi + pad;
  }
  return a;
}

}  // namespace

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

std::string render_svg(const Chart& c) {
  constexpr double W = 720, H = 440, left = 70, right = 190, top = 30, bottom = 50;
  std::vector<double> xs, ys;
  for (const ChartSeries& s : c.series)
    for (const auto& [x, y] : s.points) xs.push_back(x), ys.push_back(y);
  for (const ChartRule& r : c.rules) (r.vertical ? xs : ys).push_back(r.value);
  const Axis ax = make_axis(xs, c.log_x, c.x_range), ay = make_axis(ys, c.log_y, c.y_range);
  const auto X = [&](double v) { return left + ax.t(v) * (W - left - right); };
  const auto Y = [&](double v) { return H - bottom - ay.t(v) * (H - top - bottom); };
  const auto in_plot = [&](double x, double y) {
    return ax.valid(x) && ay.valid(y) && ax.t(x) >= -1e-9 && ax.t(x) <= 1 + 1e-9 && ay.t(y) >= -1e-9 && ay.t(y) <= 1 + 1e-9;
  };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"18\">" + escape_xml(c.title) + "</text>\n";
  const double xa = H - bottom;
  s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", xa) + "\" x2=\"" + fmt("%.1f", W - right) + "\" y2=\"" +
       fmt("%.1f", xa) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", top) + "\" x2=\"" + fmt("%.1f", left) + "\" y2=\"" +
       fmt("%.1f", xa) + "\" stroke=\"black\"/>\n";
  for (double v : ax.log ? log_ticks(ax.lo, ax.hi) : linear_ticks(ax.lo, ax.hi))
    s += "<text x=\"" + fmt("%.1f", X(v)) + "\" y=\"" + fmt("%.1f", xa + 16) + "\" text-anchor=\"middle\">" + fmt("%g", v) +
         "</text>\n";
  for (double v : ay.log ? log_ticks(ay.lo, ay.hi) : linear_ticks(ay.lo, ay.hi))
    s += "<text x=\"" + fmt("%.1f", left - 6) + "\" y=\"" + fmt("%.1f", Y(v) + 4) + "\" text-anchor=\"end\">" +
         fmt("%.4g", v) + "</text>\n";
  s += "<text x=\"" + fmt("%.1f", (left + W - right) / 2) + "\" y=\"" + fmt("%.1f", H - 12) + "\" text-anchor=\"middle\">" +
       escape_xml(c.x_label) + "</text>\n";
  s += "<text transform=\"translate(16," + fmt("%.1f", (top + xa) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       escape_xml(c.y_label) + "</text>\n";
  size_t vertical_rules = 0;
  for (const ChartRule& r : c.rules) {
    if (r.vertical ? !in_plot(r.value, ay.lo) : !in_plot(ax.lo, r.value)) continue;
    const double x1 = r.vertical ? X(r.value) : left, x2 = r.vertical ? X(r.value) : W - right;
    const double y1 = r.vertical ? top : Y(r.value), y2 = r.vertical ? xa : Y(r.value);
    s += "<line x1=\"" + fmt("%.1f", x1) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" + fmt("%.1f", x2) + "\" y2=\"" +
         fmt("%.1f", y2) + "\" stroke=\"gray\" stroke-dasharray=\"6,4\"/>\n";
    // Labels of vertical rules step down, so rules close together stay readable.
    const double label_y = r.vertical ? top + 12 + 14 * static_cast<double>(vertical_rules++ % 3) : y1 - 4;
    s += "<text x=\"" + fmt("%.1f", r.vertical ? x1 + 3 : x2 - 3) + "\" y=\"" + fmt("%.1f", label_y) +
         "\" fill=\"gray\"" + (r.vertical ? "" : " text-anchor=\"end\"") + ">" + escape_xml(r.label) + "</text>\n";
  }
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  size_t k = 0;
  double legend_y = top + 10;
  for (const ChartSeries& series : c.series) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& p : series.points)
      if (in_plot(p.first, p.second)) pts.push_back(p);
    std::sort(pts.begin(), pts.end());
    const std::string color = series.color.empty() ? kColors[k++ % std::size(kColors)] : series.color;
    const std::string dash = series.dashed ? " stroke-dasharray=\"5,3\"" : "";
    std::string poly;
    for (const auto& [x, y] : pts) poly += fmt("%.1f", X(x)) + "," + fmt("%.1f", Y(y)) + " ";
    if (pts.size() > 1)
      s += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" + dash + " points=\"" + poly + "\"/>\n";
    if (series.markers || pts.size() == 1)
      for (const auto& [x, y] : pts)
        s += "<circle cx=\"" + fmt("%.1f", X(x)) + "\" cy=\"" + fmt("%.1f", Y(y)) + "\" r=\"3.5\" fill=\"" + color +
             "\"><title>" + escape_xml(series.name) + ": " + fmt("%.6g", x) + ", " + fmt("%.6g", y) + "</title></circle>\n";
    s += "<line x1=\"" + fmt("%.1f", W - right + 15) + "\" y1=\"" + fmt("%.1f", legend_y) + "\" x2=\"" +
         fmt("%.1f", W - right + 40) + "\" y2=\"" + fmt("%.1f", legend_y) + "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
         dash + "/>\n";
    s += "<text x=\"" + fmt("%.1f", W - right + 46) + "\" y=\"" + fmt("%.1f", legend_y + 4) + "\">" +
         escape_xml(series.name) + "</text>\n";
    legend_y += 18;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace submoe::eval
