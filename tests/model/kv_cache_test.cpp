#include "submoe/model/kv_cache.h"

#include <gtest/gtest.h>

namespace submoe::model {
namespace {

float tag(size_t layer, size_t head, size_t pos, size_t d, bool value) {
  return static_cast<float>(layer * 100000 + head * 10000 + pos * 10 + d) * (value ? -1.0f : 1.0f);
}

TEST(KvCache, GrowingKeepsEveryStoredRow) {
  KvCache c(3, 2, 4);
  c.reserve(1);
  size_t written = 0;
  for (size_t batch : {1u, 2u, 5u, 1u, 9u}) {
    c.ensure_room(batch);
    for (size_t p = written; p < written + batch; ++p)
      for (size_t l = 0; l < 3; ++l)
        for (size_t h = 0; h < 2; ++h)
          for (size_t d = 0; d < 4; ++d) {
            c.key_row(l, h, p)[d] = tag(l, h, p, d, false);
            c.value_row(l, h, p)[d] = tag(l, h, p, d, true);
          }
    c.advance(batch);
    written += batch;
    ASSERT_GE(c.capacity(), written);
    for (size_t l = 0; l < 3; ++l)
      for (size_t h = 0; h < 2; ++h)
        for (size_t p = 0; p < written; ++p)
          for (size_t d = 0; d < 4; ++d) {
            ASSERT_EQ(c.keys(l, h)[p * 4 + d], tag(l, h, p, d, false));
            ASSERT_EQ(c.values(l, h)[p * 4 + d], tag(l, h, p, d, true));
          }
  }
  EXPECT_EQ(c.length(), 18u);
  c.truncate(7);
  EXPECT_EQ(c.length(), 7u);
  c.truncate(9);  // never extends
  EXPECT_EQ(c.length(), 7u);
  c.clear();
  EXPECT_EQ(c.length(), 0u);
}

}  // namespace
}  // namespace submoe::model
