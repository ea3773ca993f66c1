// The benchmark harness behind `submoe bench gemv`: its working sets are what
// they claim (distinct matrices that are row permutations of one valid matrix),
// and a small run times every kernel it lists.
#include "submoe/kernels/gemv_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "submoe/codec/int_packed.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"

namespace submoe::kernels {
namespace {

TEST(GemvBench, IntWorkingSetCopiesAreValidRowPermutationsOfTheBase) {
  for (uint32_t bits : {2u, 3u, 4u}) {
    Result<IntWorkingSet> s = make_int_working_set(bits, 32, 37, 100, 4, 5);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    ASSERT_EQ(s->copies.size(), 4u);
    Result<std::vector<float>> base = intn::decode_int_to_float(s->base.view());
    ASSERT_TRUE(base.is_ok());
    std::map<std::vector<float>, int> base_rows;
    for (uint32_t r = 0; r < 37; ++r) base_rows[std::vector<float>(base->begin() + r * 100, base->begin() + (r + 1) * 100)]++;
    bool some_copy_reordered = false;
    for (size_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(intn::validate_packed_int(s->view(i)).is_ok()) << "copy " << i;
      Result<std::vector<float>> w = intn::decode_int_to_float(s->view(i));
      ASSERT_TRUE(w.is_ok());
      std::map<std::vector<float>, int> rows;
      for (uint32_t r = 0; r < 37; ++r) rows[std::vector<float>(w->begin() + r * 100, w->begin() + (r + 1) * 100)]++;
      EXPECT_EQ(rows, base_rows) << "copy " << i << " is not a row permutation of the base";
      if (*w != *base) some_copy_reordered = true;
      EXPECT_NE(s->view(i).qweight, s->base.view().qweight);
    }
    EXPECT_TRUE(some_copy_reordered);
  }
  EXPECT_FALSE(make_int_working_set(5, 32, 4, 4, 1, 1).is_ok());
}

TEST(GemvBench, SmallRunTimesEveryKernel) {
  ThreadPool pool(2);
  for (uint32_t batch : {1u, 3u}) {
    GemvBenchConfig c;
    c.rows = 50;
    c.cols = 300;
    c.batch = batch;
    c.iters = 3;
    c.min_matrices = 3;
    c.llc_factor = 0;
    c.isa = best_isa();
    c.int_bits = {2, 4};
    c.int_group = 64;
    Result<GemvBenchResult> r = run_gemv_bench(c, &pool);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<const GemvTiming*> all = {&r->dense_f32, &r->dense_bf16, &r->compressed, &r->compressed_bf16act,
                                             &r->compressed_i8act};
    if (batch > 1) all.push_back(&r->compressed_batch1);
    ASSERT_EQ(r->ints.size(), 2u);
    for (const GemvBenchResult::IntTiming& it : r->ints) {
      all.push_back(&it.timing);
      EXPECT_GT(it.bits_per_weight, it.bits);
    }
    for (const GemvTiming* t : all) {
      EXPECT_FALSE(t->kernel.empty());
      EXPECT_EQ(t->samples, 3u) << t->kernel;
      EXPECT_GT(t->median_us, 0.0) << t->kernel;
      EXPECT_LE(t->min_us, t->median_us) << t->kernel;
      EXPECT_GE(t->matrices, 3u) << t->kernel;
    }
    EXPECT_GT(r->ledger.bits_per_weight, 0.0);
  }
}

TEST(GemvBench, RvqWorkingSetCopiesAreDistinctAndShareTheCodebooks) {
  Result<RvqWorkingSet> s = make_rvq_working_set(9, 48, 3, 3, 2);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->copies.size(), 3u);
  EXPECT_EQ(s->bytes_per_matrix(), 9u * 3 * 3 + 9 * 2);
  for (size_t i = 0; i < 3; ++i) {
    const rvq::RvqView v = s->view(i);
    EXPECT_EQ(v.codebooks, s->codebooks.data());
    EXPECT_EQ(v.stages, 3u);
    for (uint32_t r = 0; r < 9; ++r) EXPECT_GT(f16_bits_to_float(v.scales[r]), 0.0f);
  }
  EXPECT_FALSE(std::equal(s->view(0).codes, s->view(0).codes + 81, s->view(1).codes));
  EXPECT_FALSE(make_rvq_working_set(4, 40, 2, 1, 1).is_ok());  // cols not a multiple of 16
  EXPECT_FALSE(make_rvq_working_set(4, 32, 9, 1, 1).is_ok());
}

TEST(GemvBench, ExternalSetIsTimedInPlaceOfTheTernaryKernels) {
  ThreadPool pool(2);
  for (uint32_t batch : {1u, 3u}) {
    GemvBenchConfig c;
    c.rows = 50;
    c.cols = 320;
    c.batch = batch;
    c.iters = 3;
    c.min_matrices = 3;
    c.llc_factor = 0;
    c.isa = best_isa();
    c.repr = BenchRepr::kExternal;
    auto set = std::make_shared<ExternalBenchSet>();
    set->kernel = "test op";
    set->bytes_per_matrix = 1234;
    set->matrices = 4;
    std::vector<uint32_t> calls(4, 0);
    std::vector<uint32_t> batches;
    set->run = [&](uint32_t i, const float* x, uint32_t b, float* y, ThreadPool*) {
      EXPECT_LT(i, 4u);
      EXPECT_NE(x, nullptr);
      y[size_t{b} * c.rows - 1] = 1.0f;  // the output holds batch x rows floats
      ++calls[i];
      batches.push_back(b);
      return Status::ok();
    };
    c.external = set;
    Result<GemvBenchResult> r = run_gemv_bench(c, &pool);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(r->ints.empty());
    std::vector<const GemvTiming*> all = {&r->dense_f32, &r->dense_bf16, &r->compressed};
    if (batch > 1) all.push_back(&r->compressed_batch1);
    for (const GemvTiming* t : all) {
      EXPECT_FALSE(t->kernel.empty());
      EXPECT_EQ(t->samples, 3u) << t->kernel;
      EXPECT_GT(t->median_us, 0.0) << t->kernel;
    }
    EXPECT_EQ(r->compressed.kernel, "test op");
    EXPECT_EQ(r->compressed.bytes_per_matrix, 1234u);
    EXPECT_EQ(r->compressed.matrices, 4u);
    EXPECT_EQ(r->compressed_bf16act.samples, 0u);
    EXPECT_EQ(r->compressed_i8act.samples, 0u);
    // 3 warm-up + 3 timed rounds, one call each (two with the batch-1 reference),
    // cycling through every copy.
    const uint32_t per_round = batch > 1 ? 2 : 1;
    EXPECT_EQ(batches.size(), 6u * per_round);
    for (uint32_t n : calls) EXPECT_GE(n, 1u);
    EXPECT_EQ(std::count(batches.begin(), batches.end(), batch), 6);
  }
  GemvBenchConfig bad;
  bad.repr = BenchRepr::kExternal;
  bad.llc_factor = 0;
  EXPECT_FALSE(run_gemv_bench(bad, &pool).is_ok());  // no set
  auto empty = std::make_shared<ExternalBenchSet>();
  bad.external = empty;
  EXPECT_FALSE(run_gemv_bench(bad, &pool).is_ok());  // no run function, no matrices
}

}  // namespace
}  // namespace submoe::kernels
