// The chat templates of real MoE models rendered by submoe against transformers'
// apply_chat_template (tests/fixtures/chat_templates/cases.json, made by
// tools/make_chat_template_fixtures.py): Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE,
// DeepSeek-R1, DeepSeek-V3.1 and Kimi-K2-Instruct (the deepseek_v3 architecture),
// GPT-OSS and the embedded model, over ten conversations with and without the generation prompt, tools and
// template keyword arguments, byte for byte, refusals included.
#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>
#include <map>
#include <sstream>

#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/serve/chat_template.h"

namespace submoe::serve {
namespace {

using nlohmann::ordered_json;

std::string source_path(const std::string& relative) { return std::string(SUBMOE_SOURCE_DIR) + "/" + relative; }

std::string read(const std::string& relative) {
  Result<std::string> text = io::read_file_to_string(source_path(relative));
  EXPECT_TRUE(text.is_ok()) << relative;
  return text.is_ok() ? *text : std::string();
}

// The committed template file of a fixture model; the embedded model's from its
// own directory (its tokenizer_config.json).
Result<ChatTemplate> load_case_template(const std::string& name) {
  if (name != "default-moe")
    return ChatTemplate::from_source(read("tests/fixtures/chat_templates/" + name + ".jinja"), name,
                                     ordered_json::object());
  Result<std::optional<ChatTemplate>> m = ChatTemplate::from_model_dir(source_path("models/default-moe"));
  if (!m.is_ok()) return m.status();
  if (!m->has_value()) return not_found("models/default-moe has no chat template");
  return std::move(**m);
}

// gpt-oss prints strftime_now("%Y-%m-%d"): the golden holds the day it was made.
std::string with_today(std::string expected, const std::string& generated_on) {
  char today[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(today, sizeof(today), "%Y-%m-%d", &local);
  for (size_t at = expected.find(generated_on); at != std::string::npos; at = expected.find(generated_on, at + 1))
    expected.replace(at, generated_on.size(), today);
  return expected;
}

TEST(ChatTemplate, RealTemplatesRenderAsTransformersDoes) {
  const ordered_json fixture = ordered_json::parse(read("tests/fixtures/chat_templates/cases.json"));
  std::map<std::string, int> rendered_per_template;
  int refused = 0;
  for (const auto& c : fixture["cases"]) {
    const std::string name = c["template"].get<std::string>();
    SCOPED_TRACE(name + " / " + c["conversation"].get<std::string>() +
                 (c["add_generation_prompt"].get<bool>() ? " + generation prompt" : ""));
    Result<ChatTemplate> t = load_case_template(name);
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    ChatTemplateInput input;
    Result<ordered_json> messages = normalize_chat_messages(c["messages"]);
    ASSERT_TRUE(messages.is_ok()) << messages.status().message();
    input.messages = *messages;
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    input.template_kwargs = c["variables"];
    bool was_refused = false;
    Result<std::string> out = t->render(input, &was_refused);
    if (c.contains("expected")) {
      ASSERT_TRUE(out.is_ok()) << out.status().message();
      EXPECT_EQ(*out, with_today(c["expected"].get<std::string>(), fixture["strftime_date"].get<std::string>()));
      ++rendered_per_template[name];
    } else {
      ASSERT_FALSE(out.is_ok()) << "transformers failed (" << c["error"].get<std::string>() << "), submoe rendered "
                                << *out;
      EXPECT_EQ(was_refused, c["raised_by_template"].get<bool>()) << out.status().message();
      if (was_refused) {
        EXPECT_NE(out.status().message().find(c["error"].get<std::string>()), std::string::npos)
            << out.status().message();
      }
      ++refused;
    }
  }
  for (const char* name : {"mixtral-8x7b-instruct", "qwen2-moe", "qwen3-moe", "olmoe-instruct", "deepseek-r1",
                           "deepseek-v3.1", "gpt-oss", "kimi-k2-instruct", "default-moe"})
    EXPECT_GE(rendered_per_template[name], 10) << name;
  EXPECT_GT(refused, 5);  // Mixtral refuses system messages and non-alternating roles
}

// The HTTP threads render one shared template at once (the ThreadSanitizer pass
// runs this too): each render is independent and equals the one made alone.
TEST(ChatTemplate, ConcurrentRendersOfOneTemplateAgree) {
  Result<ChatTemplate> t = load_case_template("qwen3-moe");
  ASSERT_TRUE(t.is_ok());
  ChatTemplateInput input;
  input.messages = ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
          {"role": "assistant", "content": "<think>\nok\n</think>\n\nHello"}, {"role": "user", "content": "Again"}])");
  input.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])");
  Result<std::string> alone = t->render(input);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        Result<std::string> out = t->render(input);
        if (!out.is_ok() || *out != *alone) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// The embedded model end to end as apply_chat_template(tokenize=True): the
