// The comparison report (eval/compare_report.h): the markdown table has one
// line per row with the loss relative to the source, a failed row says why;
// the JSON carries every measured field (and only the error for a failed
// row); the SVG is one standalone document with a line and a point per
// measured rate of each representation, the source dashed, names escaped.
#include <gtest/gtest.h>

#include <string>

#include "submoe/eval/compare_report.h"

namespace submoe::eval {
namespace {

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

CompareTable sample() {
  CompareTable t;
  t.model = "models/<tiny>&co";
  t.text = "heldout.txt";
  t.expert_rows = 256;
  t.expert_cols = 512;
  CompareRow src{"source", 0, 16, 5.3368, 46 << 20, 65, 0, 0, 14.6, 27.7, 410, ""};
  CompareRow e2{"e8p", 2, 2.0645, 5.3421, 15 << 20, 45, 13.2, 150, 16.4, 43.2, 426, ""};
  CompareRow e3{"e8p", 3, 3.0645, 5.3378, 16 << 20, 46, 20.1, 150, 20.0, 50.0, 420, ""};
  CompareRow i2{"int", 2, 2.1875, 5.3395, 15 << 20, 40, 1.8, 134, 8.2, 26.2, 435, ""};
  CompareRow bad{"ternary_dict", 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, "--bits does not apply <here>"};
  t.rows = {src, e2, e3, i2, bad};
  return t;
}

TEST(CompareReport, MarkdownHasALinePerRowAndTheDeltaToTheSource) {
  const std::string md = compare_markdown(sample());
  EXPECT_EQ(count(md, "\n"), 2u + 5u);
  EXPECT_NE(md.find("| e8p | 2 | 2.0645 | 5.3421 | +0.0053 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| source | - | 16.0000 | 5.3368 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ternary_dict | 2 | failed: --bits does not apply <here> |"), std::string::npos) << md;
}

TEST(CompareReport, JsonCarriesEveryField) {
  const nlohmann::json j = compare_json(sample());
  ASSERT_EQ(j["rows"].size(), 5u);
  EXPECT_EQ(j["expert_shape"], nlohmann::json::array({256, 512}));
  EXPECT_DOUBLE_EQ(j["rows"][1]["effective_bits"].get<double>(), 2.0645);
  EXPECT_DOUBLE_EQ(j["rows"][3]["gemv_batch8_us"].get<double>(), 26.2);
  EXPECT_EQ(j["rows"][4]["error"], "--bits does not apply <here>");
  EXPECT_FALSE(j["rows"][4].contains("nll"));
}

TEST(CompareReport, SvgHasALinePerRepresentationAndEscapesNames) {
  const std::string svg = compare_svg(sample());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 1u);  // e8p (int has one point, drawn as a point; the failed row is left out)
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 1u);  // the source
  EXPECT_EQ(svg.find("<tiny>"), std::string::npos);
  EXPECT_NE(svg.find("models/&lt;tiny&gt;&amp;co"), std::string::npos);
  // No NaN or infinity leaked into coordinates, even with one point per line.
  CompareTable one = sample();
  one.rows.resize(2);
  const std::string s1 = compare_svg(one);
  EXPECT_EQ(s1.find("nan"), std::string::npos);
  EXPECT_EQ(s1.find("inf"), std::string::npos);
  EXPECT_EQ(count(s1, "<circle"), 1u);
}

}  // namespace
}  // namespace submoe::eval
