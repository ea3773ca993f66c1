// Parity with Hugging Face `tokenizers` on the committed fixtures: every string
// of tests/fixtures/tokenizers/<style>/cases.json (encoded and decoded by
// tokenizers 0.22 through transformers, tools/make_hf_fixtures.py) and the
// prompts of each tiny checkpoint under tests/fixtures/<arch>/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "submoe/io/tokenizer.h"

namespace submoe::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(SUBMOE_SOURCE_DIR) / "tests" / "fixtures";

json read_json(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

bool ends_with_replacement(const std::string& s) { return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0; }

void check_style(const std::string& style) {
  SCOPED_TRACE(style);
  const fs::path dir = kFixtures / "tokenizers" / style;
  ASSERT_TRUE(fs::exists(dir / "tokenizer.json")) << "missing fixture " << dir;
  auto loaded = Tokenizer::load(dir.string());
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const Tokenizer& tok = *loaded;
  const json meta = read_json(dir / "cases.json");

  EXPECT_EQ(tok.vocab_size(), meta.at("vocab_size").get<int32_t>());
  for (const auto& [content, id] : meta.at("special_tokens").items()) {
    EXPECT_EQ(tok.token_to_id(content), id.get<int32_t>()) << content;
    EXPECT_EQ(tok.id_to_token(id.get<int32_t>()), content);
    EXPECT_TRUE(tok.is_special(id.get<int32_t>())) << content;
  }
  for (const auto& [content, id] : meta.at("added_tokens_non_special").items()) {
    EXPECT_EQ(tok.token_to_id(content), id.get<int32_t>()) << content;
    EXPECT_FALSE(tok.is_special(id.get<int32_t>())) << content;
  }
  if (meta.at("bos_token").is_string()) {
    EXPECT_EQ(tok.bos_id(), tok.token_to_id(meta.at("bos_token").get<std::string>()));
  }
  if (meta.at("eos_token").is_string()) {
    EXPECT_EQ(tok.eos_id(), tok.token_to_id(meta.at("eos_token").get<std::string>()));
  }

  const json& cases = meta.at("cases");
  ASSERT_GE(cases.size(), 200u);
  int failures = 0;
  for (const json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<int32_t>>();
    const auto want_no = c.at("ids_no_special").get<std::vector<int32_t>>();
    const auto got = tok.encode(text, true);
    const auto got_no = tok.encode(text, false);
    const std::string dec = tok.decode(want, false);
    const std::string dec_skip = tok.decode(want, true);
    const std::string dec_no = tok.decode(want_no, false);
    DecodeStream stream(tok, false);
    std::string streamed;
    for (const int32_t id : want) streamed += stream.step(id);
    const bool ok = got == want && got_no == want_no && dec == c.at("decoded") &&
                    dec_skip == c.at("decoded_skip_special") && dec_no == c.at("decoded_no_special") &&
                    (ends_with_replacement(dec) || streamed == dec);
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << "text " << json(text).dump() << "\n  ids want " << show(want) << "\n       got " << show(got)
                    << "\n  no-special want " << show(want_no) << "\n             got " << show(got_no)
                    << "\n  decoded want " << c.at("decoded").dump() << " got " << json(dec).dump()
                    << "\n  skip-special want " << c.at("decoded_skip_special").dump() << " got "
                    << json(dec_skip).dump() << "\n  streamed " << json(streamed).dump();
    }
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " cases";
}

TEST(TokenizerFixture, Gpt2ByteLevelMatchesTokenizers) { check_style("gpt2_bytelevel"); }
TEST(TokenizerFixture, Qwen2ByteLevelMatchesTokenizers) { check_style("qwen2_bytelevel"); }
TEST(TokenizerFixture, LlamaSentencePieceBpeMatchesTokenizers) { check_style("llama_sp_bpe"); }
TEST(TokenizerFixture, O200kByteLevelMatchesTokenizers) { check_style("o200k_bytelevel"); }  // GPT-OSS's pre-tokenizer

TEST(TokenizerFixture, EveryStyleDirectoryIsTested) {
  // A new style added to the fixtures must get its TEST above.
  std::vector<std::string> styles;
  for (const auto& e : fs::directory_iterator(kFixtures / "tokenizers")) {
    if (e.is_directory()) styles.push_back(e.path().filename().string());
  }
  std::sort(styles.begin(), styles.end());
  EXPECT_EQ(styles,
            (std::vector<std::string>{"gpt2_bytelevel", "llama_sp_bpe", "o200k_bytelevel", "qwen2_bytelevel"}));
}

// Each tiny checkpoint's prompts were tokenized by transformers; the model
// parity tests rely on the same ids.
TEST(TokenizerFixture, CheckpointPromptsEncodeToGoldenIds) {
  int checked = 0;
  for (const char* arch : {"mixtral", "olmoe", "qwen2_moe", "qwen3_moe"}) {
    SCOPED_TRACE(arch);
    const fs::path dir = kFixtures / arch;
    ASSERT_TRUE(fs::exists(dir / "golden.json")) << "missing fixture " << dir;
    auto tok = Tokenizer::load(dir.string());
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    const json golden = read_json(dir / "golden.json");
    const json config = read_json(dir / "config.json");
    EXPECT_LE(tok->vocab_size(), config.at("vocab_size").get<int32_t>());
    for (const json& p : golden.at("prompts")) {
      const std::string text = p.at("text").get<std::string>();
      const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
      EXPECT_EQ(show(tok->encode(text, true)), show(ids)) << text;
      EXPECT_EQ(tok->decode(ids, true), text);
      ++checked;
    }
    if (config.contains("eos_token_id") && config.at("eos_token_id").is_number_integer()) {
      EXPECT_EQ(tok->eos_id(), config.at("eos_token_id").get<int32_t>());
    }
    if (config.contains("bos_token_id") && config.at("bos_token_id").is_number_integer() && tok->bos_id()) {
      EXPECT_EQ(tok->bos_id(), config.at("bos_token_id").get<int32_t>());
    }
  }
  EXPECT_GE(checked, 4);
}

// The embedded default model (byte-level BPE trained by
// tools/train_default_model.py): loads, is lossless on the committed held-out
// excerpt, and agrees with its config.json on vocabulary size and EOS.
TEST(TokenizerFixture, EmbeddedDefaultModelTokenizer) {
  const fs::path dir = fs::path(SUBMOE_SOURCE_DIR) / "models" / "default-moe";
  if (!fs::exists(dir / "tokenizer.json")) GTEST_SKIP() << "models/default-moe/tokenizer.json not present";
  auto tok = Tokenizer::load(dir.string());
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const json config = read_json(dir / "config.json");
  EXPECT_LE(tok->vocab_size(), config.at("vocab_size").get<int32_t>());
  if (config.contains("eos_token_id") && config.at("eos_token_id").is_number_integer()) {
    EXPECT_EQ(tok->eos_id(), config.at("eos_token_id").get<int32_t>());
  }
  std::ifstream in(fs::path(SUBMOE_SOURCE_DIR) / "data" / "wikitext2-valid-excerpt.txt");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str().substr(0, 50000);
  const auto ids = tok->encode(text, false);
  EXPECT_GT(ids.size(), text.size() / 8);
  EXPECT_EQ(tok->decode(ids, false), text);
}

}  // namespace
}  // namespace submoe::io
