// Anonymous memory in 2 MiB transparent huge pages (madvise(MADV_HUGEPAGE)),
// for weights streamed every token. A decode step walks hundreds of MB of
// weights; in 4 KiB pages every 4 KiB is a TLB miss, and under virtualization
// each miss is a two-level page walk: on the 2-vCPU Xeon VM of
// docs/perf-notes.md the synth Qwen3-MoE's bf16 decode ran 1.3x faster from
// huge pages than from the file mapping. Where the kernel gives no huge pages
// (THP "never", fragmented memory) the buffer still works in small pages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/status.h"

namespace submoe {

class HugePageBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageBuffer() = default;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  HugePageBuffer(HugePageBuffer&& o) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
  ~HugePageBuffer();

  // `bytes` (rounded up to whole huge pages, 2 MiB aligned), zero-filled by
  // the kernel; kIoError naming errno when the mapping fails.
  static Result<HugePageBuffer> allocate(size_t bytes);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // the bytes asked for
  bool empty() const { return data_ == nullptr; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

}  // namespace submoe
