// A mapped safetensors file truncated while open: touching a vanished page is
// SIGBUS; with the handler installed it becomes a message naming the file and
// exit status 1 (in a forked child, gtest's death test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "io/io_test_util.h"
#include "submoe/io/mapped_file_faults.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::TempDir;

// 64 KiB of F32 so the data spans whole pages past the header's.
std::string big_file() {
  const std::string header = R"({"w": {"dtype": "F32", "shape": [16384], "data_offsets": [0, 65536]}})";
  return testing::raw_safetensors(header, std::string(65536, '\x01'));
}

void open_truncate_touch(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  if (!f.is_ok()) std::_Exit(3);
  const TensorView* w = (*f)->find("w");
  if (::truncate(path.c_str(), 16) != 0) std::_Exit(4);
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < w->nbytes; i += 4096) sink = static_cast<uint8_t>(sink + w->data[i]);
  std::_Exit(sink == 255 ? 5 : 6);  // not reached: the first touch past the file faults
}

TEST(MappedFileFaultsDeathTest, TruncatedFileIsAnErrorMessageNotSigbus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  testing::write_bytes(path, big_file());
  EXPECT_EXIT(
      {
        install_mapped_file_fault_handler();
        open_truncate_touch(path);
      },
      ::testing::ExitedWithCode(1), "m.safetensors changed while in use: byte [0-9]+ is no longer in the file");
}

TEST(MappedFileFaults, SlotsAreReused) {
  // Registering and unregistering many mappings never runs out of slots.
  for (int i = 0; i < 5000; ++i) {
    const int slot = register_mapping(this, 1, "x");
    ASSERT_GE(slot, 0);
    unregister_mapping(slot);
  }
}

}  // namespace
}  // namespace submoe::io
