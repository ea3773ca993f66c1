// The stages of a `tokenizers` pipeline other than the model, as parsed from
// tokenizer.json: normalizers, pre-tokenizers, decoders and post-processors.
// Nested "Sequence" components are flattened into one list of steps (applying
// a sequence is applying its members in order, so nesting carries no meaning).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer_regex.h"

namespace submoe::io {

// ---- normalizers ------------------------------------------------------------
struct NormalizerStep {
  enum class Kind { kNFC, kNFD, kPrepend, kReplace, kStrip };
  Kind kind = Kind::kNFC;
  std::string text;     // Prepend: the prefix; Replace: the literal pattern
  std::string content;  // Replace: the replacement
  bool strip_left = false, strip_right = false;  // Strip
};

// Applies the steps in order to one piece of valid UTF-8 text.
std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string_view text);

// ---- pre-tokenizers ---------------------------------------------------------
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kSplitRegex, kSplitString, kByteLevel, kMetaspace, kDigits, kWhitespaceSplit };
  Kind kind = Kind::kByteLevel;
  // Split
  RegexPatternId regex = RegexPatternId::kGpt2;
  std::string literal;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  // ByteLevel
  bool add_prefix_space = false;
  bool use_regex = true;
  // Metaspace (also uses `split`)
  std::string replacement = "\xE2\x96\x81";  // U+2581 '▁'
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
  // Digits
  bool individual_digits = false;
};

// A piece of text on its way to the model. `at_origin`: the piece starts at
// byte 0 of the encoded input (Metaspace's prepend_scheme "first" tests it).
struct PreToken {
  std::string text;
  bool at_origin = false;
};

// Runs every step over `tokens` (replaced by the result); empty pieces vanish.
void apply_pre_tokenizers(const std::vector<PreTokenizerStep>& steps, std::vector<PreToken>& tokens);

// ---- decoders ---------------------------------------------------------------
struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kByteLevel;
  std::string pattern, content;  // Replace; Strip: content is the one character
  size_t start = 0, stop = 0;    // Strip
  std::string replacement;       // Metaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
};

// Applies each step's decode_chain in order.
void apply_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string>& tokens);

// ---- post-processors --------------------------------------------------------
// One item of a single-sequence template: the input's ids, or fixed ids.
struct TemplateItem {
  bool is_sequence = false;
  std::vector<int32_t> ids;
};
struct PostProcessorStep {
  std::vector<TemplateItem> single;  // empty for ByteLevel (adds nothing)
};

// Wraps `ids` by each step's template in order.
void apply_post_processors(const std::vector<PostProcessorStep>& steps, std::vector<int32_t>& ids);

}  // namespace submoe::io
