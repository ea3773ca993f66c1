#include "submoe/core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SUBMOE_CPU_RELAX() _mm_pause()
#else
#define SUBMOE_CPU_RELAX() ((void)0)
#endif

namespace submoe {
namespace {

// How long a thread polls for the next hand-off before it sleeps on the
// condition variable: long enough to bridge the serial gaps between the
// parallel ops of one decode step, short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(50);

// Polls `done()` for up to kSpin; true when it became true.
template <typename Pred>
bool spin_until(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    SUBMOE_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

}  // namespace

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  workers_.reserve(static_cast<size_t>(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; });
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      if (stop_.load()) return;
      seen = generation_.load();
      job = job_;
    }
    (*job)(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the mutex, so the caller cannot miss it between its check and its wait.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  // Callers on different threads take turns: one job in flight at a time.
  std::lock_guard<std::mutex> turn(caller_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    pending_.store(num_threads_ - 1, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  fn(0);
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  const bool account = account_waits_.load(std::memory_order_relaxed);
  const auto t0 = account ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load() == 0; });
  }
  if (account)
    wait_ns_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - t0)
                                                 .count()),
                       std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  job_ = nullptr;
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t, int)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  const size_t blocks = (n + grain - 1) / grain;
  const size_t chunks = std::min<size_t>(blocks, static_cast<size_t>(num_threads_));
  if (chunks <= 1) {
    fn(0, n, 0);
    return;
  }
  const size_t blocks_per_chunk = blocks / chunks;
  const size_t extra = blocks % chunks;
  run_on_all([&](int t) {
    const size_t ti = static_cast<size_t>(t);
    if (ti >= chunks) return;
    const size_t first_block = ti * blocks_per_chunk + std::min(ti, extra);
    const size_t num_blocks = blocks_per_chunk + (ti < extra ? 1 : 0);
    const size_t begin = first_block * grain;
    const size_t end = std::min(n, (first_block + num_blocks) * grain);
    if (begin < end) fn(begin, end, t);
  });
}

void ThreadPool::parallel_for_dynamic(size_t n, size_t grain,
                                      const std::function<void(size_t, size_t, int)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  const size_t blocks = (n + grain - 1) / grain;
  if (blocks <= 1 || num_threads_ <= 1) {
    fn(0, n, 0);
    return;
  }
  std::atomic<size_t> next{0};
  run_on_all([&](int t) {
    for (size_t b = next.fetch_add(1, std::memory_order_relaxed); b < blocks;
         b = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(b * grain, std::min(n, (b + 1) * grain), t);
    }
  });
}

}  // namespace submoe
