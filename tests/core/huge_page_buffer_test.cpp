#include "submoe/core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace submoe {
namespace {

TEST(HugePageBuffer, AlignedZeroedWritableAndMovable) {
  for (size_t bytes : {size_t{1}, size_t{4096}, HugePageBuffer::kHugePage, HugePageBuffer::kHugePage + 1,
                       size_t{5} << 20}) {
    auto b = HugePageBuffer::allocate(bytes);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    ASSERT_FALSE(b->empty());
    EXPECT_EQ(b->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % HugePageBuffer::kHugePage, 0u) << bytes;
    EXPECT_EQ(b->data()[0], 0);
    EXPECT_EQ(b->data()[bytes - 1], 0);
    b->data()[bytes - 1] = 0x5a;  // the whole requested range is writable
    HugePageBuffer moved = std::move(*b);
    EXPECT_TRUE(b->empty());
    EXPECT_EQ(moved.data()[bytes - 1], 0x5a);
    HugePageBuffer other;
    other = std::move(moved);
    EXPECT_TRUE(moved.empty());
    EXPECT_EQ(other.size(), bytes);
  }
  auto none = HugePageBuffer::allocate(0);
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
}

TEST(HugePageBuffer, AnImpossibleSizeIsAnErrorNotACrash) {
  auto b = HugePageBuffer::allocate(size_t{1} << 62);
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("mmap"), std::string::npos) << b.status().to_string();
}

}  // namespace
}  // namespace submoe
