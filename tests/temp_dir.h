// A per-test temporary directory (mkdtemp under the system temp dir), removed
// with everything in it when the object goes out of scope. Shared by every test
// suite that writes files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace submoe::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "submoe-test-XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr) << "cannot create " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Path of `name` inside the directory.
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  // Writes `text` to `name` (binary) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::string path_;
};

}  // namespace submoe::testing
