// A fixed-size thread pool with a blocking parallel_for. Pools are created by the
// caller (CLI, runtime) and injected into kernels and pipelines; nothing here is
// global. A pool of size 1 runs everything on the calling thread.
//
// Hand-offs spin briefly before blocking: decode issues thousands of small
// parallel ops per token, and a futex wake-up on a shared VM costs tens of
// microseconds, more than the op itself (docs/perf-notes.md, thread pool).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace submoe {

class ThreadPool {
 public:
  // num_threads >= 1 counts the calling thread: ThreadPool(2) starts one worker.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Splits [0, n) into at most num_threads() contiguous chunks whose sizes are
  // multiples of `grain` (except the last) and runs fn(begin, end, thread_index)
  // on each, the caller taking chunk 0. Returns when all chunks are done.
  // Safe to call from several threads at once (their jobs run one after the
  // other). Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t, int)>& fn);

  // Splits [0, n) into blocks of `grain` (the last may be shorter) that the
  // threads take in order from a shared counter, running fn(begin, end,
  // thread_index) per block: a thread slowed down (a busy SMT sibling, another
  // tenant) takes fewer blocks instead of holding up the others. For work whose
  // blocks are independent; which thread runs a block is not deterministic.
  // With one thread, or when [0, n) is a single block, fn runs once on [0, n).
  void parallel_for_dynamic(size_t n, size_t grain, const std::function<void(size_t, size_t, int)>& fn);

  // Runs fn(thread_index) once on each of the num_threads() threads.
  void run_on_all(const std::function<void(int)>& fn);

  // Hand-offs to the workers (run_on_all calls that reached them) and, when
  // wait accounting is on, the time the caller spent waiting for them after
  // finishing its own share (a profile's "thread-pool waits").
  struct Stats {
    uint64_t round_trips = 0;
    uint64_t wait_ns = 0;
  };
  Stats stats() const { return {round_trips_.load(std::memory_order_relaxed), wait_ns_.load(std::memory_order_relaxed)}; }
  void set_wait_accounting(bool on) { account_waits_.store(on, std::memory_order_relaxed); }

 private:
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex caller_mutex_;  // held by the caller whose job is in flight
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  // Written under mutex_, read without it by spinning threads.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> account_waits_{false};
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<uint64_t> wait_ns_{0};
};

// Number of hardware threads (>= 1).
int hardware_threads();

}  // namespace submoe
