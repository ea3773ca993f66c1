#include "submoe/core/thread_pool.h"

#include <algorithm>

namespace submoe {

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
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    pending_ = num_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
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

}  // namespace submoe
