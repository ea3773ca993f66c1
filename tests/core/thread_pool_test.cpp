#include "submoe/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
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

TEST(ThreadPool, DynamicParallelForCoversEveryIndexOnceInGrainBlocks) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 7u, 64u, 1000u, 1001u}) {
      for (size_t grain : {1u, 4u, 48u, 5000u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for_dynamic(n, grain, [&](size_t b, size_t e, int t) {
          EXPECT_LT(t, threads);
          EXPECT_LT(b, e);
          if (threads == 1 || n <= grain) {
            if (b != 0 || e != n) ADD_FAILURE() << "one thread or one block: expected [0, n), got [" << b << ", " << e << ")";
          } else {
            if (b % grain != 0) ADD_FAILURE() << "block start " << b << " not a multiple of grain " << grain;
            if (e - b > grain) ADD_FAILURE() << "block [" << b << ", " << e << ") longer than grain " << grain;
            if (e != n && e - b != grain) ADD_FAILURE() << "short block [" << b << ", " << e << ") before the end";
          }
          for (size_t i = b; i < e; ++i) hits[i]++;
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, DynamicParallelForLetsAFastThreadTakeMoreBlocks) {
  // Thread 0 sleeps on each of its blocks: the other threads must take the bulk
  // of the blocks instead of waiting for a fixed share.
  ThreadPool pool(3);
  std::vector<std::atomic<int>> blocks_by_thread(3);
  pool.parallel_for_dynamic(60, 1, [&](size_t, size_t, int t) {
    blocks_by_thread[static_cast<size_t>(t)]++;
    if (t == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_EQ(blocks_by_thread[0] + blocks_by_thread[1] + blocks_by_thread[2], 60);
  EXPECT_LT(blocks_by_thread[0].load(), 20) << "a static split would give thread 0 a third";
}

TEST(ThreadPool, RunOnAllUsesEveryThreadIndex) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  for (int rep = 0; rep < 100; ++rep) pool.run_on_all([&](int t) { seen[static_cast<size_t>(t)]++; });
  for (auto& s : seen) EXPECT_EQ(s.load(), 100);
}

}  // namespace
}  // namespace submoe
