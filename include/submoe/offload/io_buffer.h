// An owning, page-aligned byte buffer that the expert store reads into, with a
// window that marks the requested bytes inside it. Unbuffered (O_DIRECT) reads
// must start and end on block boundaries, so the store reads the aligned
// superset of a range and the window hands out exactly the requested bytes
// without a copy. Buffered backends read the range at the start of the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace submoe::offload {

class IoBuffer {
 public:
  // Page alignment covers every logical block size (512, 4096) O_DIRECT asks for.
  static constexpr size_t kAlignment = 4096;

  IoBuffer() = default;
  ~IoBuffer();
  IoBuffer(const IoBuffer&) = delete;
  IoBuffer& operator=(const IoBuffer&) = delete;
  IoBuffer(IoBuffer&& o) noexcept;
  IoBuffer& operator=(IoBuffer&& o) noexcept;

  // Makes room for at least `bytes` bytes and clears the window; the contents
  // are unspecified (memory is reused when large enough). Returns false when
  // the allocation fails.
  bool reserve(size_t bytes);
  uint8_t* data() { return data_; }
  size_t capacity() const { return capacity_; }

  // Marks [offset, offset + length) of the storage as the payload (must lie
  // within capacity()).
  void set_window(size_t offset, size_t length);
  std::span<const uint8_t> bytes() const { return {data_ + window_offset_, window_length_}; }
  std::span<uint8_t> mutable_bytes() { return {data_ + window_offset_, window_length_}; }
  size_t size() const { return window_length_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
  size_t window_offset_ = 0;
  size_t window_length_ = 0;
};

}  // namespace submoe::offload
