// DRAM side of the roofline: memcpy and a streaming sum over buffers larger than
// the last-level cache, on 1 thread and on every hardware thread. Best of a few
// repetitions, because on a shared machine the slow runs measure the neighbours.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "submoe/core/aligned_buffer.h"
#include "submoe/core/thread_pool.h"
#include "submoe/eval/roofline.h"
#include "submoe/kernels/gemv_bench.h"

namespace submoe::eval {
namespace {

using Clock = std::chrono::steady_clock;

// Four independent accumulators so the loop is bound by loads, not by the
// dependency chain of one add.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

// Best bytes/s of `reps` runs of fn over [0, words) split across the pool.
template <typename Fn>
double best_rate(ThreadPool& pool, size_t words, double bytes_per_run, int reps, Fn&& fn) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    pool.parallel_for(words, 512, [&](size_t b, size_t e, int t) { fn(b, e, t); });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, bytes_per_run / s);
  }
  return best / 1e9;
}

}  // namespace

Result<DramRoofline> measure_dram(const RooflineOptions& o) {
  DramRoofline d;
  const uint64_t llc = kernels::last_level_cache_bytes();
  uint64_t bytes = o.dram_buffer_bytes;
  if (bytes == 0) bytes = std::clamp<uint64_t>(2 * llc, 64u << 20, 512u << 20);
  if (bytes < (1u << 20) || bytes > (uint64_t{16} << 30)) return invalid_argument("roofline: DRAM buffer out of range");
  d.buffer_bytes = bytes;
  d.larger_than_llc = llc > 0 && bytes > llc;
  const size_t words = bytes / 8;
  AlignedBuffer<uint64_t> src(words, false), dst(words, false);
  // Touch every page first so page faults stay out of the timing.
  for (size_t i = 0; i < words; ++i) src[i] = i * 0x9E3779B97F4A7C15ull;
  std::memset(dst.data(), 0, words * 8);
  const int n = o.compute_threads > 0 ? o.compute_threads : hardware_threads();
  d.threads = static_cast<uint32_t>(n);
  const int reps = o.quick ? 2 : 4;
  volatile uint64_t sink = 0;
  for (int threads : {1, n}) {
    ThreadPool pool(threads);
    const double copy = best_rate(pool, words, 2.0 * static_cast<double>(bytes), reps, [&](size_t b, size_t e, int) {
      std::memcpy(dst.data() + b, src.data() + b, (e - b) * 8);
    });
    // One cache line per thread, so the partial sums do not share a line.
    std::vector<uint64_t> partial(static_cast<size_t>(threads) * 8, 0);
    const double read = best_rate(pool, words, static_cast<double>(bytes), reps, [&](size_t b, size_t e, int t) {
      partial[static_cast<size_t>(t) * 8] += sum_words(src.data() + b, e - b);
    });
    for (uint64_t v : partial) sink = sink + v;
    (threads == 1 ? d.copy_gbps_1t : d.copy_gbps_nt) = copy;
    (threads == 1 ? d.read_gbps_1t : d.read_gbps_nt) = read;
  }
  if (dst[words / 2] != src[words / 2]) return internal_error("DRAM copy check failed");
  return d;
}

}  // namespace submoe::eval
