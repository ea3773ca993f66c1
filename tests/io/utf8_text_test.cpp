// read_text_file's UTF-8 check (io/file_util.h) on valid text of every
// sequence length and on each way a byte string can fail strict UTF-8.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "submoe/io/file_util.h"

namespace submoe::io {
namespace {

constexpr size_t kOk = std::string_view::npos;

TEST(Utf8Text, ValidTextOfEverySequenceLengthPasses) {
  EXPECT_EQ(first_invalid_utf8(""), kOk);
  EXPECT_EQ(first_invalid_utf8("plain ASCII\n\ttext"), kOk);
  EXPECT_EQ(first_invalid_utf8("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"), kOk);  // 2, 3 and 4 bytes
  EXPECT_EQ(first_invalid_utf8("\xf4\x8f\xbf\xbf"), kOk);                           // U+10FFFF, the largest
  EXPECT_EQ(first_invalid_utf8("\xed\x9f\xbf\xee\x80\x80"), kOk);                   // U+D7FF and U+E000 around the surrogates
}

TEST(Utf8Text, EveryKindOfBadByteIsFoundAtItsOffset) {
  EXPECT_EQ(first_invalid_utf8(std::string_view("ab\0c", 4)), 2u);       // NUL
  EXPECT_EQ(first_invalid_utf8("ab\x80"), 2u);                           // lone continuation byte
  EXPECT_EQ(first_invalid_utf8("a\xc0\x80"), 1u);                        // overlong NUL
  EXPECT_EQ(first_invalid_utf8("a\xe0\x80\xaf"), 1u);                    // overlong 3-byte
  EXPECT_EQ(first_invalid_utf8("a\xed\xa0\x80"), 1u);                    // surrogate U+D800
  EXPECT_EQ(first_invalid_utf8("a\xf4\x90\x80\x80"), 1u);                // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("ok\xe4\xb8"), 2u);                       // truncated at the end
  EXPECT_EQ(first_invalid_utf8("ok\xe4\x41\x41"), 2u);                   // continuation missing
  EXPECT_EQ(first_invalid_utf8("\xff"), 0u);                             // never valid
  EXPECT_EQ(first_invalid_utf8("\xf8\x88\x80\x80\x80"), 0u);             // 5-byte form
}

// read_text_file: strict by default (the error names the offset and the
// way out), lossy on request: each bad sequence and each NUL becomes U+FFFD
// and the result is valid UTF-8; valid text is returned unchanged either way.
TEST(Utf8Text, ReadTextFileStrictAndLossy) {
  const std::string path = ::testing::TempDir() + "/utf8_text_test.txt";
  auto write = [&](std::string_view bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  write(std::string_view("ok \xc3\xa9 fine", 10));
  for (bool lossy : {false, true}) {
    auto r = read_text_file(path, lossy);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, std::string("ok \xc3\xa9 fine", 10));
  }
  write(std::string_view("a\xff b\0c\xe4\xb8", 8));
  auto strict = read_text_file(path);
  ASSERT_FALSE(strict.is_ok());
  EXPECT_NE(strict.status().message().find("at offset 1"), std::string::npos) << strict.status().to_string();
  EXPECT_NE(strict.status().message().find("--lossy-text"), std::string::npos);
  auto lossy = read_text_file(path, true);
  ASSERT_TRUE(lossy.is_ok()) << lossy.status().to_string();
  EXPECT_EQ(first_invalid_utf8(*lossy), std::string_view::npos);
  EXPECT_EQ(*lossy, "a\xEF\xBF\xBD b\xEF\xBF\xBD" "c\xEF\xBF\xBD");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace submoe::io
