#include "submoe/eval/roofline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "submoe/eval/projection.h"

namespace submoe::eval {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() / ("submoe-roofline-test-" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path_), {})); }

 private:
  fs::path path_;
};

bool positive(double v) { return std::isfinite(v) && v > 0; }

// --quick runs every measurement end to end; speeds are not asserted (shared
// machine), only that each figure exists, is positive and finite, and that the
// JSON feeds the projection.
TEST(Roofline, QuickRunProducesPositiveFiniteFigures) {
  ScratchDir dir;
  RooflineOptions o;
  o.dir = dir.str();
  apply_quick_roofline(&o);
  o.gpu = false;
  auto r = run_roofline(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(dir.entries(), 0u) << "the test file must be removed";
  const StorageRoofline& s = r->storage;
  EXPECT_EQ(s.file_bytes, 64u << 20);
  EXPECT_TRUE(positive(s.write_gbps));
  EXPECT_TRUE(positive(s.sequential_read_gbps));
  ASSERT_EQ(s.random_read.size(), 20u);
  for (const RandomReadCell& c : s.random_read) {
    EXPECT_TRUE(positive(c.gbps)) << c.block_bytes << " x " << c.threads;
    EXPECT_GE(c.reads, c.threads);
  }
  EXPECT_EQ(s.direct_io, s.io_mode == "O_DIRECT");
  if (!s.direct_io) {
    EXPECT_FALSE(s.note.empty());
  }
  for (double v : {r->dram.copy_gbps_1t, r->dram.copy_gbps_nt, r->dram.read_gbps_1t, r->dram.read_gbps_nt}) {
    EXPECT_TRUE(positive(v));
  }
  ASSERT_EQ(r->kernels.size(), 6u);
  for (const KernelRoofline& k : r->kernels) {
    EXPECT_TRUE(positive(k.gweights_per_s)) << k.codec << " batch " << k.batch;
    EXPECT_TRUE(positive(k.bits_per_weight)) << k.codec;
    EXPECT_FALSE(k.kernel.empty());
  }
  EXPECT_FALSE(r->gpu.present);
  EXPECT_FALSE(r->gpu.note.empty());

  const std::string table = roofline_table(*r);
  EXPECT_NE(table.find("random read"), std::string::npos);
  auto limits = host_limits_from_roofline_json(roofline_json(*r), 2e6, "qmoe", "quick");
  ASSERT_TRUE(limits.is_ok()) << limits.status().to_string();
  EXPECT_EQ(limits->storage_block_bytes, 1u << 20);
  EXPECT_TRUE(positive(limits->storage_read_gbps));
  EXPECT_TRUE(positive(limits->kernel_gweights_b1));
  EXPECT_TRUE(positive(limits->kernel_gweights_b32));
  EXPECT_TRUE(positive(limits->baseline_kernel_gweights_b1));
}

TEST(Roofline, StorageErrorsAreStatuses) {
  RooflineOptions o;
  apply_quick_roofline(&o);
  o.dir = "/nonexistent-submoe-dir/x";
  EXPECT_FALSE(measure_storage(o, {}).is_ok());
  ScratchDir dir;
  o.dir = dir.str();
  o.block_bytes = {1000};
  EXPECT_FALSE(measure_storage(o, {}).is_ok());
  o.block_bytes = {65536};
  o.io_threads = {0};
  EXPECT_FALSE(measure_storage(o, {}).is_ok());
  o.io_threads = {1};
  o.file_mb = 1;
  EXPECT_FALSE(measure_storage(o, {}).is_ok());
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace submoe::eval
