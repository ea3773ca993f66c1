// Unicode and text units of the tokenizer against independent references:
// UTF-8 repair against Python's bytes.decode("utf-8", "replace"); NFC / NFD
// against unicodedata2 16.0 goldens plus normalization-form identities; the
// pre-tokenizer regex matchers against splits produced by tokenizers 0.22.2's
// Oniguruma; streaming decode against whole-sequence decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "io/tokenizer_regex.h"
#include "io/unicode_normalize.h"
#include "io/unicode_props.h"
#include "io/unicode_utf8.h"
#include "submoe/io/tokenizer.h"

namespace submoe::io {
namespace {

TEST(TokenizerUnicode, Utf8RepairMatchesPythonReplace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
    {"abc", "abc"},
    {"\xff", "\xef\xbf\xbd"},
    {"\xc3", "\xef\xbf\xbd"},
    {"\xc3(", "\xef\xbf\xbd("},
    {"\xe2\x82", "\xef\xbf\xbd"},
    {"\xe2\x82(", "\xef\xbf\xbd("},
    {"\xf0\x9f\x98", "\xef\xbf\xbd"},
    {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
    {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
    {"\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"\xf5\x80", "\xef\xbf\xbd\xef\xbf\xbd"},
    {"\x80\x80""a", "\xef\xbf\xbd\xef\xbf\xbd""a"},
    {"a\xf0\x9f""b", "a\xef\xbf\xbd""b"},
    {"\xef\xbf\xbd", "\xef\xbf\xbd"},
    {"\xf8\x88\x80\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"\xe1\x80\xe2\xf0\x91\x92\xf1\xbf""A", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd""A"},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(utf8_repair(in), want) << testing::PrintToString(in);
    EXPECT_EQ(utf8_is_valid(in), in == want) << testing::PrintToString(in);
  }
}

TEST(TokenizerUnicode, Utf8RoundTripsEveryScalarValue) {
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    utf8_append(s, cp);
    ASSERT_TRUE(utf8_is_valid(s)) << static_cast<uint32_t>(cp);
    size_t pos = 0;
    ASSERT_EQ(utf8_next(s, pos), cp);
    ASSERT_EQ(pos, s.size());
    ASSERT_EQ(utf8_length(static_cast<uint8_t>(s[0])), s.size());
  }
}

TEST(TokenizerUnicode, CharacterClasses) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0x017F));   // long s
  EXPECT_TRUE(is_letter(0x65E5));   // CJK
  EXPECT_TRUE(is_letter(0x1C89));   // Cyrillic, new in Unicode 16 (Oniguruma in tokenizers knows it)
  EXPECT_FALSE(is_letter(0x0301));  // combining mark
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0x00B2));   // superscript two (No)
  EXPECT_TRUE(is_number(0x216B));   // roman numeral twelve (Nl)
  EXPECT_TRUE(is_number(0x0663));   // Arabic-Indic three (Nd)
  EXPECT_FALSE(is_number('a'));
  for (const char32_t ws : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029,
                            0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(is_whitespace(ws)) << static_cast<uint32_t>(ws);
  }
  // Python's str.isspace counts these; Oniguruma's \s does not.
  for (const char32_t not_ws : {0x1C, 0x1F, 0x200B, 0x180E, 0xFEFF}) EXPECT_FALSE(is_whitespace(not_ws)) << static_cast<uint32_t>(not_ws);
  EXPECT_EQ(combining_class(0x0301), 230);
  EXPECT_EQ(combining_class(0x0327), 202);
  EXPECT_EQ(combining_class('a'), 0);
  EXPECT_TRUE(is_word_char('_'));
  EXPECT_TRUE(is_word_char(0x0301));
  EXPECT_FALSE(is_word_char('-'));
  // The ASCII fast table agrees with the generated runs.
  for (char32_t c = 0; c < 128; ++c) EXPECT_EQ(char_class(c), char_class_slow(c)) << static_cast<uint32_t>(c);
}

