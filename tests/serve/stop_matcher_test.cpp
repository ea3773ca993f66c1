// StopMatcher against a byte-at-a-time oracle: for random texts cut into random
// pieces, what push() returns (plus flush() without a match) equals the text up
// to the stop string that generation would have stopped at, and no returned byte is ever
// taken back (text is only released once no stop string can start in it).
#include "submoe/serve/generation.h"

#include <gtest/gtest.h>

#include <random>

namespace submoe::serve {
namespace {

// Byte-at-a-time generation: the first prefix that contains a stop string ends
// the text, which is cut at the earliest stop string occurrence in that prefix.
std::string oracle(const std::string& text, const std::vector<std::string>& stops, bool* matched) {
  for (size_t n = 1; n <= text.size(); ++n) {
    const std::string prefix = text.substr(0, n);
    size_t cut = std::string::npos;
    for (const auto& s : stops) cut = std::min(cut, prefix.find(s));
    if (cut != std::string::npos) {
      *matched = true;
      return text.substr(0, cut);
    }
  }
  *matched = false;
  return text;
}

TEST(StopMatcher, RandomPiecesMatchTheByteAtATimeOracle) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab\xc3\xa9 \n";  // includes a two-byte character
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<std::string> stops;
    const int n_stops = static_cast<int>(rng() % 4);
    for (int i = 0; i < n_stops; ++i) {
      std::string s;
      const int len = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      stops.push_back(s);
    }
    std::string text;
    const int len = static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) text += alphabet[rng() % alphabet.size()];
    bool want_match = false;
    const std::string want = oracle(text, stops, &want_match);

    StopMatcher m(stops);
    std::string got;
    size_t pos = 0;
    while (pos < text.size() && !m.matched()) {
      const size_t piece = std::min(text.size() - pos, static_cast<size_t>(rng() % 5));
      got += m.push(std::string_view(text).substr(pos, piece));
      pos += piece;
      ASSERT_EQ(got, want.substr(0, std::min(got.size(), want.size())))
          << "released text that the oracle cuts (trial " << trial << ") text=" << ::testing::PrintToString(text) << " stops=" << ::testing::PrintToString(stops) << " piece_end=" << pos;
      ASSERT_LE(got.size(), want.size());
    }
    if (!m.matched()) got += m.flush();
    EXPECT_EQ(m.matched(), want_match) << "trial " << trial;
    EXPECT_EQ(got, want) << "trial " << trial << " text '" << text << "'";
  }
}

TEST(StopMatcher, HoldsBackOnlyWhatMayStartAStopString) {
  StopMatcher m({"###"});
  EXPECT_EQ(m.push("abc#"), "abc");  // '#' may begin "###"
  EXPECT_EQ(m.push("#x"), "##x");    // it did not
  EXPECT_EQ(m.push("y##"), "y");
  EXPECT_EQ(m.push("#tail"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, NoStopStringsPassEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.matched());
}

TEST(GenerationParams, ValidateRefusesBadValues) {
  GenerationParams p;
  EXPECT_TRUE(validate(p).is_ok());
  p.max_tokens = -1;
  EXPECT_EQ(validate(p).code(), ErrorCode::kInvalidArgument);
  p = {};
  p.stop = {""};
  EXPECT_EQ(validate(p).code(), ErrorCode::kInvalidArgument);
  p = {};
  p.stop.assign(17, "x");
  EXPECT_EQ(validate(p).code(), ErrorCode::kInvalidArgument);
  p = {};
  p.sampling.top_p = 0;
  EXPECT_EQ(validate(p).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace submoe::serve
