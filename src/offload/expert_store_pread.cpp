// pread and O_DIRECT pread backends of the ExpertStore.
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <vector>

#include "offload/expert_store_internal.h"
#include "submoe/core/thread_pool.h"

namespace submoe::offload::detail {
namespace {

// Reads plan.length bytes at plan.file_offset until plan.needed are in: the
// aligned tail past it is padding that the end of the file may cut short, and an
// unaligned O_DIRECT resume there would be refused.
Status pread_plan(int fd, const std::string& path, const ReadPlan& plan, uint8_t* dst) {
  uint64_t got = 0;
  while (got < plan.needed) {
    const ssize_t n = ::pread(fd, dst + got, static_cast<size_t>(plan.length - got), static_cast<off_t>(plan.file_offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return read_errno_error(path, plan.file_offset + got, errno);
    }
    if (n == 0) {
      return short_read_error(path, plan.file_offset + plan.window_offset, got > plan.window_offset ? got - plan.window_offset : 0,
                              plan.needed - plan.window_offset);
    }
    got += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

class PreadExpertStore final : public ExpertStore {
 public:
  PreadExpertStore(std::string path, FileDescriptor fd, uint64_t file_size, IoBackend backend, size_t alignment,
                   int batch_threads)
      : ExpertStore(std::move(path), file_size, backend, alignment), fd_(std::move(fd)) {
    if (batch_threads > 1) pool_ = std::make_unique<ThreadPool>(batch_threads);
  }

 protected:
  Status read_checked(std::span<const ByteRange> ranges, std::span<IoBuffer> buffers) override {
    std::vector<ReadPlan> plans(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      plans[i] = plan_read(ranges[i], alignment());
      SUBMOE_RETURN_IF_ERROR(prepare_buffer(plans[i], ranges[i], path(), buffers[i]));
    }
    std::vector<Status> results(ranges.size());
    auto read_one = [&](size_t i) {
      if (ranges[i].length > 0) results[i] = pread_plan(fd_.get(), path(), plans[i], buffers[i].data());
    };
    // The pool serves one batch at a time (ThreadPool is not reentrant); a second
    // concurrent caller reads its batch itself rather than queueing behind it.
    std::unique_lock<std::mutex> pool_lock(pool_mutex_, std::defer_lock);
    if (pool_ && ranges.size() > 1 && pool_lock.try_lock()) {
      pool_->parallel_for(ranges.size(), 1, [&](size_t begin, size_t end, int) {
        for (size_t i = begin; i < end; ++i) read_one(i);
      });
    } else {
      for (size_t i = 0; i < ranges.size(); ++i) read_one(i);
    }
    for (Status& s : results) SUBMOE_RETURN_IF_ERROR(s);
    return Status::ok();
  }

 private:
  FileDescriptor fd_;
  std::unique_ptr<ThreadPool> pool_;
  std::mutex pool_mutex_;
};

}  // namespace

std::unique_ptr<ExpertStore> make_pread_store(std::string path, FileDescriptor fd, uint64_t file_size, IoBackend backend,
                                              size_t alignment, int batch_threads) {
  return std::make_unique<PreadExpertStore>(std::move(path), std::move(fd), file_size, backend, alignment, batch_threads);
}

}  // namespace submoe::offload::detail