TEST(TokenizerUnicode, NormalizationGoldens) {
  struct Case {
    std::string in, nfc, nfd;
  };
  const std::vector<Case> cases = {
    {"e\xcc\x81", "\xc3\xa9", "e\xcc\x81"},
    {"\xc3\xa9", "\xc3\xa9", "e\xcc\x81"},
    {"A\xcc\x8a", "\xc3\x85", "A\xcc\x8a"},
    {"\xe2\x84\xab", "\xc3\x85", "A\xcc\x8a"},
    {"\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc", "\xe0\xa4\x95\xe0\xa4\xbc"},
    {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"},
    {"\xea\xb0\x81", "\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"},
    {"\xed\x95\x9c", "\xed\x95\x9c", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"},
    {"a\xcc\x81\xcc\xa7", "\xc3\xa1\xcc\xa7", "a\xcc\xa7\xcc\x81"},
    {"a\xcc\xa7\xcc\x81", "\xc3\xa1\xcc\xa7", "a\xcc\xa7\xcc\x81"},
    {"\xe1\xb8\x8b\xcc\xa3", "\xe1\xb8\x8d\xcc\x87", "d\xcc\xa3\xcc\x87"},
    {"q\xcc\x87\xcc\xa3", "q\xcc\xa3\xcc\x87", "q\xcc\xa3\xcc\x87"},
    {"\xcc\x81""a", "\xcc\x81""a", "\xcc\x81""a"},
    {"\xc3\x85\xcc\x81", "\xc7\xba", "A\xcc\x8a\xcc\x81"},
    {"\xe0\xbd\xb3", "\xe0\xbd\xb1\xe0\xbd\xb2", "\xe0\xbd\xb1\xe0\xbd\xb2"},
    {"\xe2\x84\xa6", "\xce\xa9", "\xce\xa9"},
    {"\xef\xac\x81", "\xef\xac\x81", "\xef\xac\x81"},
    {"\xe1\x84\x80\xe1\x85\xa1\xcc\x81\xe1\x86\xa8", "\xea\xb0\x80\xcc\x81\xe1\x86\xa8", "\xe1\x84\x80\xe1\x85\xa1\xcc\x81\xe1\x86\xa8"},
    {"\xf0\x9d\x85\x9e", "\xf0\x9d\x85\x97\xf0\x9d\x85\xa5", "\xf0\x9d\x85\x97\xf0\x9d\x85\xa5"},
    {"\xe0\xad\x87\xe0\xac\xbe", "\xe0\xad\x8b", "\xe0\xad\x87\xe0\xac\xbe"},
    {"x\xcd\x85\xcc\x81\xcc\xb4", "x\xcc\xb4\xcc\x81\xcd\x85", "x\xcc\xb4\xcc\x81\xcd\x85"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(unicode_normalize(c.in, NormalForm::kNFC), c.nfc) << testing::PrintToString(c.in);
    EXPECT_EQ(unicode_normalize(c.in, NormalForm::kNFD), c.nfd) << testing::PrintToString(c.in);
  }
}

// NFD(NFC(x)) == NFD(x), NFC(NFD(x)) == NFC(x), both idempotent, NFD output
// has every composite decomposed, on random mixes of starters, marks and jamo.
TEST(TokenizerUnicode, NormalizationIdentitiesOnRandomText) {
  const std::vector<char32_t> pool = {'a', 'e', 'o', 'A', 'K', 0xC5, 0xE9, 0x1E0B, 0x212B, 0x0958, 0x0301, 0x0327,
                                      0x0323, 0x0307, 0x0345, 0x0334, 0x05BC, 0x0F71, 0x0F72, 0x1100, 0x1161,
                                      0x11A8, 0xAC00, 0xD55C, 0x0B47, 0x0B3E, 0x3099, 0x304B, 0x1D15E, ' '};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 10);
    for (int k = 0; k < n; ++k) utf8_append(s, pool[rng() % pool.size()]);
    const std::string nfc = unicode_normalize(s, NormalForm::kNFC);
    const std::string nfd = unicode_normalize(s, NormalForm::kNFD);
    ASSERT_TRUE(utf8_is_valid(nfc) && utf8_is_valid(nfd));
    ASSERT_EQ(unicode_normalize(nfc, NormalForm::kNFD), nfd) << testing::PrintToString(s);
    ASSERT_EQ(unicode_normalize(nfd, NormalForm::kNFC), nfc) << testing::PrintToString(s);
    ASSERT_EQ(unicode_normalize(nfc, NormalForm::kNFC), nfc) << testing::PrintToString(s);
    ASSERT_EQ(unicode_normalize(nfd, NormalForm::kNFD), nfd) << testing::PrintToString(s);
    size_t pos = 0;
    while (pos < nfd.size()) {
      const char32_t c = utf8_next(nfd, pos);
      ASSERT_TRUE(canonical_decomposition(c).empty() && !(c >= 0xAC00 && c <= 0xD7A3)) << testing::PrintToString(s);
    }
  }
}

std::vector<std::string> split(RegexPatternId id, const std::string& text) {
  std::vector<std::pair<size_t, size_t>> m;
  regex_find_all(id, text, m);
  std::vector<std::string> out;
  for (const auto& [b, e] : m) out.push_back(text.substr(b, e - b));
  return out;
}

using Splits = std::vector<std::pair<std::string, std::vector<std::string>>>;

TEST(TokenizerRegex, Gpt2MatchesOniguruma) {
  const Splits cases = {
    {"I'm   here,\n\n  aren't  YOU'LL 12345 ok?!", {"I", "'m", "  ", " here", ",", "\n\n ", " aren", "'t", " ", " YOU", "'", "LL", " 12345", " ok", "?!"}},
    {"hello\tworld\r\n\r\n  \nx", {"hello", "\t", "world", "\r\n\r\n  ", "\n", "x"}},
    {"'s'S'\xc5\xbf 'Re x'll", {"'s", "'", "S", "'", "\xc5\xbf", " '", "Re", " x", "'ll"}},
    {"price: $1,234.56...  \xc2\xa0\xe3\x80\x80""end", {"price", ":", " $", "1", ",", "234", ".", "56", "...", "  \xc2\xa0", "\xe3\x80\x80", "end"}},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x80\x81\xe4\xb8\xad\xe6\x96\x87\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd x", {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88", "\xe3\x80\x81", "\xe4\xb8\xad\xe6\x96\x87", "\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", " x"}},
    {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd9\xa1\xd9\xa2\xd9\xa3 \xe2\x85\xab\xc2\xb2 ", {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7", " \xd9\xa1\xd9\xa2\xd9\xa3", " \xe2\x85\xab\xc2\xb2", " "}},
    {"a\xcc\x81""b \xe2\x80\x8d""c\xe2\x80\xa8""d", {"a", "\xcc\x81", "b", " \xe2\x80\x8d", "c", "\xe2\x80\xa8", "d"}},
    {"   ", {"   "}},
    {"x  \n", {"x", "  \n"}},
    {"", {}},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(split(RegexPatternId::kGpt2, text), want) << text;
}

