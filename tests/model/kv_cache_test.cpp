#include "submoe/model/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

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

// Per-layer shapes: a GQA layer, a latent (MLA) layer with no values and a layer
// whose values are narrower than its keys, grown in odd steps: every row keeps
// its contents, rows of different layers and heads never overlap, and the bytes
// per position are the sum of the layers' widths.
TEST(KvCache, PerLayerShapesAndALatentLayer) {
  const std::vector<KvLayerShape> shapes = {{2, 4, 4}, {1, 6, 0}, {3, 5, 2}};
  KvCache c(shapes);
  ASSERT_EQ(c.num_layers(), 3u);
  EXPECT_EQ(c.layer_shape(1), (KvLayerShape{1, 6, 0}));
  EXPECT_EQ(c.bytes_per_position(), (2 * (4 + 4) + 1 * 6 + 3 * (5 + 2)) * sizeof(float));
  size_t written = 0;
  for (size_t batch : {3u, 1u, 7u, 2u}) {
    c.ensure_room(batch);
    for (size_t p = written; p < written + batch; ++p)
      for (size_t l = 0; l < shapes.size(); ++l)
        for (size_t h = 0; h < shapes[l].heads; ++h) {
          for (size_t d = 0; d < shapes[l].key_dim; ++d) c.key_row(l, h, p)[d] = tag(l, h, p, d, false);
          for (size_t d = 0; d < shapes[l].value_dim; ++d) c.value_row(l, h, p)[d] = tag(l, h, p, d, true);
        }
    c.advance(batch);
    written += batch;
    for (size_t l = 0; l < shapes.size(); ++l)
      for (size_t h = 0; h < shapes[l].heads; ++h)
        for (size_t p = 0; p < written; ++p) {
          for (size_t d = 0; d < shapes[l].key_dim; ++d)
            ASSERT_EQ(c.keys(l, h)[p * shapes[l].key_dim + d], tag(l, h, p, d, false)) << l << " " << h << " " << p;
          for (size_t d = 0; d < shapes[l].value_dim; ++d)
            ASSERT_EQ(c.values(l, h)[p * shapes[l].value_dim + d], tag(l, h, p, d, true)) << l << " " << h << " " << p;
        }
  }
  EXPECT_EQ(c.bytes(), c.capacity() * c.bytes_per_position());
}

TEST(KvCache, UniformShapeIsOneShapePerLayer) {
  KvCache c(4, 2, 8);
  for (size_t l = 0; l < 4; ++l) EXPECT_EQ(c.layer_shape(l), (KvLayerShape{2, 8, 8}));
  EXPECT_EQ(c.bytes_per_position(), 4 * 2 * 2 * 8 * sizeof(float));
  c.reserve(5);
  EXPECT_EQ(c.bytes(), 5 * c.bytes_per_position());
}

}  // namespace
}  // namespace submoe::model
