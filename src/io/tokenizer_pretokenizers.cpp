#include <algorithm>
#include <string>
#include <utility>

#include "io/tokenizer_byte_level.h"
#include "io/tokenizer_pipeline.h"
#include "io/unicode_props.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

// A span of a piece and whether the split pattern matched it.
struct Span {
  size_t begin, end;
  bool is_match;
};

// Gaps between `matches` become non-matching spans, so the spans tile [0, size).
void tile(const std::vector<std::pair<size_t, size_t>>& matches, size_t size, std::vector<Span>& spans) {
  spans.clear();
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (b > prev) spans.push_back({prev, b, false});
    spans.push_back({b, e, true});
    prev = e;
  }
  if (prev < size) spans.push_back({prev, size, false});
}

// Applies the delimiter behavior of tokenizers' split to the tiled spans.
void apply_behavior(SplitBehavior behavior, bool invert, std::vector<Span>& spans) {
  if (invert) {
    for (Span& s : spans) s.is_match = !s.is_match;
  }
  std::vector<Span> out;
  out.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) out.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      // A match joins the span before it unless that span was a match too.
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // Mirror image: scan from the end, a match joins the span after it.
      bool previous_match = false;
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& s = spans[k];
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().begin = s.begin;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        // tokenizers merges any two neighbours of the same kind; after `invert`
        // that includes adjacent non-matches.
        if (s.is_match == previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  spans = std::move(out);
}

void emit(const PreToken& token, const std::vector<Span>& spans, std::vector<PreToken>& out) {
  for (const Span& s : spans) {
    if (s.end == s.begin) continue;
    out.push_back(PreToken{token.text.substr(s.begin, s.end - s.begin), token.at_origin && s.begin == 0});
  }
}

// Each character satisfying `pred` is one match (tokenizers' char-predicate
// patterns).
template <typename Pred>
void char_matches(std::string_view text, Pred pred, std::vector<std::pair<size_t, size_t>>& matches) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_next(text, pos);
    if (pred(cp)) matches.emplace_back(start, pos);
  }
}

void literal_matches(std::string_view text, std::string_view literal, std::vector<std::pair<size_t, size_t>>& matches) {
  if (literal.empty()) return;
  size_t pos = 0;
  while ((pos = text.find(literal, pos)) != std::string_view::npos) {
    matches.emplace_back(pos, pos + literal.size());
    pos += literal.size();
  }
}

std::string replace_spaces(std::string_view text, std::string_view replacement) {
  std::string out;
  out.reserve(text.size() + 8);
  for (const char c : text) {
    if (c == ' ') {
      out.append(replacement);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void apply_step(const PreTokenizerStep& step, std::vector<PreToken>& tokens) {
  std::vector<PreToken> out;
  out.reserve(tokens.size());
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Span> spans;
  for (PreToken& token : tokens) {
    matches.clear();
    switch (step.kind) {
      case PreTokenizerStep::Kind::kSplitRegex:
        regex_find_all(step.regex, token.text, matches);
        tile(matches, token.text.size(), spans);
        apply_behavior(step.behavior, step.invert, spans);
        emit(token, spans, out);
        break;
      case PreTokenizerStep::Kind::kSplitString:
        literal_matches(token.text, step.literal, matches);
        tile(matches, token.text.size(), spans);
        apply_behavior(step.behavior, step.invert, spans);
        emit(token, spans, out);
        break;
      case PreTokenizerStep::Kind::kByteLevel: {
        if (step.add_prefix_space && !token.text.empty() && token.text[0] != ' ') token.text.insert(0, 1, ' ');
        if (step.use_regex) {
          regex_find_all(RegexPatternId::kGpt2, token.text, matches);
        } else {
          matches.emplace_back(0, token.text.size());
        }
        for (const auto& [b, e] : matches) {
          if (e == b) continue;
          PreToken piece;
          piece.at_origin = token.at_origin && b == 0;
          byte_level_encode(std::string_view(token.text).substr(b, e - b), piece.text);
          out.push_back(std::move(piece));
        }
        break;
      }
      case PreTokenizerStep::Kind::kMetaspace: {
        PreToken replaced{replace_spaces(token.text, step.replacement), token.at_origin};
        const bool starts = replaced.text.compare(0, step.replacement.size(), step.replacement) == 0;
        if (!starts && (step.prepend_scheme == PrependScheme::kAlways ||
                        (step.prepend_scheme == PrependScheme::kFirst && token.at_origin))) {
          replaced.text.insert(0, step.replacement);
        }
        if (step.split) {
          literal_matches(replaced.text, step.replacement, matches);
          tile(matches, replaced.text.size(), spans);
          apply_behavior(SplitBehavior::kMergedWithNext, false, spans);
        } else {
          spans.assign(1, Span{0, replaced.text.size(), false});
        }
        emit(replaced, spans, out);
        break;
      }
      case PreTokenizerStep::Kind::kDigits:
        // Rust's char::is_numeric: every \p{N} character, not only ASCII digits.
        char_matches(token.text, [](char32_t c) { return is_number(c); }, matches);
        tile(matches, token.text.size(), spans);
        apply_behavior(step.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false, spans);
        emit(token, spans, out);
        break;
      case PreTokenizerStep::Kind::kWhitespaceSplit:
        char_matches(token.text, [](char32_t c) { return is_whitespace(c); }, matches);
        tile(matches, token.text.size(), spans);
        apply_behavior(SplitBehavior::kRemoved, false, spans);
        emit(token, spans, out);
        break;
    }
  }
  tokens = std::move(out);
}

}  // namespace

void apply_pre_tokenizers(const std::vector<PreTokenizerStep>& steps, std::vector<PreToken>& tokens) {
  for (const PreTokenizerStep& step : steps) apply_step(step, tokens);
  std::erase_if(tokens, [](const PreToken& t) { return t.text.empty(); });
}

}  // namespace submoe::io
