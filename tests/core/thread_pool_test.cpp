#include "submoe/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <thread>
#include <vector>

namespace submoe {
namespace {

// For 1, 2, 3 and 8 threads, n in {0, 1, 7, 64, 1000, 1001} and each grain:
// split(pool, threads, n, grain, cover) must call cover(b, e) on pieces that
// together hold every index of [0, n) exactly once.
template <typename Split>
void expect_every_index_once(std::initializer_list<size_t> grains, Split split) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 7u, 64u, 1000u, 1001u}) {
      for (size_t grain : grains) {
        std::vector<std::atomic<int>> hits(n);
        split(pool, threads, n, grain, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) hits[i]++;
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  expect_every_index_once({1u, 4u, 32u, 5000u}, [](ThreadPool& pool, int threads, size_t n, size_t grain, auto cover) {
    pool.parallel_for(n, grain, [&](size_t b, size_t e, int t) {
      EXPECT_LT(t, threads);
      EXPECT_LE(b, e);
      if (b % grain != 0) ADD_FAILURE() << "chunk start " << b << " not a multiple of grain " << grain;
      cover(b, e);
    });
  });
}

TEST(ThreadPool, DynamicParallelForCoversEveryIndexOnceInGrainBlocks) {
  expect_every_index_once({1u, 4u, 48u, 5000u}, [](ThreadPool& pool, int threads, size_t n, size_t grain, auto cover) {
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
      cover(b, e);
    });
  });
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

// Several threads share one pool (the server's request threads and its
// scheduler): their jobs take turns and each still covers its own range once.
TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeJob) {
  ThreadPool pool(3);
  constexpr int kCallers = 4, kJobs = 200;
  constexpr size_t kN = 997;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int j = 0; j < kJobs; ++j) {
        std::vector<std::atomic<int>> hits(kN);
        auto cover = [&](size_t b, size_t e, int) {
          for (size_t i = b; i < e; ++i) hits[i]++;
        };
        if ((j + c) % 2 == 0)
          pool.parallel_for(kN, 16, cover);
        else
          pool.parallel_for_dynamic(kN, 16, cover);
        for (size_t i = 0; i < kN; ++i)
          if (hits[i].load() != 1) failures++;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace submoe
