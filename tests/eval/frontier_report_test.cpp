// The frontier's data and reports (eval/frontier_report.h), on hand-made
// measurements whose ratios are known: the baseline is the replayed rate with
// the largest experts (bf16, not replayed, is not it); amplification, traffic
// ratio and rho against the baseline at the same budget; no ratio across
// replays of different token counts or with a failed baseline; JSON carries
// nulls for what was not measured; the markdown has a row per point and the
// LRU bound; the figures are standalone SVGs without NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "submoe/eval/frontier_report.h"

namespace submoe::eval {
namespace {

FrontierData sample() {
  FrontierData d;
  d.model = "m<1>";
  d.layers = 6, d.experts = 16, d.top_k = 2;
  d.lru_zero_bound = 10;
  d.lru_first_hit = 11;
  d.budgets_mib = {10, 2, 0.001};
  FrontierRate bf16{"bf16", 16, 5.0, 32, 3072, 0, false, ""};
  FrontierRate big{"int@4", 4.19, 5.01, 8, 768, 9.5, true, ""};
  FrontierRate small{"ternary_dict", 1.5, 5.2, 2, 192, 7.4, true, ""};
  FrontierRate broken{"rvq@1", 0, NAN, 0, 0, 0, false, "compress failed"};
  d.rates = {bf16, big, small, broken};
  FrontierPoint p1{"int@4", 10, 0.013, 100, 0.5, 400, 1, 1, 50, 0.45, 0.55, 60, 40, "storage", ""};
  FrontierPoint p2{"ternary_dict", 10, 0.052, 100, 0.9, 20, 0.1, 1, 90, 0.85, 0.92, 120, 100, "compute", ""};
  FrontierPoint p3{"int@4", 2, 0.0026, 100, 1.0, 0, 0, 1, 100, 1.0, 1, 100, 100, "compute", ""};  // r0 never misses
  FrontierPoint p4{"ternary_dict", 2, 0.0104, 50, 0.8, 10, 0, 1, 50, 0.8, 0.8, 50, 50, "compute", ""};
  FrontierPoint p5{"ternary_dict", 0.001, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "", "holds no expert"};
  d.points = {p1, p2, p3, p4, p5};
  d.curves = {{"lru", {{10, 0}, {11, 0.1}}}, {"belady", {{10, 0.4}, {11, 0.5}}}};
  return d;
}

TEST(FrontierReport, BaselineAndAmplification) {
  const FrontierData d = sample();
  ASSERT_EQ(frontier_baseline(d), 1);
  const Amplification a = frontier_amplification(d, *frontier_point(d, "ternary_dict", 10));
  EXPECT_DOUBLE_EQ(a.rho, 0.25);
  EXPECT_DOUBLE_EQ(a.miss_ratio, 0.1 / 0.5);
  EXPECT_DOUBLE_EQ(a.traffic_ratio, 20.0 / 400.0);
  const Amplification self = frontier_amplification(d, *frontier_point(d, "int@4", 10));
  EXPECT_DOUBLE_EQ(self.rho, 1);
  EXPECT_DOUBLE_EQ(self.miss_ratio, 1);
  // At 2 MiB the baseline never missed (no miss ratio, no traffic) and replayed
  // other tokens: no ratio is made across them.
  const Amplification none = frontier_amplification(d, *frontier_point(d, "ternary_dict", 2));
  EXPECT_TRUE(std::isnan(none.miss_ratio));
  EXPECT_TRUE(std::isnan(none.traffic_ratio));
  EXPECT_TRUE(std::isnan(frontier_amplification(d, *frontier_point(d, "ternary_dict", 0.001)).rho));
  EXPECT_EQ(frontier_point(d, "nosuch", 10), nullptr);
  FrontierData no_replay = d;
  for (auto& r : no_replay.rates) r.replayed = false;
  EXPECT_EQ(frontier_baseline(no_replay), -1);
}

TEST(FrontierReport, JsonMarksWhatWasNotMeasured) {
  const nlohmann::json j = frontier_json(sample());
  EXPECT_EQ(j["format"], "submoe-frontier");
  EXPECT_EQ(j["baseline"], "int@4");
  EXPECT_EQ(j["lru_zero_bound_slots"], 10);
  ASSERT_EQ(j["rates"].size(), 4u);
  EXPECT_TRUE(j["rates"][3]["nll"].is_null());
  EXPECT_EQ(j["rates"][3]["error"], "compress failed");
  ASSERT_EQ(j["points"].size(), 5u);
  EXPECT_DOUBLE_EQ(j["points"][1]["amplification"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["points"][1]["byte_hit_rate"].get<double>(), 0.85);
  EXPECT_DOUBLE_EQ(j["points"][1]["measured_over_predicted_serial"].get<double>(), 90.0 / 100.0);
  EXPECT_TRUE(j["points"][3]["amplification"].is_null());
  EXPECT_EQ(j["points"][4]["error"], "holds no expert");
  EXPECT_FALSE(j["points"][4].contains("hit_rate"));
  EXPECT_EQ(j["hit_rate_curves"][1]["points"][1][1], 0.5);
}

TEST(FrontierReport, MarkdownAndFigures) {
  const FrontierData d = sample();
  const std::string md = frontier_markdown(d);
  EXPECT_NE(md.find("| 10 MiB | ternary_dict | 0.052 | 90.0% (85.0%) | 0.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.001 MiB | ternary_dict | failed: holds no expert |"), std::string::npos) << md;
  EXPECT_NE(md.find("| rvq@1 | failed: compress failed |"), std::string::npos) << md;
  EXPECT_NE(md.find("LRU hits nothing up to 10 slots"), std::string::npos);
  EXPECT_NE(md.find("LRU first hits at 11 slots"), std::string::npos);
  EXPECT_NE(md.find("| 0.200 | 0.0500 |"), std::string::npos) << md;  // amplification, traffic ratio
  const auto svgs = frontier_svgs(d);
  ASSERT_EQ(svgs.size(), 6u);
  EXPECT_EQ(svgs.back().first, "loss.svg");
  for (const auto& [name, svg] : svgs) {
    EXPECT_EQ(svg.rfind("<svg", 0), 0u) << name;
    EXPECT_EQ(svg.find("nan"), std::string::npos) << name;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << name;
  }
  FrontierData no_loss = d;
  for (auto& r : no_loss.rates) r.nll = NAN;
  EXPECT_EQ(frontier_svgs(no_loss).size(), 5u);
}

}  // namespace
}  // namespace submoe::eval
