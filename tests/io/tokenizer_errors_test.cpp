// Malformed or unsupported tokenizer.json files fail to load with a Status
// naming the field; no input crashes the loader (a mutation sweep over a real
// fixture checks the latter).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <unistd.h>
#include <string>

#include "submoe/io/tokenizer.h"

namespace submoe::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json minimal() {
  return json::parse(R"({
    "added_tokens": [{"id": 3, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
                      "single_word": false, "normalized": false}],
    "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
}

// Loads `j` (or raw text) and expects failure with `code` and every fragment.
void expect_error(const std::string& text, ErrorCode code, std::initializer_list<const char*> fragments) {
  auto t = Tokenizer::from_json(text, "test.json");
  ASSERT_FALSE(t.is_ok()) << text.substr(0, 300);
  EXPECT_EQ(t.status().code(), code) << t.status().to_string();
  for (const char* f : fragments) {
    EXPECT_NE(t.status().message().find(f), std::string::npos) << "'" << f << "' not in: " << t.status().message();
  }
  EXPECT_NE(t.status().message().find("test.json"), std::string::npos) << t.status().message();
}
void expect_error(const json& j, ErrorCode code, std::initializer_list<const char*> fragments) {
  expect_error(j.dump(), code, fragments);
}

TEST(TokenizerErrors, MinimalFileLoads) {
  auto t = Tokenizer::from_json(minimal().dump());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->encode("ab<s>ba"), (std::vector<int32_t>{2, 3, 1, 0}));
}

TEST(TokenizerErrors, NotJsonOrNotAnObject) {
  expect_error(std::string("{\"model\": "), ErrorCode::kCorruptData, {"not valid JSON"});
  expect_error(std::string(""), ErrorCode::kCorruptData, {"not valid JSON"});
  expect_error(std::string("[1, 2]"), ErrorCode::kCorruptData, {"expected an object"});
}

TEST(TokenizerErrors, ModelFields) {
  json j = minimal();
  j.erase("model");
  expect_error(j, ErrorCode::kCorruptData, {"model", "missing"});

  j = minimal();
  j["model"]["vocab"] = json::array();
  expect_error(j, ErrorCode::kCorruptData, {"model.vocab", "expected an object, got array"});

  j = minimal();
  j["model"]["vocab"]["c"] = "7";
  expect_error(j, ErrorCode::kCorruptData, {"model.vocab['c']", "expected an integer, got string"});

  j = minimal();
  j["model"]["vocab"]["c"] = -1;
  expect_error(j, ErrorCode::kCorruptData, {"model.vocab['c']", "-1 is outside"});

  j = minimal();
  j["model"]["vocab"]["c"] = int64_t{1} << 40;  // would need a huge id table
  expect_error(j, ErrorCode::kCorruptData, {"model.vocab['c']", "outside"});

  j = minimal();
  j["model"]["type"] = "Unigram";
  expect_error(j, ErrorCode::kUnsupported, {"model.type", "Unigram"});

  j = minimal();
  j["model"]["dropout"] = 0.1;
  expect_error(j, ErrorCode::kUnsupported, {"model.dropout"});

  j = minimal();
  j["model"]["unk_token"] = "<unk>";
  expect_error(j, ErrorCode::kCorruptData, {"unk_token", "<unk>", "not in the vocabulary"});

  j = minimal();
  j["model"]["byte_fallback"] = "yes";
  expect_error(j, ErrorCode::kCorruptData, {"model.byte_fallback", "expected a boolean"});
}

TEST(TokenizerErrors, MergesReferencingUnknownTokens) {
  json j = minimal();
  j["model"]["merges"] = {"a b", "a x"};
  expect_error(j, ErrorCode::kCorruptData, {"model.merges[1]", "'x'", "not in the vocabulary"});

  j = minimal();
  j["model"]["merges"] = {"b a"};
  expect_error(j, ErrorCode::kCorruptData, {"model.merges[0]", "merged token 'ba'"});

  j = minimal();
  j["model"]["merges"] = {"ab"};
  expect_error(j, ErrorCode::kCorruptData, {"model.merges[0]", "two tokens"});

  j = minimal();
  j["model"]["merges"] = json::array({json::array({"a"})});
  expect_error(j, ErrorCode::kCorruptData, {"model.merges[0]", "pair"});

  j = minimal();
  j["model"]["merges"] = json::array({7});
  expect_error(j, ErrorCode::kCorruptData, {"model.merges[0]", "got integer"});
}

