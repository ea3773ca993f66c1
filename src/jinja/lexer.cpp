#include "jinja/lexer.h"

#include <cstring>

#include "jinja/error.h"
#include "io/unicode_utf8.h"

namespace submoe::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
void strip_leading_space(std::string* text) {
  size_t k = 0;
  while (k < text->size() && is_space((*text)[k])) ++k;
  text->erase(0, k);
}

void strip_trailing_space(std::string* text) {
  size_t k = text->size();
  while (k > 0 && is_space((*text)[k - 1])) --k;
  text->erase(k);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// jinja2 normalizes "\r\n" and "\r" to "\n" and, without keep_trailing_newline,
// drops one final newline.
std::string normalize_newlines(std::string_view src, bool keep_trailing_newline) {
  std::string s;
  s.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      s.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      s.push_back(src[i]);
    }
  }
  if (!keep_trailing_newline && !s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : s_(std::move(source)), o_(options) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      const size_t tag = next_tag(pos_);
      if (tag == std::string::npos) {
        add_text(pos_, s_.size(), /*before_tag=*/0, 0);
        pos_ = s_.size();
        break;
      }
      const char kind = s_[tag + 1];
      const char mod = tag + 2 < s_.size() ? s_[tag + 2] : '\0';
      add_text(pos_, tag, kind, mod);
      if (kind == '#') {
        comment(tag);
      } else {
        tag_tokens(tag, kind == '%');
      }
    }
    out_.push_back({Token::Type::kEnd, "", line_});
    return std::move(out_);
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t i = from; i + 1 < s_.size(); ++i)
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (s_[i] == '\n') ++line_;
  }

  // The text s_[from, to) before a tag of `kind` ('{', '%', '#', or 0 at the end)
  // with modifier `mod`, with the whitespace rules applied.
  void add_text(size_t from, size_t to, char kind, char mod) {
    const int first_line = line_;
    count_lines(from, to);
    std::string text = s_.substr(from, to - from);
    if (strip_next_) {
      strip_leading_space(&text);
      strip_next_ = false;
    }
    if (mod == '-') {
      strip_trailing_space(&text);
    } else if ((kind == '%' || kind == '#') && o_.lstrip_blocks && mod != '+') {
      const size_t nl = text.rfind('\n');
      const size_t start = nl == std::string::npos ? 0 : nl + 1;
      if (nl != std::string::npos || line_starting_) {
        bool blank = true;
        for (size_t k = start; k < text.size(); ++k) blank = blank && (text[k] == ' ' || text[k] == '\t');
        if (blank) text.erase(start);
      }
    }
    if (!text.empty()) out_.push_back({Token::Type::kText, std::move(text), first_line});
  }

  // After a tag's closing delimiter at end_pos: "-" strips the following
  // whitespace; a block or comment tag drops one newline under trim_blocks.
  void after_tag(size_t end_pos, char modifier, bool block_like) {
    pos_ = end_pos;
    if (modifier == '-') {
      strip_next_ = true;
      // Whether the stripped whitespace ends a line decides lstrip_blocks for
      // the next tag (jinja2's "line_starting").
      size_t k = pos_;
      while (k < s_.size() && is_space(s_[k])) ++k;
      line_starting_ = k > pos_ && s_[k - 1] == '\n';
      return;
    }
    if (block_like && o_.trim_blocks && modifier != '+' && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
      line_starting_ = true;
      return;
    }
    line_starting_ = false;
  }

  void comment(size_t tag) {
    const size_t close = s_.find("#}", tag + 2);
    if (close == std::string::npos) throw Error(line_, "the comment '{#' is never closed with '#}'");
    count_lines(tag, close);
    const char modifier = close > tag + 2 ? s_[close - 1] : '\0';
    after_tag(close + 2, modifier == '-' || modifier == '+' ? modifier : '\0', true);
  }

  void tag_tokens(size_t tag, bool block) {
    out_.push_back({block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", line_});
    const size_t begin_index = out_.size() - 1;
    pos_ = tag + 2;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    std::vector<char> balance;
    const char closer = block ? '%' : '}';
    for (;;) {
      while (pos_ < s_.size() && is_space(s_[pos_])) {
        if (s_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= s_.size())
        throw Error(line_, block ? "the tag '{%' is never closed with '%}'" : "the tag '{{' is never closed with '}}'");
      if (balance.empty()) {
        const char c = s_[pos_];
        char modifier = '\0';
        size_t at = pos_;
        if ((c == '-' || (block && c == '+')) && pos_ + 2 < s_.size() && s_[pos_ + 1] == closer &&
            s_[pos_ + 2] == '}') {
          modifier = c;
          at = pos_ + 1;
        }
        if (s_[at] == closer && at + 1 < s_.size() && s_[at + 1] == '}') {
          out_.push_back({block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", line_});
          after_tag(at + 2, modifier, block);
          if (block && out_.size() == begin_index + 3 && out_[begin_index + 1].type == Token::Type::kName &&
              out_[begin_index + 1].text == "raw") {
            raw_block(begin_index);
          }
          return;
        }
      }
      expression_token(&balance);
    }
  }

  // {% raw %} ... {% endraw %}: the text between, verbatim.
  void raw_block(size_t begin_index) {
    const int start_line = out_[begin_index].line;
    out_.resize(begin_index);
    size_t search = pos_;
    for (;;) {
      const size_t open = s_.find("{%", search);
      if (open == std::string::npos) throw Error(start_line, "'{% raw %}' is never closed with '{% endraw %}'");
      size_t k = open + 2;
      const bool strip_before = k < s_.size() && s_[k] == '-';
      if (k < s_.size() && (s_[k] == '-' || s_[k] == '+')) ++k;
      while (k < s_.size() && is_space(s_[k])) ++k;
      if (s_.compare(k, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      k += 6;
      while (k < s_.size() && is_space(s_[k])) ++k;
      char modifier = '\0';
      if (k < s_.size() && (s_[k] == '-' || s_[k] == '+')) modifier = s_[k++];
      if (s_.compare(k, 2, "%}") != 0) throw Error(line_, "'{% endraw' must be closed with '%}'");
      std::string text = s_.substr(pos_, open - pos_);
      if (strip_next_) {
        strip_leading_space(&text);
        strip_next_ = false;
      }
      if (strip_before) strip_trailing_space(&text);
      if (!text.empty()) out_.push_back({Token::Type::kText, std::move(text), line_});
      count_lines(pos_, k + 2);
      after_tag(k + 2, modifier, true);
      return;
    }
  }

  void expression_token(std::vector<char>* balance) {
    const char c = s_[pos_];
    if (is_name_start(c)) {
      size_t e = pos_;
      while (e < s_.size() && is_name_char(s_[e])) ++e;
      out_.push_back({Token::Type::kName, s_.substr(pos_, e - pos_), line_});
      pos_ = e;
      return;
    }
    if (is_digit(c)) {
      number();
      return;
    }
    if (c == '\'' || c == '"') {
      string_literal(c);
      return;
    }
    static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (s_.compare(pos_, 2, op) == 0) {
        out_.push_back({Token::Type::kOp, op, line_});
        pos_ += 2;
        return;
      }
    }
    if (std::strchr("+-*/%~<>=()[]{},.:|", c) == nullptr || c == '\0')
      throw Error(line_, std::string("unexpected character '") + c + "' in a template tag");
    if (c == '(' || c == '[' || c == '{') balance->push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (balance->empty() || balance->back() != open) throw Error(line_, std::string("unexpected '") + c + "'");
      balance->pop_back();
    }
    out_.push_back({Token::Type::kOp, std::string(1, c), line_});
    ++pos_;
  }

  void number() {
    size_t e = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (e < s_.size() && (is_digit(s_[e]) || (s_[e] == '_' && e + 1 < s_.size() && is_digit(s_[e + 1])))) {
        if (s_[e] != '_') digits.push_back(s_[e]);
        ++e;
      }
    };
    take_digits();
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
      is_float = true;
      digits.push_back('.');
      ++e;
      take_digits();
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t k = e + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && is_digit(s_[k])) {
        is_float = true;
        digits.push_back('e');
        digits.append(s_, e + 1, k - e - 1);
        e = k;
        take_digits();
      }
    }
    out_.push_back({is_float ? Token::Type::kFloat : Token::Type::kInt, digits, line_});
    pos_ = e;
  }

  // A quoted string with Python's escapes (jinja2 decodes string literals with
  // the unicode-escape codec).
  void string_literal(char quote) {
    const int start_line = line_;
    std::string value;
    size_t i = pos_ + 1;
    for (;;) {
      if (i >= s_.size()) throw Error(start_line, "a string literal is never closed");
      const char c = s_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        value.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) throw Error(start_line, "a string literal is never closed");
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case '\\': value.push_back('\\'); break;
        case '\'': value.push_back('\''); break;
        case '"': value.push_back('"'); break;
        case 'a': value.push_back('\a'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'n': value.push_back('\n'); break;
        case 'r': value.push_back('\r'); break;
        case 't': value.push_back('\t'); break;
        case 'v': value.push_back('\v'); break;
        case '\n': ++line_; break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            const int h = i < s_.size() ? hex_value(s_[i]) : -1;
            if (h < 0) throw Error(line_, std::string("a truncated \\") + e + " escape in a string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
            ++i;
          }
          if (cp > 0x10FFFF) throw Error(line_, "a \\U escape beyond U+10FFFF in a string literal");
          io::utf8_append(value, static_cast<char32_t>(cp));
          break;
        }
        case 'N': throw Error(line_, "\\N{...} escapes are not supported in string literals");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < s_.size() && s_[i] >= '0' && s_[i] <= '7'; ++k, ++i)
              cp = cp * 8 + static_cast<uint32_t>(s_[i] - '0');
            io::utf8_append(value, static_cast<char32_t>(cp));
          } else {
            value.push_back('\\');  // Python keeps unknown escapes as written
            value.push_back(e);
          }
      }
    }
    out_.push_back({Token::Type::kString, std::move(value), start_line});
    pos_ = i + 1;
  }

  std::string s_;
  LexerOptions o_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
  bool strip_next_ = false;
  // Whether the next text chunk starts a line (the template's start, or a tag
  // whose trailing newline was trimmed): lstrip_blocks applies to a tag at the
  // start of such a chunk even without a newline in it (jinja2's line_starting).
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  Lexer lexer(normalize_newlines(source, options.keep_trailing_newline), options);
  return lexer.run();
}

}  // namespace submoe::jinja
