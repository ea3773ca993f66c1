// bench gemv --repr NAME's working set (runtime/repr_bench.h): made through
// the registry for every representation, its copies are distinct ops that all
// compute the same finite outputs (the ops' own correctness is tested with each
// representation), its ledger is the packed fields, and bad names, options and
// shapes are refused by name.
#include "submoe/runtime/repr_bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace submoe::runtime {
namespace {

ReprBenchOptions small(const std::string& name) {
  ReprBenchOptions o;
  o.repr.name = name;
  o.rows = 40;
  o.cols = 64;
  o.min_matrices = 3;
  o.llc_factor = 0;
  return o;
}

// Every copy computes the same y, finite and not all zero.
void expect_copies_agree(const kernels::ExternalBenchSet& set, uint32_t rows, uint32_t cols, uint32_t batch) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t{batch} * cols);
  for (float& v : x) v = nd(rng);
  std::vector<float> first;
  for (uint32_t i = 0; i < set.matrices; ++i) {
    std::vector<float> y(size_t{batch} * rows, std::nanf(""));
    ASSERT_TRUE(set.run(i, x.data(), batch, y.data(), nullptr).is_ok());
    double norm = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v));
      norm += double(v) * v;
    }
    EXPECT_GT(norm, 0.0);
    if (i == 0) first = y;
    else EXPECT_EQ(y, first) << "copy " << i;
  }
}

TEST(ReprBench, EveryRegisteredRepresentationRunsThroughItsOp) {
  {
    ReprBenchOptions o = small("rvq");
    o.repr.bits = 2.0;
    o.repr.extra = {{"train_vectors", "4096"}, {"iters", "3"}};
    auto set = make_repr_bench_set(o);
    ASSERT_TRUE(set.is_ok()) << set.status().to_string();
    EXPECT_EQ((*set)->matrices, 3u);
    EXPECT_NE((*set)->kernel.find("rvq 4 stages [40, 64]"), std::string::npos) << (*set)->kernel;
    // codes 40 x 4 groups x 4 stages + f16 scales + the two 8-byte rotation seeds
    EXPECT_EQ((*set)->bytes_per_matrix, 40u * 4 * 4 + 40 * 2 + 16);
    EXPECT_DOUBLE_EQ((*set)->bits_per_weight, 8.0 * (*set)->bytes_per_matrix / (40.0 * 64));
    expect_copies_agree(**set, 40, 64, 1);
    expect_copies_agree(**set, 40, 64, 5);
  }
  {
    ReprBenchOptions o = small("int");
    o.repr.bits = 4.0;
    o.repr.group_size = 32;
    auto set = make_repr_bench_set(o);
    ASSERT_TRUE(set.is_ok()) << set.status().to_string();
    EXPECT_NE((*set)->kernel.find("int4"), std::string::npos) << (*set)->kernel;
    expect_copies_agree(**set, 40, 64, 2);
  }
  {
    auto set = make_repr_bench_set(small("ternary"));
    ASSERT_TRUE(set.is_ok()) << set.status().to_string();
    expect_copies_agree(**set, 40, 64, 1);
  }
}

TEST(ReprBench, BadNamesOptionsAndShapesAreRefusedByName) {
  auto unknown = make_repr_bench_set(small("hqq"));
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("hqq"), std::string::npos) << unknown.status().to_string();
  ReprBenchOptions o = small("int");
  o.repr.bits = 4.0;
  o.repr.extra = {{"beam", "3"}};
  auto refused = make_repr_bench_set(o);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("beam"), std::string::npos) << refused.status().to_string();
  ReprBenchOptions r = small("rvq");
  r.repr.bits = 2.0;
  r.cols = 40;  // not a multiple of 16
  r.repr.extra = {{"train_vectors", "4096"}, {"iters", "3"}};
  EXPECT_FALSE(make_repr_bench_set(r).is_ok());
  ReprBenchOptions z = small("int");
  z.rows = 0;
  EXPECT_FALSE(make_repr_bench_set(z).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
