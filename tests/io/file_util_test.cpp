#include "io/io_test_util.h"
#include "submoe/io/file_util.h"

#include <unistd.h>

namespace submoe::io {
namespace {

using testing::read_bytes;
using testing::TempDir;

TEST(FileUtil, AtomicWriteCreatesAndReplaces) {
  TempDir dir;
  const std::string p = dir.file("a.txt");
  ASSERT_TRUE(write_file_atomic(p, "first").is_ok());
  EXPECT_EQ(read_bytes(p), "first");
  ASSERT_TRUE(write_file_atomic(p, "second, longer").is_ok());
  EXPECT_EQ(read_bytes(p), "second, longer");
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  auto r = read_file_to_string(p);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "second, longer");
}

TEST(FileUtil, UncommittedWriterLeavesTheOldFile) {
  TempDir dir;
  const std::string p = dir.file("b.bin");
  ASSERT_TRUE(write_file_atomic(p, "keep").is_ok());
  {
    auto w = AtomicFileWriter::create(p);
    ASSERT_TRUE(w.is_ok());
    ASSERT_TRUE((*w)->write(std::string_view("partial")).is_ok());
    EXPECT_TRUE(std::filesystem::exists(p + ".tmp"));
  }
  EXPECT_EQ(read_bytes(p), "keep");
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST(FileUtil, LargeAndManySmallWritesKeepOrder) {
  TempDir dir;
  const std::string p = dir.file("c.bin");
  auto w = AtomicFileWriter::create(p, false);
  ASSERT_TRUE(w.is_ok());
  std::string want;
  // Small pieces fill the buffer; a 3 MB piece bypasses it; mixed sizes cross its edge.
  for (int i = 0; i < 5000; ++i) {
    const std::string s(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
    ASSERT_TRUE((*w)->write(std::string_view(s)).is_ok());
    want += s;
  }
  const std::string big(3 << 20, 'Z');
  ASSERT_TRUE((*w)->write(std::string_view(big)).is_ok());
  want += big;
  ASSERT_TRUE((*w)->write(std::string_view("tail")).is_ok());
  want += "tail";
  EXPECT_EQ((*w)->size(), want.size());
  ASSERT_TRUE((*w)->commit().is_ok());
  EXPECT_EQ(read_bytes(p), want);
  EXPECT_FALSE((*w)->commit().is_ok());  // twice is a bug, reported not crashed
}

TEST(FileUtil, Errors) {
  TempDir dir;
  auto r = read_file_to_string(dir.file("none"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(read_file_to_string(dir.path()).is_ok());
  EXPECT_EQ(write_file_atomic(dir.file("no/such/dir/x"), "x").code(), ErrorCode::kIoError);
  EXPECT_EQ(write_file_atomic("", "x").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace submoe::io

namespace submoe::io {
namespace {

TEST(FileUtil, ExclusiveLockRefusesASecondHolderUntilReleased) {
  testing::TempDir dir;
  const std::string p = dir.file("x.lock");
  {
    auto first = ExclusiveFileLock::try_acquire(p, "'out'");
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    // A second open file description conflicts even within one process.
    auto second = ExclusiveFileLock::try_acquire(p, "'out'");
    ASSERT_FALSE(second.is_ok());
    EXPECT_NE(second.status().message().find("'out' is in use by process " + std::to_string(::getpid())),
              std::string::npos)
        << second.status().to_string();
  }
  auto again = ExclusiveFileLock::try_acquire(p, "'out'");
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_FALSE(ExclusiveFileLock::try_acquire(dir.file("no/such/dir/x.lock"), "x").is_ok());
}

}  // namespace
}  // namespace submoe::io
