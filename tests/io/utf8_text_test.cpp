// read_text_file's UTF-8 check (io/file_util.h) on valid text of every
// sequence length and on each way a byte string can fail strict UTF-8.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace submoe::io
