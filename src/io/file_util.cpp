#include "submoe/io/file_util.h"

#include "unicode_utf8.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace submoe::io {
namespace {

// Large enough that writing many small tensors costs few syscalls.
constexpr size_t kBufferBytes = size_t{1} << 20;

std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, const uint8_t* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return io_error(path + ": write failed: " + errno_text());
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::ok();
}

}  // namespace

Result<std::string> read_file_to_string(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found(path + ": no such file");
    return io_error(path + ": cannot open: " + errno_text());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": not a regular file");
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      const std::string err = errno_text();
      ::close(fd);
      return io_error(path + ": read failed: " + err);
    }
    if (r == 0) break;  // the file shrank underneath us
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::create(const std::string& path, bool fsync) {
  if (path.empty()) return invalid_argument("empty output path");
  std::unique_ptr<AtomicFileWriter> w(new AtomicFileWriter());
  w->path_ = path;
  w->temp_path_ = path + ".tmp";
  w->fsync_ = fsync;
  w->fd_ = ::open(w->temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return io_error(w->temp_path_ + ": cannot create: " + errno_text());
  w->buffer_.reset(new uint8_t[kBufferBytes]);
  return w;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) abandon();
}

void AtomicFileWriter::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_path_.c_str());
  }
}

Status AtomicFileWriter::flush_buffer() {
  if (buffered_ == 0) return Status::ok();
  Status s = write_all(fd_, buffer_.get(), buffered_, temp_path_);
  buffered_ = 0;
  return s;
}

Status AtomicFileWriter::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0 || committed_) return internal_error(path_ + ": write after commit or failure");
  written_ += bytes.size();
  if (buffered_ + bytes.size() <= kBufferBytes) {
    if (!bytes.empty()) std::memcpy(buffer_.get() + buffered_, bytes.data(), bytes.size());
    buffered_ += bytes.size();
    return Status::ok();
  }
  SUBMOE_RETURN_IF_ERROR(flush_buffer());
  if (bytes.size() >= kBufferBytes) return write_all(fd_, bytes.data(), bytes.size(), temp_path_);
  std::memcpy(buffer_.get(), bytes.data(), bytes.size());
  buffered_ = bytes.size();
  return Status::ok();
}

Status AtomicFileWriter::commit() {
  if (fd_ < 0 || committed_) return internal_error(path_ + ": commit twice or after failure");
  Status s = flush_buffer();
  if (s.is_ok() && fsync_ && ::fsync(fd_) != 0) s = io_error(temp_path_ + ": fsync failed: " + errno_text());
  if (!s.is_ok()) {
    abandon();
    return s;
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    return io_error(temp_path_ + ": close failed: " + errno_text());
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const std::string err = errno_text();
    ::unlink(temp_path_.c_str());
    return io_error(path_ + ": rename from " + temp_path_ + " failed: " + err);
  }
  committed_ = true;
  if (fsync_) {
    // The rename is only durable once the directory entry is.
    std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    if (dir.empty()) dir = ".";
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::string_view contents, bool fsync) {
  SUBMOE_ASSIGN_OR_RETURN(auto writer, AtomicFileWriter::create(path, fsync));
  SUBMOE_RETURN_IF_ERROR(writer->write(contents));
  return writer->commit();
}

size_t first_invalid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

Result<std::string> read_text_file(const std::string& path, bool lossy) {
  SUBMOE_ASSIGN_OR_RETURN(std::string text, read_file_to_string(path));
  const size_t bad = first_invalid_utf8(text);
  if (bad != std::string_view::npos && lossy) {
    std::string repaired = utf8_repair(text);
    std::string out;
    out.reserve(repaired.size());
    for (char c : repaired) {
      if (c == '\0') out += "\xEF\xBF\xBD";  // U+FFFD
      else out += c;
    }
    return out;
  }
  if (bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    return invalid_argument("'" + path + "' is not UTF-8 text: byte " + byte + " at offset " + std::to_string(bad) +
                            (text[bad] == '\0' ? " is NUL" : " starts no valid character") +
                            " (a binary file? --lossy-text reads it with U+FFFD for every bad byte)");
  }
  return text;
}

Result<std::unique_ptr<ExclusiveFileLock>> ExclusiveFileLock::try_acquire(const std::string& path,
                                                                         const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open the lock file '" + path + "': " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {0};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return io_error("cannot lock '" + path + "': " + std::strerror(err));
    std::string owner = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?");
    while (!owner.empty() && (owner.back() == '\n' || owner.back() == ' ')) owner.pop_back();
    return io_error(what + " is in use by process " + owner + " (lock " + path + "); wait for it to finish");
  }
  std::unique_ptr<ExclusiveFileLock> lock(new ExclusiveFileLock());
  lock->fd_ = fd;
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
    return io_error("cannot write the lock file '" + path + "': " + std::strerror(errno));
  return lock;
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace submoe::io
