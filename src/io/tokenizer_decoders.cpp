#include <optional>
#include <string>

#include "io/tokenizer_byte_level.h"
#include "io/tokenizer_pipeline.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" -> NN. Like Rust's u8::from_str_radix, the two characters may also be
// '+' and one hex digit.
std::optional<uint8_t> parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return std::nullopt;
  const int hi = hex_value(t[3]), lo = hex_value(t[4]);
  if (hi >= 0 && lo >= 0) return static_cast<uint8_t>(hi * 16 + lo);
  if (t[3] == '+' && lo >= 0) return static_cast<uint8_t>(lo);
  return std::nullopt;
}

void decode_byte_level(std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    const size_t mark = bytes.size();
    size_t pos = 0;
    bool mapped = true;
    while (pos < t.size()) {
      const auto b = byte_level_byte(utf8_next(t, pos));
      if (!b) {
        mapped = false;
        break;
      }
      bytes.push_back(static_cast<char>(*b));
    }
    // A token with a character outside the byte map (an added token such as
    // "<|im start|>" with a space) contributes its raw UTF-8.
    if (!mapped) {
      bytes.resize(mark);
      bytes += t;
    }
  }
  tokens.assign(1, utf8_repair(bytes));
}

void decode_byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string pending;
  auto flush = [&] {
    if (pending.empty()) return;
    if (utf8_is_valid(pending)) {
      out.push_back(pending);
    } else {
      // Invalid sequences become one U+FFFD per byte token.
      for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (std::string& t : tokens) {
    if (const auto b = parse_byte_token(t)) {
      pending.push_back(static_cast<char>(*b));
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  tokens = std::move(out);
}

void replace_in_place(std::string& t, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return;
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = t.find(pattern, pos);
    if (hit == std::string::npos) break;
    out.append(t, pos, hit - pos);
    out.append(content);
    pos = hit + pattern.size();
  }
  if (pos == 0) return;
  out.append(t, pos);
  t = std::move(out);
}

// Removes up to `start` leading and `stop` trailing copies of one character.
void strip_token(std::string& t, std::string_view ch, size_t start, size_t stop) {
  size_t begin = 0;
  for (size_t k = 0; k < start && t.compare(begin, ch.size(), ch) == 0 && begin < t.size(); ++k) begin += ch.size();
  size_t end = t.size();
  for (size_t k = 0; k < stop && end >= begin + ch.size() && t.compare(end - ch.size(), ch.size(), ch) == 0; ++k) {
    end -= ch.size();
  }
  t = t.substr(begin, end - begin);
}

void decode_metaspace(std::vector<std::string>& tokens, const DecoderStep& step) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    // The first token loses every replacement character (tokenizers drops
    // them all, not only the leading one) unless the scheme never prepends.
    const bool drop = i == 0 && step.prepend_scheme != PrependScheme::kNever;
    replace_in_place(tokens[i], step.replacement, drop ? "" : " ");
  }
}

}  // namespace

void apply_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string>& tokens) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel:
        decode_byte_level(tokens);
        break;
      case DecoderStep::Kind::kReplace:
        for (std::string& t : tokens) replace_in_place(t, step.pattern, step.content);
        break;
      case DecoderStep::Kind::kByteFallback:
        decode_byte_fallback(tokens);
        break;
      case DecoderStep::Kind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Kind::kStrip:
        for (std::string& t : tokens) strip_token(t, step.content, step.start, step.stop);
        break;
      case DecoderStep::Kind::kMetaspace:
        decode_metaspace(tokens, step);
        break;
    }
  }
}

void apply_post_processors(const std::vector<PostProcessorStep>& steps, std::vector<int32_t>& ids) {
  for (const PostProcessorStep& step : steps) {
    if (step.single.empty()) continue;
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const TemplateItem& item : step.single) {
      if (item.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    ids = std::move(out);
  }
}

}  // namespace submoe::io
