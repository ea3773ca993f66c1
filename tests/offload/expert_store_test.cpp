// ExpertStore backends against the file's bytes held in memory: random ranges
// (unaligned, empty, one byte, the tail, the whole file), batches, concurrent
// batches, and the errors for ranges past the end and files that shrink.
#include "submoe/offload/expert_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "offload_test_util.h"

namespace submoe::offload {
namespace {

using testing::TempDir;

const IoBackend kAllBackends[] = {IoBackend::kPread, IoBackend::kDirect, IoBackend::kUring, IoBackend::kUringDirect};

std::string backend_case_name(const ::testing::TestParamInfo<IoBackend>& info) {
  std::string n = io_backend_name(info.param);
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

class StoreBackendTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (!io_backend_compiled(GetParam())) GTEST_SKIP() << io_backend_name(GetParam()) << ": built without liburing";
    // Not a multiple of 4096, so aligned reads of the tail run past the end.
    content_ = testing::random_bytes(3 * 65536 + 4096 * 5 + 777, 11);
    path_ = dir_.file("experts.bin");
    testing::write_bytes(path_, content_);
  }

  // Opens without fallback; skips when the filesystem or kernel refuses.
  std::unique_ptr<ExpertStore> open_or_skip(int batch_threads) {
    ExpertStoreOptions o;
    o.backend = GetParam();
    o.allow_fallback = false;
    o.batch_threads = batch_threads;
    auto store = ExpertStore::open(path_, o);
    if (!store.is_ok() && store.status().code() == ErrorCode::kUnsupported) {
      skip_reason_ = store.status().message();
      return nullptr;
    }
    EXPECT_TRUE(store.is_ok()) << store.status().to_string();
    if (!store.is_ok()) return nullptr;
    EXPECT_EQ((*store)->backend(), GetParam());
    EXPECT_TRUE((*store)->notice().empty());
    return std::move(store).value();
  }

  void expect_range(const IoBuffer& buffer, ByteRange r, const std::string& what) {
    ASSERT_EQ(buffer.size(), r.length) << what;
    if (r.length > 0) {
      EXPECT_EQ(std::memcmp(buffer.bytes().data(), content_.data() + r.offset, r.length), 0)
          << what << " offset " << r.offset << " length " << r.length;
    }
  }

  std::vector<ByteRange> random_ranges(size_t n, uint32_t seed) const {
    std::mt19937_64 rng(seed);
    const uint64_t size = content_.size();
    std::vector<ByteRange> ranges = {
        {0, 0}, {0, 1}, {size - 1, 1}, {size, 0}, {0, size}, {4096, 4096}, {4095, 2}, {size - 777, 777}, {123, 70000}};
    while (ranges.size() < n) {
      const uint64_t off = rng() % size;
      const uint64_t len = rng() % std::min<uint64_t>(size - off + 1, 50000);
      ranges.push_back({off, len});
    }
    return ranges;
  }

  TempDir dir_;
  std::string path_;
  std::vector<uint8_t> content_;
  std::string skip_reason_;
};

TEST_P(StoreBackendTest, SingleReadsMatchFileBytes) {
  auto store = open_or_skip(1);
  if (!store) GTEST_SKIP() << "backend refused here: " << skip_reason_;
  EXPECT_EQ(store->file_size(), content_.size());
  IoBuffer buffer;  // reused: reads must not depend on what it held before
  for (const ByteRange& r : random_ranges(60, 5)) {
    ASSERT_TRUE(store->read(r, buffer).is_ok());
    expect_range(buffer, r, io_backend_name(GetParam()));
    if (store->alignment() > 1) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % store->alignment(), 0u);
    }
  }
}

TEST_P(StoreBackendTest, BatchesMatchFileBytes) {
  for (int threads : {1, 3}) {
    auto store = open_or_skip(threads);
    if (!store) GTEST_SKIP() << "backend refused here: " << skip_reason_;
    const std::vector<ByteRange> ranges = random_ranges(37, 9 + static_cast<uint32_t>(threads));
    std::vector<IoBuffer> buffers(ranges.size());
    ASSERT_TRUE(store->read_batch(ranges, buffers).is_ok());
    for (size_t i = 0; i < ranges.size(); ++i) expect_range(buffers[i], ranges[i], "batch item " + std::to_string(i));
    // More ranges than a ring's depth: completions are collected and resubmitted.
    const std::vector<ByteRange> many = random_ranges(150, 21);
    std::vector<IoBuffer> many_buffers(many.size());
    ASSERT_TRUE(store->read_batch(many, many_buffers).is_ok());
    for (size_t i = 0; i < many.size(); ++i) expect_range(many_buffers[i], many[i], "large batch item " + std::to_string(i));
  }
}