TEST(TokenizerErrors, ComponentTypesAndFields) {
  json j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+"}}}, {"behavior", "Isolated"}};
  expect_error(j, ErrorCode::kUnsupported, {"pre_tokenizer.pattern.Regex", "\\w+", "not one of the known patterns"});

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Punctuation"}}}}};
  expect_error(j, ErrorCode::kUnsupported, {"pre_tokenizer.pretokenizers[1]", "Punctuation"});

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  expect_error(j, ErrorCode::kCorruptData, {"pre_tokenizer.behavior", "Sideways"});

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", " "}, {"behavior", "Isolated"}};
  expect_error(j, ErrorCode::kCorruptData, {"pre_tokenizer.pattern"});

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}};
  expect_error(j, ErrorCode::kCorruptData, {"pre_tokenizer.replacement", "one character"});

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}};
  expect_error(j, ErrorCode::kCorruptData, {"pre_tokenizer.prepend_scheme", "sometimes"});

  j = minimal();
  j["pre_tokenizer"] = 5;
  expect_error(j, ErrorCode::kCorruptData, {"pre_tokenizer", "expected an object"});

  j = minimal();
  j["normalizer"] = {{"type", "NFKC"}};
  expect_error(j, ErrorCode::kUnsupported, {"normalizer", "NFKC"});

  j = minimal();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}};
  expect_error(j, ErrorCode::kUnsupported, {"normalizer.pattern", "Regex"});

  j = minimal();
  j["normalizer"] = {{"type", "Prepend"}};
  expect_error(j, ErrorCode::kCorruptData, {"normalizer.prepend", "missing"});

  j = minimal();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j, ErrorCode::kUnsupported, {"decoder", "WordPiece"});

  j = minimal();
  j["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}};
  expect_error(j, ErrorCode::kCorruptData, {"decoder.start"});

  j = minimal();
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{"type", "Fuse"}}}};  // an object, not a list of them
  expect_error(j, ErrorCode::kCorruptData, {"decoder.decoders"});

  j = minimal();
  j["post_processor"] = json::parse(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>"}},
      {"Sequence": {"id": "A"}}], "special_tokens": {}})");
  expect_error(j, ErrorCode::kCorruptData, {"post_processor.single[0]", "<bos>"});

  j = minimal();
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"</s>"}}, {"cls", {"<s>", 0}}};
  expect_error(j, ErrorCode::kCorruptData, {"post_processor.sep"});

  j = minimal();
  j["post_processor"] = {{"type", "TemplateProcessing2"}};
  expect_error(j, ErrorCode::kUnsupported, {"post_processor", "TemplateProcessing2"});
}

TEST(TokenizerErrors, AddedTokens) {
  json j = minimal();
  j["added_tokens"] = {{{"id", 4}}};
  expect_error(j, ErrorCode::kCorruptData, {"added_tokens[0].content", "missing"});

  j = minimal();
  j["added_tokens"] = {7};
  expect_error(j, ErrorCode::kCorruptData, {"added_tokens[0]", "expected an object"});

  j = minimal();
  j["added_tokens"][0]["special"] = 1;
  expect_error(j, ErrorCode::kCorruptData, {"added_tokens[0].special", "expected a boolean"});

  j = minimal();
  j["added_tokens"] = "x";
  expect_error(j, ErrorCode::kCorruptData, {"added_tokens", "expected an array"});
}

TEST(TokenizerErrors, InvalidUtf8InFileStrings) {
  std::string text = minimal().dump();
  const size_t pos = text.find("\"ab\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos + 1, 2, "\xC3\x28");  // truncated two-byte sequence
  auto t = Tokenizer::from_json(text, "test.json");
  EXPECT_FALSE(t.is_ok());
}

TEST(TokenizerErrors, LoadPathsAndConfig) {
  auto missing = Tokenizer::load("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  const fs::path dir = fs::temp_directory_path() / ("submoe_tokenizer_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << minimal().dump();
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": {"content": "<s>"}, "eos_token": "ab"})";
  auto t = Tokenizer::load(dir.string());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->bos_id(), 3);
  EXPECT_EQ(t->eos_id(), 2);

  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "</s>"})";
  auto bad = Tokenizer::load((dir / "tokenizer.json").string());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("eos_token '</s>'"), std::string::npos) << bad.status().message();

  std::ofstream(dir / "tokenizer_config.json") << "{";
  EXPECT_FALSE(Tokenizer::load(dir.string()).is_ok());
  fs::remove_all(dir);
}

// Byte flips, truncations and splices of a real tokenizer.json: each result
// either loads (and then encodes and decodes without crashing) or reports an
// error. Run under the sanitizers this catches out-of-bounds reads.
TEST(TokenizerErrors, MutatedFilesNeverCrash) {
  const fs::path path = fs::path(SUBMOE_SOURCE_DIR) / "tests/fixtures/tokenizers/llama_sp_bpe/tokenizer.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string original = ss.str();
  std::mt19937 rng(7);
  int loaded = 0, rejected = 0;
  const char* alphabet = "{}[]\":,0123456789-tfn \\ab";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = original;
    const int kind = trial % 3;
    if (kind == 0) {
      for (int k = 0; k < 3; ++k) text[rng() % text.size()] = alphabet[rng() % 25];
    } else if (kind == 1) {
      text.resize(rng() % text.size());
    } else {
      const size_t a = rng() % text.size(), b = rng() % text.size();
      text.insert(a, original.substr(b, rng() % 64));
    }
    auto t = Tokenizer::from_json(text);
    if (!t.is_ok()) {
      ++rejected;
      EXPECT_FALSE(t.status().message().empty());
      continue;
    }
    ++loaded;
    const auto ids = t->encode("Hello <s> w\xC3\xB6rld \xF0\x9F\x98\x80 12 \xFF", true);
    (void)t->decode(ids, false);
    (void)t->decode(std::vector<int32_t>{-5, 0, 1 << 30}, true);
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(loaded + rejected, 299);
}

}  // namespace
}  // namespace submoe::io
