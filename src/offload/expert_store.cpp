#include "submoe/offload/expert_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "offload/expert_store_internal.h"

namespace submoe::offload {

const char* io_backend_name(IoBackend backend) {
  switch (backend) {
    case IoBackend::kPread: return "pread";
    case IoBackend::kDirect: return "direct";
    case IoBackend::kUring: return "uring";
    case IoBackend::kUringDirect: return "uring-direct";
  }
  return "?";
}

Result<IoBackend> parse_io_backend(const std::string& name) {
  for (IoBackend b : {IoBackend::kPread, IoBackend::kDirect, IoBackend::kUring, IoBackend::kUringDirect})
    if (name == io_backend_name(b)) return b;
  return invalid_argument("unknown I/O backend '" + name + "' (expected pread, direct, uring or uring-direct)");
}

bool io_backend_compiled(IoBackend backend) {
#if defined(SUBMOE_HAVE_IO_URING)
  (void)backend;
  return true;
#else
  return backend == IoBackend::kPread || backend == IoBackend::kDirect;
#endif
}

namespace detail {

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

ReadPlan plan_read(ByteRange range, size_t alignment) {
  const uint64_t a = alignment;
  ReadPlan p;
  p.file_offset = range.offset / a * a;
  p.window_offset = range.offset - p.file_offset;
  p.needed = p.window_offset + range.length;
  p.length = (p.needed + a - 1) / a * a;
  return p;
}

Status prepare_buffer(const ReadPlan& plan, ByteRange range, const std::string& path, IoBuffer& buffer) {
  if (!buffer.reserve(static_cast<size_t>(plan.length)))
    return io_error("out of memory for a " + std::to_string(plan.length) + "-byte read of '" + path +
                    "' at offset " + std::to_string(range.offset));
  buffer.set_window(static_cast<size_t>(plan.window_offset), static_cast<size_t>(range.length));
  return Status::ok();
}

Status read_errno_error(const std::string& path, uint64_t offset, int err) {
  return io_error("reading '" + path + "' at offset " + std::to_string(offset) + ": " + std::strerror(err));
}

Status short_read_error(const std::string& path, uint64_t offset, uint64_t got, uint64_t wanted) {
  return io_error("unexpected end of file reading '" + path + "' at offset " + std::to_string(offset) + " (got " +
                  std::to_string(got) + " of " + std::to_string(wanted) + " bytes)");
}

}  // namespace detail

namespace {

using detail::FileDescriptor;

bool is_direct(IoBackend b) { return b == IoBackend::kDirect || b == IoBackend::kUringDirect; }
bool is_uring(IoBackend b) { return b == IoBackend::kUring || b == IoBackend::kUringDirect; }
IoBackend buffered_twin(IoBackend b) { return is_uring(b) ? IoBackend::kUring : IoBackend::kPread; }

// Offset granularity of O_DIRECT for this file: statx's DIO alignment where the
// kernel reports it, else 4096, which every common logical block size divides.
size_t direct_alignment(int fd) {
#if defined(STATX_DIOALIGN)
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_offset_align > 0 && sx.stx_dio_offset_align <= IoBuffer::kAlignment &&
      (sx.stx_dio_offset_align & (sx.stx_dio_offset_align - 1)) == 0)
    return sx.stx_dio_offset_align;
#else
  (void)fd;
#endif
  return IoBuffer::kAlignment;
}

// Opens with O_DIRECT and reads the first block: some filesystems accept the
// flag at open and refuse only the read. Returns the errno text when refused.
Result<FileDescriptor> open_direct(const std::string& path, uint64_t file_size, size_t* alignment) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
  if (fd.get() < 0) return unsupported(std::string("O_DIRECT open refused: ") + std::strerror(errno));
  *alignment = direct_alignment(fd.get());
  if (file_size > 0) {
    IoBuffer probe;
    if (!probe.reserve(IoBuffer::kAlignment)) return io_error("out of memory probing O_DIRECT on '" + path + "'");
    if (::pread(fd.get(), probe.data(), IoBuffer::kAlignment, 0) < 0)
      return unsupported(std::string("O_DIRECT read refused: ") + std::strerror(errno));
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<ExpertStore>> ExpertStore::open(const std::string& path, const ExpertStoreOptions& options) {
  if (options.batch_threads < 1) return invalid_argument("expert store: batch_threads must be >= 1");
  if (options.uring_depth < 1 || options.uring_depth > 4096)
    return invalid_argument("expert store: uring_depth must be within [1, 4096]");
  IoBackend backend = options.backend;
  std::string notice;
  if (!io_backend_compiled(backend)) {
    const std::string why = std::string("backend '") + io_backend_name(backend) + "' needs liburing, which this build lacks";
    if (!options.allow_fallback) return unsupported("expert store '" + path + "': " + why);
    notice = why;
    backend = is_direct(backend) ? IoBackend::kDirect : IoBackend::kPread;
  }

  FileDescriptor buffered_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (buffered_fd.get() < 0) {
    const int err = errno;
    const std::string text = "expert store: cannot open '" + path + "': " + std::strerror(err);
    return err == ENOENT ? not_found(text) : io_error(text);
  }
  struct stat st {};
  if (::fstat(buffered_fd.get(), &st) != 0) return io_error("expert store: cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("expert store: '" + path + "' is not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  FileDescriptor fd = std::move(buffered_fd);
  size_t alignment = 1;
  if (is_direct(backend)) {
    Result<FileDescriptor> direct = open_direct(path, file_size, &alignment);
    if (direct.is_ok()) {
      fd = std::move(direct).value();
    } else {
      if (!options.allow_fallback || direct.status().code() != ErrorCode::kUnsupported)
        return direct.status().with_context("expert store '" + path + "'");
      notice += (notice.empty() ? "" : "; ") + direct.status().message() + ", using buffered reads";
      backend = buffered_twin(backend);
      alignment = 1;
    }
  }

  std::unique_ptr<ExpertStore> store;
#if defined(SUBMOE_HAVE_IO_URING)
  if (is_uring(backend)) {
    auto uring = detail::make_uring_store(path, std::move(fd), file_size, backend, alignment, options.uring_depth);
    if (uring.is_ok()) {
      store = std::move(uring).value();
    } else {
      if (!options.allow_fallback || uring.status().code() != ErrorCode::kUnsupported)
        return uring.status().with_context("expert store '" + path + "'");
      notice += (notice.empty() ? "" : "; ") + uring.status().message() + ", using pread";
      backend = is_direct(backend) ? IoBackend::kDirect : IoBackend::kPread;
    }
  }
#endif
  if (!store) store = detail::make_pread_store(path, std::move(fd), file_size, backend, alignment, options.batch_threads);
  store->notice_ = std::move(notice);
  return store;
}

Status ExpertStore::check_range(ByteRange range) const {
  if (range.offset > file_size_ || range.length > file_size_ - range.offset)
    return corrupt_data("expert store: range at offset " + std::to_string(range.offset) + " of " +
                        std::to_string(range.length) + " bytes ends past the end of '" + path_ + "' (" +
                        std::to_string(file_size_) + " bytes)");
  return Status::ok();
}

Status ExpertStore::read(ByteRange range, IoBuffer& buffer) {
  return read_batch(std::span<const ByteRange>(&range, 1), std::span<IoBuffer>(&buffer, 1));
}

Status ExpertStore::read_batch(std::span<const ByteRange> ranges, std::span<IoBuffer> buffers) {
  if (ranges.size() != buffers.size())
    return invalid_argument("expert store: " + std::to_string(ranges.size()) + " ranges but " +
                            std::to_string(buffers.size()) + " buffers");
  for (const ByteRange& r : ranges) SUBMOE_RETURN_IF_ERROR(check_range(r));
  return read_checked(ranges, buffers);
}

}  // namespace submoe::offload