TEST_P(StoreBackendTest, ConcurrentBatchesFromManyThreads) {
  auto store = open_or_skip(2);
  if (!store) GTEST_SKIP() << "backend refused here: " << skip_reason_;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0}, failures{0};
  for (uint32_t t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 8; ++round) {
        const std::vector<ByteRange> ranges = random_ranges(12, 100 * t + static_cast<uint32_t>(round));
        std::vector<IoBuffer> buffers(ranges.size());
        if (!store->read_batch(ranges, buffers).is_ok()) {
          ++failures;
          continue;
        }
        for (size_t i = 0; i < ranges.size(); ++i)
          if (ranges[i].length > 0 &&
              std::memcmp(buffers[i].bytes().data(), content_.data() + ranges[i].offset, ranges[i].length) != 0)
            ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(StoreBackendTest, RangePastEndIsCorruptDataNamingFileAndOffset) {
  auto store = open_or_skip(1);
  if (!store) GTEST_SKIP() << "backend refused here: " << skip_reason_;
  const uint64_t size = content_.size();
  IoBuffer buffer;
  for (ByteRange bad : {ByteRange{size, 1}, ByteRange{size - 10, 11}, ByteRange{size + 4096, 0},
                        ByteRange{~uint64_t{0} - 5, 10}}) {
    Status s = store->read(bad, buffer);
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
    EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::to_string(bad.offset)), std::string::npos) << s.message();
  }
  // One bad range fails the whole batch.
  std::vector<ByteRange> ranges = {{0, 10}, {size - 1, 2}};
  std::vector<IoBuffer> buffers(2);
  EXPECT_EQ(store->read_batch(ranges, buffers).code(), ErrorCode::kCorruptData);
  std::vector<IoBuffer> one(1);
  EXPECT_EQ(store->read_batch(ranges, one).code(), ErrorCode::kInvalidArgument);
}

TEST_P(StoreBackendTest, FileShrunkAfterOpenIsIoErrorNamingFileAndOffset) {
  auto store = open_or_skip(1);
  if (!store) GTEST_SKIP() << "backend refused here: " << skip_reason_;
  const uint64_t cut = 65536 + 100;
  std::filesystem::resize_file(path_, cut);
  IoBuffer buffer;
  // Entirely past the new end, and straddling it.
  for (ByteRange r : {ByteRange{cut + 5000, 3000}, ByteRange{cut - 50, 4000}}) {
    Status s = store->read(r, buffer);
    ASSERT_FALSE(s.is_ok()) << "offset " << r.offset;
    EXPECT_EQ(s.code(), ErrorCode::kIoError) << s.to_string();
    EXPECT_NE(s.message().find(path_), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::to_string(r.offset)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("end of file"), std::string::npos) << s.message();
  }
  // What is still there reads fine, up to the new last byte.
  ASSERT_TRUE(store->read({cut - 300, 300}, buffer).is_ok());
  expect_range(buffer, {cut - 300, 300}, "before the cut");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackendTest, ::testing::ValuesIn(kAllBackends), backend_case_name);

TEST(ExpertStore, BackendNamesRoundTrip) {
  for (IoBackend b : kAllBackends) {
    auto parsed = parse_io_backend(io_backend_name(b));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, b);
  }
  EXPECT_EQ(parse_io_backend("mmap").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(io_backend_compiled(IoBackend::kPread));
  EXPECT_TRUE(io_backend_compiled(IoBackend::kDirect));
}

TEST(ExpertStore, OpenErrors) {
  TempDir dir;
  EXPECT_EQ(ExpertStore::open(dir.file("missing.bin")).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(ExpertStore::open(dir.path()).status().code(), ErrorCode::kInvalidArgument);  // a directory
  testing::write_bytes(dir.file("x.bin"), testing::random_bytes(10, 1));
  ExpertStoreOptions o;
  o.batch_threads = 0;
  EXPECT_EQ(ExpertStore::open(dir.file("x.bin"), o).status().code(), ErrorCode::kInvalidArgument);
}

TEST(ExpertStore, EmptyFileReadsEmptyRanges) {
  TempDir dir;
  testing::write_bytes(dir.file("empty.bin"), {});
  for (IoBackend b : kAllBackends) {
    ExpertStoreOptions o;
    o.backend = b;
    auto store = ExpertStore::open(dir.file("empty.bin"), o);
    ASSERT_TRUE(store.is_ok()) << io_backend_name(b) << ": " << store.status().to_string();
    IoBuffer buffer;
    ASSERT_TRUE((*store)->read({0, 0}, buffer).is_ok());
    EXPECT_EQ(buffer.size(), 0u);
    EXPECT_EQ((*store)->read({0, 1}, buffer).code(), ErrorCode::kCorruptData);
  }
}

// tmpfs refused O_DIRECT before Linux 6.6; either it works or the store falls
// back to buffered reads and says so. Both must read the right bytes.
TEST(ExpertStore, DirectOnTmpfsWorksOrFallsBackWithNotice) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm here";
  const std::string path = "/dev/shm/submoe_offload_direct_" + std::to_string(::getpid()) + ".bin";
  const std::vector<uint8_t> content = testing::random_bytes(3 * 4096 + 5, 3);
  testing::write_bytes(path, content);
  struct Remove {
    std::string p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  ExpertStoreOptions o;
  o.backend = IoBackend::kDirect;
  auto store = ExpertStore::open(path, o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  if ((*store)->backend() == IoBackend::kDirect) {
    EXPECT_TRUE((*store)->notice().empty());
  } else {
    EXPECT_EQ((*store)->backend(), IoBackend::kPread);
    EXPECT_NE((*store)->notice().find("O_DIRECT"), std::string::npos) << (*store)->notice();
    o.allow_fallback = false;
    EXPECT_EQ(ExpertStore::open(path, o).status().code(), ErrorCode::kUnsupported);
  }
  std::printf("[ info ] O_DIRECT on /dev/shm: %s\n",
              (*store)->notice().empty() ? "accepted" : (*store)->notice().c_str());
  IoBuffer buffer;
  ASSERT_TRUE((*store)->read({4000, 8000}, buffer).is_ok());
  EXPECT_EQ(std::memcmp(buffer.bytes().data(), content.data() + 4000, 8000), 0);
}

}  // namespace
}  // namespace submoe::offload