TEST(TokenizerRegex, Qwen2MatchesOniguruma) {
  const Splits cases = {
    {"I'm   here,\n\n  aren't  YOU'LL 12345 ok?!", {"I", "'m", "  ", " here", ",\n\n", " ", " aren", "'t", " ", " YOU", "'LL", " ", "1", "2", "3", "4", "5", " ok", "?!"}},
    {"hello\tworld\r\n\r\n  \nx", {"hello", "\tworld", "\r\n\r\n  \n", "x"}},
    {"'s'S'\xc5\xbf 'Re x'll", {"'s", "'S", "'\xc5\xbf", " '", "Re", " x", "'ll"}},
    {"price: $1,234.56...  \xc2\xa0\xe3\x80\x80""end", {"price", ":", " $", "1", ",", "2", "3", "4", ".", "5", "6", "...", "  \xc2\xa0", "\xe3\x80\x80""end"}},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x80\x81\xe4\xb8\xad\xe6\x96\x87\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd x", {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88", "\xe3\x80\x81\xe4\xb8\xad\xe6\x96\x87", "\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", " x"}},
    {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd9\xa1\xd9\xa2\xd9\xa3 \xe2\x85\xab\xc2\xb2 ", {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7", " ", "\xd9\xa1", "\xd9\xa2", "\xd9\xa3", " ", "\xe2\x85\xab", "\xc2\xb2", " "}},
    {"a\xcc\x81""b \xe2\x80\x8d""c\xe2\x80\xa8""d", {"a", "\xcc\x81""b", " \xe2\x80\x8d", "c", "\xe2\x80\xa8""d"}},
    {"   ", {"   "}},
    {"x  \n", {"x", "  \n"}},
    {"", {}},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(split(RegexPatternId::kQwen2, text), want) << text;
}

TEST(TokenizerRegex, Cl100kMatchesOniguruma) {
  const Splits cases = {
    {"I'm   here,\n\n  aren't  YOU'LL 12345 ok?!", {"I", "'m", "  ", " here", ",\n\n", " ", " aren", "'t", " ", " YOU", "'LL", " ", "123", "45", " ok", "?!"}},
    {"hello\tworld\r\n\r\n  \nx", {"hello", "\tworld", "\r\n\r\n  \n", "x"}},
    {"'s'S'\xc5\xbf 'Re x'll", {"'s", "'S", "'\xc5\xbf", " '", "Re", " x", "'ll"}},
    {"price: $1,234.56...  \xc2\xa0\xe3\x80\x80""end", {"price", ":", " $", "1", ",", "234", ".", "56", "...", "  \xc2\xa0", "\xe3\x80\x80""end"}},
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x80\x81\xe4\xb8\xad\xe6\x96\x87\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd x", {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88", "\xe3\x80\x81\xe4\xb8\xad\xe6\x96\x87", "\xef\xbc\x81\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", " x"}},
    {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd9\xa1\xd9\xa2\xd9\xa3 \xe2\x85\xab\xc2\xb2 ", {"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7", " ", "\xd9\xa1\xd9\xa2\xd9\xa3", " ", "\xe2\x85\xab\xc2\xb2", " "}},
    {"a\xcc\x81""b \xe2\x80\x8d""c\xe2\x80\xa8""d", {"a", "\xcc\x81""b", " \xe2\x80\x8d", "c", "\xe2\x80\xa8""d"}},
    {"   ", {"   "}},
    {"x  \n", {"x", "  \n"}},
    {"", {}},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(split(RegexPatternId::kCl100k, text), want) << text;
}

