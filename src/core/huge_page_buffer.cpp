#include "submoe/core/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace submoe {

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), mapped_(std::exchange(o.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) munmap(data_, mapped_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (data_ != nullptr) munmap(data_, mapped_);
}

Result<HugePageBuffer> HugePageBuffer::allocate(size_t bytes) {
  HugePageBuffer b;
  if (bytes == 0) return b;
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Map one huge page more and trim, so the region starts on a 2 MiB boundary
  // (mmap only promises 4 KiB alignment; THP needs aligned 2 MiB extents).
  const size_t span = rounded + kHugePage;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return io_error("mmap of " + std::to_string(span >> 20) + " MiB for weights failed: " + std::strerror(errno));
  auto* base = static_cast<uint8_t*>(p);
  const uintptr_t a = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  auto* aligned = reinterpret_cast<uint8_t*>(a);
  const size_t head = static_cast<size_t>(aligned - base), tail = span - head - rounded;
  if (head > 0) munmap(base, head);
  if (tail > 0) munmap(aligned + rounded, tail);
  madvise(aligned, rounded, MADV_HUGEPAGE);  // advice: no huge pages is not an error
  b.data_ = aligned;
  b.size_ = bytes;
  b.mapped_ = rounded;
  return b;
}

}  // namespace submoe
