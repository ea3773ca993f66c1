#include "submoe/offload/io_buffer.h"

#include <cassert>
#include <cstdlib>
#include <utility>

namespace submoe::offload {

IoBuffer::~IoBuffer() { std::free(data_); }

IoBuffer::IoBuffer(IoBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      window_offset_(std::exchange(o.window_offset_, 0)),
      window_length_(std::exchange(o.window_length_, 0)) {}

IoBuffer& IoBuffer::operator=(IoBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    window_offset_ = std::exchange(o.window_offset_, 0);
    window_length_ = std::exchange(o.window_length_, 0);
  }
  return *this;
}

bool IoBuffer::reserve(size_t bytes) {
  window_offset_ = 0;
  window_length_ = 0;
  if (bytes <= capacity_) return true;
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return false;
  data_ = static_cast<uint8_t*>(p);
  capacity_ = rounded;
  return true;
}

void IoBuffer::set_window(size_t offset, size_t length) {
  assert(offset <= capacity_ && length <= capacity_ - offset);
  window_offset_ = offset;
  window_length_ = length;
}

}  // namespace submoe::offload
