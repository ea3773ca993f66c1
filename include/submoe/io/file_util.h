// Whole-file reads and atomic writes. Every output of submoe is written to
// `path.tmp`, fsynced and renamed over `path`, so a crash or a full disk never
// leaves a half-written file under the final name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "submoe/core/status.h"

namespace submoe::io {

// Reads a whole file (kNotFound when it does not exist, kIoError otherwise).
Result<std::string> read_file_to_string(const std::string& path);

// Reads a text file (calibration and evaluation text): the bytes must be
// UTF-8 without NUL bytes; a binary or mis-encoded file is kInvalidArgument
// naming the offset of the first bad byte (it would otherwise be tokenized
// into byte tokens and silently scored or calibrated on). With `lossy`
// (the commands' --lossy-text) every invalid sequence and NUL becomes U+FFFD
// instead, as Python's errors="replace" does.
Result<std::string> read_text_file(const std::string& path, bool lossy = false);
// Offset of the first byte that breaks strict UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF included) or is NUL; npos when
// the text is valid.
size_t first_invalid_utf8(std::string_view text);

// Streams bytes into `path.tmp`; commit() flushes, fsyncs (optional), renames it
// over `path` and fsyncs the directory. Destroying an uncommitted writer removes
// the temporary file and leaves `path` untouched.
class AtomicFileWriter {
 public:
  static Result<std::unique_ptr<AtomicFileWriter>> create(const std::string& path, bool fsync = true);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status write(std::span<const uint8_t> bytes);
  Status write(std::string_view text) {
    return write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  // Bytes written so far.
  uint64_t size() const { return written_; }
  Status commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter() = default;
  Status flush_buffer();
  void abandon();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool fsync_ = true;
  bool committed_ = false;
  uint64_t written_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t buffered_ = 0;
};

// One-shot atomic write of `contents` to `path`.
Status write_file_atomic(const std::string& path, std::string_view contents, bool fsync = true);

// An exclusive advisory lock (flock) on `path`, created if absent, held until
// destruction; the kernel drops it when the process dies, so a kill -9 never
// leaves a stale lock. The file holds the owner's pid, for the message.
class ExclusiveFileLock {
 public:
  // kIoError "<what> is in use by process N (lock <path>)" when
  // another process holds it; never waits.
  static Result<std::unique_ptr<ExclusiveFileLock>> try_acquire(const std::string& path, const std::string& what);
  ~ExclusiveFileLock();
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;

 private:
  ExclusiveFileLock() = default;
  int fd_ = -1;
};

}  // namespace submoe::io
