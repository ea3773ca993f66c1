#include "submoe/core/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace submoe {
namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.update("abc");
  EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 two_blocks;
  two_blocks.update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(two_blocks.hex_digest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 million;
  const std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(a);
  EXPECT_EQ(million.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Splitting the input at any points gives the same digest (buffering logic).
TEST(Sha256, StreamingSplitsAgree) {
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 1000u}) {
    std::vector<uint8_t> data(n);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    const std::string whole = sha256_hex(data);
    Sha256 h;
    size_t i = 0;
    while (i < n) {
      const size_t take = std::min<size_t>(n - i, 1 + rng() % 70);
      h.update({data.data() + i, take});
      i += take;
    }
    EXPECT_EQ(h.hex_digest(), whole) << n;
  }
}

TEST(Sha256, FileMissingIsAnError) {
  auto r = sha256_file("/nonexistent/dir/file");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("/nonexistent/dir/file"), std::string::npos);
}

}  // namespace
}  // namespace submoe
