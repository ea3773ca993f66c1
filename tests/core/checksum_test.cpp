// XXH3-64 against reference digests computed with the python-xxhash package
// (its own bundled xxHash build), and the hex spelling's round trip and errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "submoe/core/checksum.h"

namespace submoe {
namespace {

TEST(Checksum, MatchesReferenceDigests) {
  std::vector<uint8_t> ramp;
  for (int rep = 0; rep < 5; ++rep)
    for (int i = 0; i < 256; ++i) ramp.push_back(static_cast<uint8_t>(i));
  std::string rep;
  for (int i = 0; i < 1000; ++i) rep += "submoe";
  EXPECT_EQ(checksum_hex(xxh3_64(std::string_view(""))), "2d06800538d394c2");
  EXPECT_EQ(checksum_hex(xxh3_64(std::string_view("a"))), "e6c632b61e964e1f");
  EXPECT_EQ(checksum_hex(xxh3_64(std::string_view("abc"))), "78af5f94892f3950");
  EXPECT_EQ(checksum_hex(xxh3_64(ramp)), "4844b009e164352e");
  EXPECT_EQ(checksum_hex(xxh3_64(rep)), "a7adb502df98ea9b");
}

TEST(Checksum, EverySingleByteFlipChangesTheDigest) {
  std::vector<uint8_t> bytes(3000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  const uint64_t base = xxh3_64(bytes);
  for (size_t i = 0; i < bytes.size(); i += 7) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      bytes[i] ^= mask;
      EXPECT_NE(xxh3_64(bytes), base) << "byte " << i << " mask " << int(mask);
      bytes[i] ^= mask;
    }
  }
}

TEST(Checksum, HexRoundTripAndErrors) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{0x0123456789abcdefULL}}) {
    auto back = parse_checksum_hex(checksum_hex(v));
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(checksum_hex(0).size(), 16u);
  for (const char* bad : {"", "123", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg", " 123456789abcdef"})
    EXPECT_FALSE(parse_checksum_hex(bad).is_ok()) << bad;
}

}  // namespace
}  // namespace submoe