// rendered prompt tokenized with its special tokens parsed and nothing added.
TEST(ChatTemplate, EmbeddedModelPromptIdsMatchTransformers) {
  const ordered_json fixture = ordered_json::parse(read("tests/fixtures/chat_templates/cases.json"));
  Result<io::Tokenizer> tokenizer = io::Tokenizer::load(source_path("models/default-moe"));
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  Result<ChatTemplate> t = load_case_template("default-moe");
  ASSERT_TRUE(t.is_ok());
  int checked = 0;
  for (const auto& c : fixture["cases"]) {
    if (!c.contains("expected_ids")) continue;
    SCOPED_TRACE(c["conversation"].get<std::string>());
    ChatTemplateInput input;
    input.messages = c["messages"];
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    input.template_kwargs = c["variables"];
    Result<std::string> rendered = t->render(input);
    ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
    Result<std::vector<int32_t>> ids = tokenizer->encode_lossless(*rendered, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.is_ok()) << ids.status().message();
    EXPECT_EQ(*ids, c["expected_ids"].get<std::vector<int32_t>>());
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(ChatTemplate, MessagesAreCheckedAndNormalized) {
  EXPECT_FALSE(normalize_chat_messages(ordered_json::array()).is_ok());
  EXPECT_FALSE(normalize_chat_messages(ordered_json::parse(R"({"role": "user"})")).is_ok());
  EXPECT_FALSE(normalize_chat_messages(ordered_json::parse(R"([{"content": "x"}])")).is_ok());
  EXPECT_FALSE(normalize_chat_messages(ordered_json::parse(R"([{"role": 3, "content": "x"}])")).is_ok());
  EXPECT_FALSE(normalize_chat_messages(ordered_json::parse(R"([{"role": "user", "content": 5}])")).is_ok());
  EXPECT_FALSE(
      normalize_chat_messages(ordered_json::parse(R"([{"role": "user", "content": [{"type": "image_url"}]}])")).is_ok());
  Result<ordered_json> parts = normalize_chat_messages(ordered_json::parse(
      R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])"));
  ASSERT_TRUE(parts.is_ok());
  EXPECT_EQ((*parts)[0]["content"], "a\nb");
  // transformers' reasoning aliases: {"thinking": r, **message, "reasoning_content": r}.
  Result<ordered_json> r = normalize_chat_messages(
      ordered_json::parse(R"([{"role": "assistant", "content": "x", "reasoning": "why"}])"));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dump(), R"({"thinking":"why","role":"assistant","content":"x","reasoning":"why","reasoning_content":"why"})");
}

TEST(ChatTemplate, ModelDirectoriesAndFiles) {
  // The embedded model's template, and none where the directory has none.
  Result<std::optional<ChatTemplate>> embedded = ChatTemplate::from_model_dir(source_path("models/default-moe"));
  ASSERT_TRUE(embedded.is_ok()) << embedded.status().message();
  ASSERT_TRUE(embedded->has_value());
  Result<std::optional<ChatTemplate>> none = ChatTemplate::from_model_dir(source_path("tests/fixtures/chat_templates"));
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->has_value());
  // A template file with the model's special tokens.
  Result<ChatTemplate> file = ChatTemplate::from_file(source_path("tests/fixtures/chat_templates/olmoe-instruct.jinja"),
                                                      source_path("models/default-moe"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  ChatTemplateInput input;
  input.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  Result<std::string> out = file->render(input);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(*out, "<|endoftext|><|user|>\nhi\n<|assistant|>\n");
  // Errors name the file.
  Result<ChatTemplate> missing = ChatTemplate::from_file("/nonexistent/t.jinja", source_path("models/default-moe"));
  EXPECT_FALSE(missing.is_ok());
  Result<ChatTemplate> bad = ChatTemplate::from_source("{% if %}", "bad.jinja", ordered_json::object());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("bad.jinja: the chat template cannot be used: line 1"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace submoe::serve
