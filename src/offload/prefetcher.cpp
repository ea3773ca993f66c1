#include "submoe/offload/prefetcher.h"

namespace submoe::offload {

Prefetcher::Prefetcher(ExpertCache* cache) : cache_(cache), thread_([this] { run(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    stats_.cancelled += queue_.size();
    queue_.clear();
  }
  wake_.notify_all();
  thread_.join();
}

void Prefetcher::submit(std::vector<ExpertKey> keys) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.cancelled += queue_.size();
    stats_.requested += keys.size();
    queue_.assign(keys.begin(), keys.end());
    protected_ = std::move(keys);
  }
  wake_.notify_one();
}

void Prefetcher::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

PrefetcherStats Prefetcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Prefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    const ExpertKey key = queue_.front();
    queue_.pop_front();
    const std::vector<ExpertKey> keep = protected_;
    busy_ = true;
    lock.unlock();
    const PrefetchOutcome outcome = cache_->prefetch(key, keep);
    lock.lock();
    busy_ = false;
    switch (outcome) {
      case PrefetchOutcome::kLoaded: ++stats_.loaded; break;
      case PrefetchOutcome::kPresent: ++stats_.present; break;
      case PrefetchOutcome::kNoRoom: ++stats_.no_room; break;
      case PrefetchOutcome::kDropped: ++stats_.dropped; break;
      case PrefetchOutcome::kFailed: ++stats_.failed; break;
    }
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

}  // namespace submoe::offload
