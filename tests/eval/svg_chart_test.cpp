// SVG line charts (eval/svg_chart.h): one standalone document; a polyline per
// series of two or more plottable points and a marker per point; non-finite
// points, and points <= 0 on a log axis, are left out (never a "nan" or "inf"
// coordinate); reference lines are drawn when inside the plot; fixed ranges
// clip points outside them; text is escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "submoe/eval/svg_chart.h"

namespace submoe::eval {
namespace {

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgChart, SeriesRulesAndEscaping) {
  Chart c;
  c.title = "a <b> & \"c\"";
  c.series.push_back({"two", {{1, 2}, {2, 3}}, false, true, ""});
  c.series.push_back({"one", {{1.5, 2.5}}, true, true, ""});
  c.series.push_back({"no markers", {{1, 1}, {2, 1}, {3, 1}}, true, false, "#123456"});
  c.rules.push_back({2.2, "budget", false});
  c.rules.push_back({1.2, "threshold", true});
  const std::string s = render_svg(c);
  EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(s.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(count(s, "<polyline"), 2u);
  EXPECT_EQ(count(s, "<circle"), 3u);
  EXPECT_NE(s.find("stroke=\"#123456\""), std::string::npos);
  EXPECT_NE(s.find(">budget</text>"), std::string::npos);
  EXPECT_NE(s.find(">threshold</text>"), std::string::npos);
  EXPECT_NE(s.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(s.find("<b>"), std::string::npos);
}

TEST(SvgChart, NonFiniteAndNonPositiveOnLogAxesAreLeftOut) {
  Chart c;
  c.log_x = c.log_y = true;
  c.series.push_back({"s", {{0.1, 0.2}, {1, 1}, {0, 5}, {-1, 3}, {2, -1}, {NAN, 1}, {3, INFINITY}}, false, true, ""});
  const std::string s = render_svg(c);
  EXPECT_EQ(count(s, "<circle"), 2u);
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.find("inf"), std::string::npos);
  // Log ticks are powers of ten (with 2 and 5 under two decades).
  EXPECT_NE(s.find(">0.2</text>"), std::string::npos);
  EXPECT_NE(s.find(">1</text>"), std::string::npos);
}

TEST(SvgChart, FixedRangeClipsAndEmptyChartIsValid) {
  Chart c;
  c.y_range = std::make_pair(0.0, 1.0);
  c.series.push_back({"s", {{1, 0.5}, {2, 1.5}, {3, 0.7}}, false, true, ""});
  c.rules.push_back({2.0, "outside", false});
  const std::string s = render_svg(c);
  EXPECT_EQ(count(s, "<circle"), 2u);
  EXPECT_EQ(s.find(">outside</text>"), std::string::npos);
  const std::string empty = render_svg(Chart{});
  EXPECT_EQ(empty.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(empty, "<circle"), 0u);
  EXPECT_EQ(empty.find("nan"), std::string::npos);
}

}  // namespace
}  // namespace submoe::eval