// o200k (GPT-OSS) against the splits `tokenizers` itself produced
// (tests/fixtures/tokenizers/o200k_split_goldens.json, tools/make_regex_goldens.py):
// hand-picked texts and 4000 random ones over every character kind the pattern
// distinguishes (the five letter categories, marks, numbers, newlines, '/').
TEST(TokenizerRegex, O200kMatchesTokenizersGoldens) {
  const std::filesystem::path path =
      std::filesystem::path(SUBMOE_SOURCE_DIR) / "tests/fixtures/tokenizers/o200k_split_goldens.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j.at("pattern").get<std::string>(), regex_pattern_string(RegexPatternId::kO200k));
  size_t checked = 0;
  for (const auto& c : j.at("cases")) {
    const std::string text = c.at("text");
    ASSERT_EQ(split(RegexPatternId::kO200k, text), c.at("pieces").get<std::vector<std::string>>()) << text;
    ++checked;
  }
  EXPECT_GT(checked, 4000u);
}

TEST(TokenizerRegex, PatternsAreRecognisedExactly) {
  for (const auto id : {RegexPatternId::kGpt2, RegexPatternId::kQwen2, RegexPatternId::kCl100k, RegexPatternId::kO200k}) {
    auto r = recognise_regex(regex_pattern_string(id));
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, id);
  }
  std::string almost(regex_pattern_string(RegexPatternId::kGpt2));
  almost.pop_back();
  auto r = recognise_regex(almost);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find(almost), std::string::npos);
}

// The matches tile the text (every character belongs to exactly one match)
// on random text of the character kinds the patterns distinguish.
TEST(TokenizerRegex, MatchesTileRandomText) {
  const std::vector<char32_t> pool = {'a', 'Z', 0xE9, 0x65E5, '1', 0xB2, ' ', '\t', '\n', '\r', 0xA0, 0x3000,
                                      '\'', 's', 'L', '.', '!', 0x1F600, 0x0301, 0x200D};
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s;
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) utf8_append(s, pool[rng() % pool.size()]);
    for (const auto id : {RegexPatternId::kGpt2, RegexPatternId::kQwen2, RegexPatternId::kCl100k, RegexPatternId::kO200k}) {
      std::vector<std::pair<size_t, size_t>> m;
      regex_find_all(id, s, m);
      size_t at = 0;
      for (const auto& [b, e] : m) {
        ASSERT_EQ(b, at);
        ASSERT_GT(e, b);
        at = e;
      }
      ASSERT_EQ(at, s.size());
    }
  }
}

// Streaming decode emits the whole-sequence decode piece by piece, holding
// back bytes of an unfinished character, for both decoder families.
TEST(TokenizerStream, StreamedTextEqualsWholeDecode) {
  const std::filesystem::path fixtures = std::filesystem::path(SUBMOE_SOURCE_DIR) / "tests/fixtures/tokenizers";
  const std::string text = "Hello  w\xC3\xB6rld \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xE6\x97\xA5\xE6\x9C\xAC 12\n\n x";
  for (const char* style : {"gpt2_bytelevel", "qwen2_bytelevel", "llama_sp_bpe"}) {
    SCOPED_TRACE(style);
    auto tok = Tokenizer::load((fixtures / style).string());
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    const auto ids = tok->encode(text, true);
    DecodeStream stream(*tok, true);
    std::string streamed;
    for (const int32_t id : ids) {
      const std::string piece = stream.step(id);
      EXPECT_TRUE(utf8_is_valid(piece));
      EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "emitted half a character";
      streamed += piece;
    }
    EXPECT_EQ(streamed, tok->decode(ids, true));
    EXPECT_EQ(streamed, text);
  }
}

// Invalid UTF-8 input is encoded as its repaired text.
TEST(TokenizerStream, InvalidUtf8InputIsRepairedFirst) {
  const std::filesystem::path fixtures = std::filesystem::path(SUBMOE_SOURCE_DIR) / "tests/fixtures/tokenizers";
  for (const char* style : {"gpt2_bytelevel", "llama_sp_bpe"}) {
    auto tok = Tokenizer::load((fixtures / style).string());
    ASSERT_TRUE(tok.is_ok());
    const std::string bad = "ab\xFF\xC3(cd\xF0\x9F";
    EXPECT_EQ(tok->encode(bad), tok->encode(utf8_repair(bad)));
    EXPECT_EQ(tok->decode(tok->encode(bad, false)), "ab\xEF\xBF\xBD\xEF\xBF\xBD(cd\xEF\xBF\xBD");
  }
}

}  // namespace
}  // namespace submoe::io
