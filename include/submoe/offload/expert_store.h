// ExpertStore: reads byte ranges of one file (the artifact's model.safetensors,
// where each routed expert is one contiguous range, docs/format.md section 9).
//
// Backends:
//   pread         buffered positional reads (default); a batch is spread over a
//                 small internal thread pool, or read in order when that pool is
//                 busy with another caller's batch (callers never queue on it).
//   direct        pread on an O_DIRECT descriptor: the page cache is bypassed, so
//                 DRAM holds each expert once (in the expert cache). Reads cover
//                 the block-aligned superset of a range into a page-aligned
//                 IoBuffer whose window is the requested bytes.
//   uring         io_uring (when built with liburing): a batch is submitted at
//                 once and completions are collected, with short reads resumed.
//   uring-direct  io_uring on an O_DIRECT descriptor.
// Filesystems that refuse O_DIRECT (older tmpfs, some overlays) and kernels or
// sandboxes that refuse io_uring make open() fall back to the buffered backend of
// the same family with notice() saying why, or fail with kUnsupported when
// fallback is off.
//
// All reads are thread-safe. A range that ends past the end of the file is
// kCorruptData; a read that comes back short (the file shrank) is kIoError; both
// name the file and the offset.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "submoe/core/status.h"
#include "submoe/offload/io_buffer.h"

namespace submoe::offload {

enum class IoBackend { kPread, kDirect, kUring, kUringDirect };

const char* io_backend_name(IoBackend backend);
// "pread", "direct", "uring", "uring-direct".
Result<IoBackend> parse_io_backend(const std::string& name);
// False for the io_uring backends when the build has no liburing.
bool io_backend_compiled(IoBackend backend);

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct ExpertStoreOptions {
  IoBackend backend = IoBackend::kPread;
  // Fall back to buffered I/O (pread or uring) when O_DIRECT or io_uring is refused.
  bool allow_fallback = true;
  // pread/direct: threads reading one batch (1 = the caller alone). The store
  // owns them rather than borrowing the compute pool: they sleep in the kernel,
  // and the compute pool is busy with the layer while a prefetch reads.
  int batch_threads = 4;
  // uring: submission queue depth per ring.
  unsigned uring_depth = 64;
};

class ExpertStore {
 public:
  static Result<std::unique_ptr<ExpertStore>> open(const std::string& path, const ExpertStoreOptions& options = {});
  virtual ~ExpertStore() = default;
  ExpertStore(const ExpertStore&) = delete;
  ExpertStore& operator=(const ExpertStore&) = delete;

  // Reads `range` into `buffer`; afterwards buffer.bytes() is exactly the range.
  Status read(ByteRange range, IoBuffer& buffer);
  // Reads ranges[i] into buffers[i] (same count). On error the first failing
  // range's error is returned and the buffers' contents are unspecified.
  Status read_batch(std::span<const ByteRange> ranges, std::span<IoBuffer> buffers);

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  // The backend in use (after any fallback).
  IoBackend backend() const { return backend_; }
  // Offset and length granularity of unbuffered reads (1 for buffered backends).
  size_t alignment() const { return alignment_; }
  // Why the requested backend was replaced; empty when it was not.
  const std::string& notice() const { return notice_; }

 protected:
  ExpertStore(std::string path, uint64_t file_size, IoBackend backend, size_t alignment)
      : path_(std::move(path)), file_size_(file_size), backend_(backend), alignment_(alignment) {}
  // Ranges are already checked against the file size and buffers sized.
  virtual Status read_checked(std::span<const ByteRange> ranges, std::span<IoBuffer> buffers) = 0;

 private:
  Status check_range(ByteRange range) const;

  std::string path_;
  uint64_t file_size_ = 0;
  IoBackend backend_;
  size_t alignment_ = 1;
  std::string notice_;
};

}  // namespace submoe::offload
