// io_uring backends of the ExpertStore: a batch is submitted at once, so the
// device sees every expert of a layer in flight together.
#if defined(SUBMOE_HAVE_IO_URING)

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "offload/expert_store_internal.h"

namespace submoe::offload::detail {
namespace {

class Ring {
 public:
  Ring() = default;
  ~Ring() {
    if (initialized_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // 0 or -errno.
  int init(unsigned depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    initialized_ = rc == 0;
    return rc;
  }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool initialized_ = false;
};

// Rings are not thread-safe, so concurrent batches (the foreground and the
// prefetcher) each take a ring of their own from this pool instead of waiting
// for one shared ring.
constexpr size_t kMaxRings = 8;

class UringExpertStore final : public ExpertStore {
 public:
  UringExpertStore(std::string path, FileDescriptor fd, uint64_t file_size, IoBackend backend, size_t alignment,
                   unsigned depth, std::unique_ptr<Ring> first)
      : ExpertStore(std::move(path), file_size, backend, alignment), fd_(std::move(fd)), depth_(depth) {
    free_.push_back(std::move(first));
    created_ = 1;
  }

 protected:
  Status read_checked(std::span<const ByteRange> ranges, std::span<IoBuffer> buffers) override {
    std::vector<ReadPlan> plans(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      plans[i] = plan_read(ranges[i], alignment());
      SUBMOE_RETURN_IF_ERROR(prepare_buffer(plans[i], ranges[i], path(), buffers[i]));
    }
    Result<std::unique_ptr<Ring>> ring = take_ring();
    SUBMOE_RETURN_IF_ERROR(ring.status());
    bool broken = false;
    Status s = run_batch(ring->get()->get(), plans, buffers, &broken);
    give_ring(std::move(ring).value(), broken);
    return s;
  }

 private:
  Result<std::unique_ptr<Ring>> take_ring() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!free_.empty()) {
        std::unique_ptr<Ring> r = std::move(free_.back());
        free_.pop_back();
        return r;
      }
      if (created_ < kMaxRings) {
        ++created_;
        lock.unlock();
        auto r = std::make_unique<Ring>();
        const int rc = r->init(depth_);
        if (rc == 0) return r;
        lock.lock();
        --created_;
        returned_.notify_one();
        return io_error("io_uring setup for '" + path() + "' failed: " + std::strerror(-rc));
      }
      returned_.wait(lock);
    }
  }

  // A ring whose submission queue may still hold entries of a failed batch is
  // destroyed rather than reused.
  void give_ring(std::unique_ptr<Ring> r, bool broken) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken) {
      r.reset();
      --created_;
    } else {
      free_.push_back(std::move(r));
    }
    returned_.notify_one();
  }

  // Keeps up to the ring's depth of reads in flight; a completion that is short
  // (but not at the end of the file) is resubmitted for its remainder. Every
  // submitted read is completed before returning, even after an error, so the
  // kernel never writes into a buffer the caller has been given back.
  Status run_batch(io_uring* ring, const std::vector<ReadPlan>& plans, std::span<IoBuffer> buffers, bool* broken) {
    std::vector<uint64_t> got(plans.size(), 0);
    std::vector<size_t> pending;
    for (size_t i = plans.size(); i-- > 0;)
      if (plans[i].length > 0) pending.push_back(i);  // pop_back takes them in order
    size_t in_flight = 0, unsubmitted = 0;
    Status first_error;
    auto fail = [&](Status s) {
      if (first_error.is_ok()) first_error = std::move(s);
    };
    while ((first_error.is_ok() && (!pending.empty() || unsubmitted > 0)) || in_flight > 0) {
      while (first_error.is_ok() && !pending.empty() && in_flight + unsubmitted < depth_) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        if (sqe == nullptr) break;
        const size_t i = pending.back();
        pending.pop_back();
        // One submission moves at most 1 GiB (the length field is 32 bits); the
        // rest goes out as a continuation like a short read.
        const auto len = static_cast<unsigned>(std::min<uint64_t>(plans[i].length - got[i], uint64_t{1} << 30));
        io_uring_prep_read(sqe, fd_.get(), buffers[i].data() + got[i], len, plans[i].file_offset + got[i]);
        io_uring_sqe_set_data64(sqe, i);
        ++unsubmitted;
      }
      if (first_error.is_ok() && unsubmitted > 0) {
        const int rc = io_uring_submit(ring);
        if (rc > 0) {
          in_flight += static_cast<size_t>(rc);
          unsubmitted -= std::min(unsubmitted, static_cast<size_t>(rc));
        } else if (rc != -EINTR && (rc < 0 || in_flight == 0)) {
          fail(io_error("io_uring submit for '" + path() + "' failed: " + std::strerror(rc < 0 ? -rc : EAGAIN)));
          *broken = true;
        }
      }
      if (in_flight == 0) continue;
      io_uring_cqe* cqe = nullptr;
      const int wrc = io_uring_wait_cqe(ring, &cqe);
      if (wrc == -EINTR) continue;
      if (wrc < 0) {
        // Completions can no longer be collected: the ring must not be reused.
        *broken = true;
        fail(io_error("io_uring wait for '" + path() + "' failed: " + std::strerror(-wrc)));
        return first_error;
      }
      const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      --in_flight;
      const ReadPlan& p = plans[i];
      if (res == -EINTR || res == -EAGAIN) {
        pending.push_back(i);
      } else if (res < 0) {
        fail(read_errno_error(path(), p.file_offset + got[i], -res));
      } else if (res == 0) {
        if (got[i] < p.needed)
          fail(short_read_error(path(), p.file_offset + p.window_offset,
                                got[i] > p.window_offset ? got[i] - p.window_offset : 0, p.needed - p.window_offset));
      } else {
        got[i] += static_cast<uint64_t>(res);
        // Stop once the requested bytes are in: the rest of the aligned tail is
        // padding, and an unaligned O_DIRECT resume past the end would be refused.
        if (got[i] < p.needed) pending.push_back(i);
      }
    }
    if (unsubmitted > 0) *broken = true;
    return first_error;
  }

  FileDescriptor fd_;
  unsigned depth_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Ring>> free_;
  size_t created_ = 0;
};

}  // namespace

Result<std::unique_ptr<ExpertStore>> make_uring_store(std::string path, FileDescriptor&& fd, uint64_t file_size,
                                                      IoBackend backend, size_t alignment, unsigned depth) {
  auto ring = std::make_unique<Ring>();
  const int rc = ring->init(depth);
  if (rc != 0) return unsupported(std::string("io_uring refused: ") + std::strerror(-rc));
  return std::unique_ptr<ExpertStore>(std::make_unique<UringExpertStore>(std::move(path), std::move(fd), file_size,
                                                                         backend, alignment, depth, std::move(ring)));
}

}  // namespace submoe::offload::detail

#endif  // SUBMOE_HAVE_IO_URING
