// A template is untrusted data: hostile ones end in an error naming what ran out,
// never a crash, a hang or unbounded memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "submoe/jinja/template.h"

namespace submoe::jinja {
namespace {

Status render_status(const std::string& source, TemplateOptions options = {}) {
  Result<Template> t = Template::parse(source, options);
  if (!t.is_ok()) return t.status();
  Result<std::string> out = t->render({});
  return out.is_ok() ? Status::ok() : out.status();
}

TEST(JinjaLimits, DeepNestingIsASyntaxErrorNotAStackOverflow) {
  const std::string deep = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  const Status s = render_status(deep);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("nests deeper"), std::string::npos) << s.message();
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(render_status(ifs).is_ok());
  EXPECT_FALSE(render_status("{{ " + std::string(50000, '-') + "1 }}").is_ok());
  EXPECT_FALSE(render_status("{{ " + std::string(50000, '[') + " }}").is_ok());
}

TEST(JinjaLimits, RunawayLoopsStopAtTheStepBudget) {
  TemplateOptions o;
  o.max_steps = 100000;
  const Status s = render_status("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("steps"), std::string::npos) << s.message();
}

TEST(JinjaLimits, HugeValuesAreRefused) {
  EXPECT_FALSE(render_status("{{ range(100000000) | length }}").is_ok());
  EXPECT_FALSE(render_status("{{ 'x' * 1000000000000 }}").is_ok());
  EXPECT_FALSE(render_status("{{ [1] * 1000000000 }}").is_ok());
  EXPECT_FALSE(render_status("{{ 9223372036854775807 + 1 }}").is_ok());
  EXPECT_FALSE(render_status("{{ 2 ** 64 }}").is_ok());
  EXPECT_FALSE(render_status("{{ 99999999999999999999 }}").is_ok());
  // Found by fuzz/chat_template_fuzz.cpp: an index beyond int64 after '.' threw out of the parser.
  EXPECT_FALSE(render_status("{{ 'aaa'.1111111111111111111111111111 }}").is_ok());
  EXPECT_TRUE(render_status("{{ [{'a': 1}] | map(attribute='0000000000000000000000000000') | list }}").is_ok());
  TemplateOptions o;
  o.max_output_bytes = 1000;
  const Status s = render_status("{% for i in range(1000) %}0123456789{% endfor %}", o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("exceeds 1000 bytes"), std::string::npos) << s.message();
}

TEST(JinjaLimits, RecursiveMacrosStopAtTheCallDepth) {
  const Status s = render_status("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("nest deeper"), std::string::npos) << s.message();
}

TEST(JinjaLimits, TruncatedTemplatesAreSyntaxErrors) {
  for (const char* t : {"{{", "{%", "{#", "{{ 'a", "{% if", "{% for x in", "{{ x[", "{{ x(", "{% raw %}", "{{ 1 }",
                        "{% macro m( %}", "{{ x | }}", "{{ x is }}", "{% set %}", "{% endif %}", "{% break %}"}) {
    const Status s = render_status(t);
    EXPECT_FALSE(s.is_ok()) << t;
    EXPECT_NE(s.message().find("line "), std::string::npos) << t << ": " << s.message();
  }
}

TEST(JinjaLimits, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}%#-+()[]'\". ,:|~=<>!*/abcdefxyz0123456789 \n\t\\";
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
    TemplateOptions o;
    o.max_steps = 10000;
    Result<Template> t = Template::parse(s, o);
    if (!t.is_ok()) continue;
    ++parsed;
    (void)t->render({});
  }
  EXPECT_GT(parsed, 100);  // the fuzz reaches the renderer, not only the parser
}

// Python's repr(float) is the shortest text that reads back as the same double.
TEST(JinjaValue, FloatReprRoundTripsAndUsesPythonsLayout) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    const std::string r = python_float_repr(d);
    EXPECT_EQ(std::strtod(r.c_str(), nullptr), d) << r;
    const bool scientific = r.find('e') != std::string::npos;
    const double a = std::fabs(d);
    if (a != 0) {
      EXPECT_EQ(scientific, a < 1e-4 || a >= 1e16) << r;
    }
    if (!scientific) {
      EXPECT_NE(r.find('.'), std::string::npos) << r;
    }
  }
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(python_float_repr(1.5e-5), "1.5e-05");
  EXPECT_EQ(python_float_repr(-2.0), "-2.0");
}

}  // namespace
}  // namespace submoe::jinja
