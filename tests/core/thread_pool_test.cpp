#include "submoe/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace submoe {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 7u, 64u, 1000u, 1001u}) {
      for (size_t grain : {1u, 4u, 32u, 5000u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, grain, [&](size_t b, size_t e, int t) {
          EXPECT_LT(t, threads);
          EXPECT_LE(b, e);
          if (b % grain != 0) ADD_FAILURE() << "chunk start " << b << " not a multiple of grain " << grain;
          for (size_t i = b; i < e; ++i) hits[i]++;
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, RunOnAllUsesEveryThreadIndex) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  for (int rep = 0; rep < 100; ++rep) pool.run_on_all([&](int t) { seen[static_cast<size_t>(t)]++; });
  for (auto& s : seen) EXPECT_EQ(s.load(), 100);
}

}  // namespace
}  // namespace submoe
