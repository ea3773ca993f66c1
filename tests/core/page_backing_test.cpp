// core/page_backing.h against memory whose page size is known: a touched
// HugePageBuffer (madvise(MADV_HUGEPAGE)) is in 2 MiB pages where the kernel's
// THP mode allows it, a small heap block is not, and an address in no mapping
// is not.
#include "submoe/core/page_backing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "submoe/core/huge_page_buffer.h"

namespace submoe {
namespace {

bool thp_for_madvised_memory() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
}

TEST(PageBacking, HeapBlocksAndUnmappedAddressesAreNotHugePages) {
  std::vector<char> small(4096, 1);
  EXPECT_FALSE(mapped_with_huge_pages(small.data()));
  EXPECT_FALSE(mapped_with_huge_pages(nullptr));
  EXPECT_FALSE(mapped_with_huge_pages(reinterpret_cast<const void*>(uintptr_t{8})));
}

TEST(PageBacking, ATouchedHugePageBufferIsInHugePages) {
  if (!thp_for_madvised_memory()) {
    GTEST_SKIP() << "transparent huge pages are off for madvised memory on this kernel";
  }
  auto b = HugePageBuffer::allocate(size_t{16} << 20);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  std::memset(b->data(), 1, b->size());
  // The kernel may fall back to 4 KiB pages when memory is fragmented; it
  // gives this fresh 16 MiB mapping huge pages on an ordinary machine.
  EXPECT_TRUE(mapped_with_huge_pages(b->data() + (size_t{5} << 20)));
}

}  // namespace
}  // namespace submoe
