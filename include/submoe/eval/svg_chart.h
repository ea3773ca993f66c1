// Plain SVG line charts written by the project itself (no plotting dependency
// at run time): the figures of `compare` and `frontier`. A chart is a set of
// named series of (x, y) points drawn as polylines with point markers, plus
// reference lines (a budget, a threshold) across the plot; axes get round
// ticks, linear or base-10 logarithmic. Every point carries a <title>, so a
// browser shows its exact values on hover.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace submoe::eval {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // drawn in x order; non-finite points are left out
  bool dashed = false;
  bool markers = true;
  std::string color;  // empty: the next colour of the palette
};

// A horizontal (y = value) or vertical (x = value) line across the plot with a label.
struct ChartRule {
  double value = 0;
  std::string label;
  bool vertical = false;
};

struct Chart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  // values <= 0 are left out of a log axis
  std::optional<std::pair<double, double>> x_range, y_range;  // fixed axis ranges (else the data's, padded)
  std::vector<ChartSeries> series;
  std::vector<ChartRule> rules;
};

// A complete standalone SVG document (720 x 440).
std::string render_svg(const Chart& chart);

// "&", "<", ">" and '"' as XML entities.
std::string escape_xml(const std::string& s);

}  // namespace submoe::eval
