// Storage side of the roofline: one test file, unbuffered random reads per
// (block size, threads) cell and one sequential pass.
//
// O_DIRECT with 4 KiB-aligned buffers keeps the page cache out of the figures;
// filesystems that refuse it (tmpfs, some overlays) get buffered reads with
// posix_fadvise(DONTNEED) on each block after reading it, so a block is never
// served from the cache on a later read (reported as such).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "submoe/core/clock.h"
#include "submoe/eval/roofline.h"

namespace submoe::eval {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kAlign = 4096;
constexpr uint64_t kChunk = 4u << 20;


class PageBuffer {
 public:
  explicit PageBuffer(size_t bytes) {
    if (posix_memalign(&p_, kAlign, std::max<size_t>(bytes, kAlign)) != 0) p_ = nullptr;
  }
  ~PageBuffer() { std::free(p_); }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(p_); }

 private:
  void* p_ = nullptr;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Removes the test file on every path out.
struct Unlinker {
  std::string path;
  ~Unlinker() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// Incompressible content, so no filesystem or device can shortcut the reads.
Status write_test_file(const std::string& path, uint64_t bytes, uint64_t seed, double* gbps) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (fd.get() < 0) return io_error(errno_text("cannot create " + path, errno));
  PageBuffer buf(kChunk);
  if (!buf.data()) return io_error("out of memory for the write buffer");
  std::mt19937_64 rng(seed);
  const auto t0 = Clock::now();
  for (uint64_t done = 0; done < bytes; done += kChunk) {
    auto* w = reinterpret_cast<uint64_t*>(buf.data());
    for (size_t i = 0; i < kChunk / 8; ++i) w[i] = rng();
    for (uint64_t off = 0; off < kChunk;) {
      const ssize_t n = ::pwrite(fd.get(), buf.data() + off, kChunk - off, static_cast<off_t>(done + off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error(errno_text("write " + path, n < 0 ? errno : ENOSPC));
      off += static_cast<uint64_t>(n);
    }
  }
  if (::fsync(fd.get()) != 0) return io_error(errno_text("fsync " + path, errno));
  *gbps = static_cast<double>(bytes) / seconds_since(t0) / 1e9;
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  return Status::ok();
}

// Reads `len` bytes at `off` completely; false on error.
bool read_full(int fd, uint8_t* dst, uint64_t len, uint64_t off) {
  uint64_t got = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd, dst + got, len - got, static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<uint64_t>(n);
  }
  return true;
}

struct ReadContext {
  int fd = -1;
  bool direct = false;
  uint64_t file_bytes = 0;
};

Result<RandomReadCell> random_read_cell(const ReadContext& ctx, uint64_t block, uint32_t threads, double seconds,
                                        uint64_t seed) {
  RandomReadCell cell;
  cell.block_bytes = block;
  cell.threads = threads;
  const uint64_t blocks_in_file = ctx.file_bytes / block;
  if (blocks_in_file == 0) return invalid_argument("test file smaller than one block");
  std::atomic<uint64_t> reads{0};
  std::atomic<bool> failed{false};
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto worker = [&](uint32_t t) {
    PageBuffer buf(block);
    if (!buf.data()) {
      failed = true;
      return;
    }
    std::mt19937_64 rng(seed * 1000003u + t);
    // At least one read per thread, so a slow device still yields a figure.
    do {
      const uint64_t off = (rng() % blocks_in_file) * block;
      if (!read_full(ctx.fd, buf.data(), block, off)) {
        failed = true;
        return;
      }
      if (!ctx.direct) ::posix_fadvise(ctx.fd, static_cast<off_t>(off), static_cast<off_t>(block), POSIX_FADV_DONTNEED);
      reads.fetch_add(1, std::memory_order_relaxed);
    } while (Clock::now() < deadline && !failed.load(std::memory_order_relaxed));
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  cell.seconds = seconds_since(t0);
  if (failed) return io_error("random read failed (block " + std::to_string(block) + ")");
  cell.reads = reads.load();
  cell.gbps = static_cast<double>(cell.reads * block) / cell.seconds / 1e9;
  return cell;
}

Result<double> sequential_read(const ReadContext& ctx, double max_seconds) {
  PageBuffer buf(kChunk);
  if (!buf.data()) return io_error("out of memory for the read buffer");
  const auto t0 = Clock::now();
  uint64_t done = 0;
  while (done + kChunk <= ctx.file_bytes) {
    if (!read_full(ctx.fd, buf.data(), kChunk, done)) return io_error("sequential read failed");
    if (!ctx.direct) ::posix_fadvise(ctx.fd, static_cast<off_t>(done), kChunk, POSIX_FADV_DONTNEED);
    done += kChunk;
    if (seconds_since(t0) > max_seconds) break;
  }
  return static_cast<double>(done) / seconds_since(t0) / 1e9;
}

}  // namespace

Result<StorageRoofline> measure_storage(const RooflineOptions& o, const RooflineProgress& progress) {
  if (o.dir.empty()) return invalid_argument("roofline: --dir is required");
  if (o.file_mb < 16 || o.file_mb > (1u << 22)) return invalid_argument("roofline: --file-mb must be in 16..4194304");
  if (o.block_bytes.empty() || o.io_threads.empty()) return invalid_argument("roofline: no block sizes or threads");
  uint64_t max_block = 0;
  for (uint64_t b : o.block_bytes) {
    if (b == 0 || b % kAlign != 0) return invalid_argument("roofline: block sizes must be multiples of 4 KiB");
    max_block = std::max(max_block, b);
  }
  for (uint32_t t : o.io_threads) {
    if (t < 1 || t > 256) return invalid_argument("roofline: I/O threads must be in 1..256");
  }
  StorageRoofline s;
  s.dir = o.dir;
  // Whole chunks and whole largest blocks.
  const uint64_t unit = std::max<uint64_t>(kChunk, max_block);
  s.file_bytes = std::max<uint64_t>(unit, (o.file_mb << 20) / unit * unit);
  if (s.file_bytes < max_block) return invalid_argument("roofline: --file-mb smaller than the largest block");

  Unlinker cleanup;
  const std::string path = o.dir + "/.submoe-roofline-" + std::to_string(::getpid()) + ".bin";
  if (progress) progress("writing " + std::to_string(s.file_bytes >> 20) + " MiB test file " + path);
  const Status w = write_test_file(path, s.file_bytes, o.seed, &s.write_gbps);
  cleanup.path = path;  // O_EXCL: only remove what this run created
  if (!w.is_ok()) {
    if (w.message().rfind("cannot create", 0) == 0) cleanup.path.clear();
    return w;
  }

  ReadContext ctx;
  ctx.file_bytes = s.file_bytes;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd >= 0) {
    // Some filesystems accept the flag at open and refuse the read.
    PageBuffer probe(kAlign);
    if (!probe.data() || ::pread(fd, probe.data(), kAlign, 0) != static_cast<ssize_t>(kAlign)) {
      s.note = errno_text("O_DIRECT read refused", errno);
      ::close(fd);
      fd = -1;
    } else {
      ctx.direct = true;
    }
  } else {
    s.note = errno_text("O_DIRECT open refused", errno);
  }
  if (fd < 0) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(errno_text("cannot open " + path, errno));
    s.note += "; buffered reads with posix_fadvise(DONTNEED) after each block (page cache may still help)";
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  Fd owned(fd);
  ctx.fd = fd;
  s.direct_io = ctx.direct;
  s.io_mode = ctx.direct ? "O_DIRECT" : "buffered+fadvise(DONTNEED)";

  if (progress) progress("sequential read (" + s.io_mode + ")");
  SUBMOE_ASSIGN_OR_RETURN(s.sequential_read_gbps, sequential_read(ctx, o.sequential_seconds));
  uint64_t seed = o.seed;
  for (uint64_t block : o.block_bytes) {
    for (uint32_t threads : o.io_threads) {
      SUBMOE_ASSIGN_OR_RETURN(RandomReadCell cell, random_read_cell(ctx, block, threads, o.cell_seconds, ++seed));
      if (progress) {
        char msg[96];
        std::snprintf(msg, sizeof(msg), "random read %llu KiB x %u threads: %.3f GB/s",
                      static_cast<unsigned long long>(block >> 10), threads, cell.gbps);
        progress(msg);
      }
      s.random_read.push_back(cell);
    }
  }
  return s;
}

}  // namespace submoe::eval
