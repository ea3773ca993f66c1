// submoe's Jinja engine against jinja2 itself: every case of
// tests/fixtures/jinja/cases.json (made by tools/make_chat_template_fixtures.py in
// transformers' chat-template environment) renders byte for byte as jinja2 did,
// and every template jinja2 refused is refused here too.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "submoe/jinja/template.h"

namespace submoe::jinja {
namespace {

nlohmann::ordered_json load_cases(const std::string& relative) {
  std::ifstream in(std::string(SUBMOE_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

ValueDict variables_of(const nlohmann::ordered_json& j) {
  const Value v = Value::from_json(j);
  return v.is_dict() ? v.as_dict() : ValueDict{};
}

TEST(JinjaCases, EveryCaseRendersAsJinja2Did) {
  const nlohmann::ordered_json fixture = load_cases("tests/fixtures/jinja/cases.json");
  ASSERT_GE(fixture["cases"].size(), 80u);
  int rendered = 0, refused = 0;
  for (const auto& c : fixture["cases"]) {
    const std::string source = c["template"].get<std::string>();
    SCOPED_TRACE("template: " + source);
    Result<Template> t = Template::parse(source);
    Result<std::string> out = t.is_ok() ? t->render(variables_of(c["variables"])) : Result<std::string>(t.status());
    if (c.contains("expected")) {
      ASSERT_TRUE(out.is_ok()) << out.status().message();
      EXPECT_EQ(*out, c["expected"].get<std::string>());
      ++rendered;
    } else {
      EXPECT_FALSE(out.is_ok()) << "jinja2 failed with " << c["error"].get<std::string>() << " but submoe rendered '"
                                << (out.is_ok() ? *out : "") << "'";
      if (!out.is_ok()) {
        EXPECT_FALSE(out.status().message().empty());
      }
      ++refused;
    }
  }
  // Both kinds are present, so neither half of the comparison is vacuous.
  EXPECT_GT(rendered, 60);
  EXPECT_GT(refused, 8);
}

TEST(JinjaCases, RaiseExceptionCarriesTheTemplatesMessage) {
  Result<Template> t = Template::parse("a{{ raise_exception('roles must alternate') }}b");
  ASSERT_TRUE(t.is_ok());
  RenderFailure failure;
  Result<std::string> out = t->render({}, &failure);
  ASSERT_FALSE(out.is_ok());
  EXPECT_TRUE(failure.raised_by_template);
  EXPECT_EQ(out.status().message(), "roles must alternate");
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidArgument);
}

// Found by fuzz_chat_template: an empty or undefined message still gives the
// user a message (the error contract: kInvalidArgument with a message).
TEST(JinjaCases, RaiseExceptionWithoutAMessageStillSaysSo) {
  for (const char* source : {"{{ raise_exception('') }}", "{{ raise_exception(no_such_name, 1) }}",
                             "{{ raise_exception() }}", "{{ raise_exception(''.nope) }}"}) {
    Result<Template> t = Template::parse(source);
    ASSERT_TRUE(t.is_ok()) << source;
    RenderFailure failure;
    Result<std::string> out = t->render({}, &failure);
    ASSERT_FALSE(out.is_ok()) << source;
    EXPECT_TRUE(failure.raised_by_template) << source;
    EXPECT_EQ(out.status().code(), ErrorCode::kInvalidArgument) << source;
    EXPECT_EQ(out.status().message(), "raise_exception() without a message") << source;
  }
}

TEST(JinjaCases, RuntimeErrorsNameTheLine) {
  Result<Template> t = Template::parse("line one\n{{ 'a' + 1 }}");
  ASSERT_TRUE(t.is_ok());
  RenderFailure failure;
  Result<std::string> out = t->render({}, &failure);
  ASSERT_FALSE(out.is_ok());
  EXPECT_FALSE(failure.raised_by_template);
  EXPECT_EQ(failure.line, 2);
  EXPECT_NE(out.status().message().find("line 2: can only concatenate str"), std::string::npos)
      << out.status().message();
}

}  // namespace
}  // namespace submoe::jinja
