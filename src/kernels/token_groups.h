// The split of a row's tokens into groups of 4 (one decoded weight block
// reused from registers) and single ones, shared by the LUT-decoding row
// kernels (mxfp4, nf4).
#pragma once

#include <cstdint>

namespace submoe::kernels::detail {

// Rows [row_begin, row_end), each over its tokens 4 at a time, then singly:
// four(r, t) and one(r, t).
template <typename Group4, typename Group1>
inline void for_rows_and_token_groups(uint32_t row_begin, uint32_t row_end, uint32_t batch, Group4 four, Group1 one) {
  for (uint32_t r = row_begin; r < row_end; ++r) {
    uint32_t t = 0;
    for (; t + 4 <= batch; t += 4) four(r, t);
    for (; t < batch; ++t) one(r, t);
  }
}

}  // namespace submoe::kernels::detail
