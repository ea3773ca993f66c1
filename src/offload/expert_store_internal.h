// Shared pieces of the ExpertStore backends (src/offload/expert_store_*.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "submoe/offload/expert_store.h"

namespace submoe::offload::detail {

// Closes the descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileDescriptor& operator=(FileDescriptor&& o) noexcept;
  int get() const { return fd_; }

 private:
  int fd_;
};

// What one range turns into on disk: the aligned superset [file_offset,
// file_offset + length) of which bytes [window_offset, window_offset + needed...)
// are requested. `needed` = window_offset + range length: bytes past it may be
// cut short by the end of the file without harm.
struct ReadPlan {
  uint64_t file_offset = 0;
  uint64_t length = 0;
  uint64_t window_offset = 0;
  uint64_t needed = 0;
};
ReadPlan plan_read(ByteRange range, size_t alignment);

// Reserves the buffer for `plan` (kIoError naming the file when memory runs out).
Status prepare_buffer(const ReadPlan& plan, ByteRange range, const std::string& path, IoBuffer& buffer);

// "reading 'path' at offset N: <strerror>"
Status read_errno_error(const std::string& path, uint64_t offset, int err);
// "unexpected end of file reading 'path' at offset N (got G of W bytes)"
Status short_read_error(const std::string& path, uint64_t offset, uint64_t got, uint64_t wanted);

std::unique_ptr<ExpertStore> make_pread_store(std::string path, FileDescriptor fd, uint64_t file_size,
                                              IoBackend backend, size_t alignment, int batch_threads);

#if defined(SUBMOE_HAVE_IO_URING)
// kUnsupported when the kernel (or a sandbox) refuses io_uring; `fd` is taken
// only on success.
Result<std::unique_ptr<ExpertStore>> make_uring_store(std::string path, FileDescriptor&& fd, uint64_t file_size,
                                                      IoBackend backend, size_t alignment, unsigned depth);
#endif

}  // namespace submoe::offload::detail
