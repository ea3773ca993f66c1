#include "runtime/op_workspace.h"

#include "submoe/core/aligned_buffer.h"

namespace submoe::runtime::detail {

std::span<float> thread_workspace(size_t floats) {
  thread_local AlignedBuffer<float> buffer;
  if (buffer.size() < floats) buffer.reset(floats, /*zero=*/false);
  return {buffer.data(), buffer.size()};
}

}  // namespace submoe::runtime::detail
