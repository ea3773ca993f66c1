#include "submoe/io/tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/tokenizer_data.h"
#include "io/unicode_utf8.h"
#include "submoe/io/file_util.h"

namespace submoe::io {
std::optional<std::string> tokenizer_config_token(const nlohmann::json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object()) {
    const auto c = entry.find("content");
    if (c != entry.end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

Result<Tokenizer> Tokenizer::from_json(std::string_view json, std::string_view origin) {
  SUBMOE_ASSIGN_OR_RETURN(auto data, parse_tokenizer_json(json, origin));
  Tokenizer t;
  t.data_ = std::move(data);
  const TokenizerData& d = *t.data_;
  if (!d.template_prefix_ids.empty()) t.bos_id_ = d.template_prefix_ids.front();
  if (!d.template_suffix_ids.empty()) {
    t.eos_id_ = d.template_suffix_ids.back();
  } else {
    for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>"}) {
      if (d.special_contents.count(std::string_view(name)) != 0) {
        t.eos_id_ = d.added_by_content.find(std::string_view(name))->second;
        break;
      }
    }
  }
  return t;
}

Result<Tokenizer> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, read_file_to_string(file.string()));
  SUBMOE_ASSIGN_OR_RETURN(Tokenizer t, from_json(text, file.string()));

  const fs::path config_path = file.parent_path() / "tokenizer_config.json";
  if (fs::is_regular_file(config_path, ec)) {
    SUBMOE_ASSIGN_OR_RETURN(const std::string config_text, read_file_to_string(config_path.string()));
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(config_text);
    } catch (const nlohmann::json::exception& e) {
      return corrupt_data(config_path.string() + ": not valid JSON: " + e.what());
    }
    if (!config.is_object()) return corrupt_data(config_path.string() + ": expected a JSON object");
    // A named token the vocabulary lacks is an error: generation would stop on
    // the wrong id otherwise.
    for (const auto& [key, slot] : {std::pair{"bos_token", &t.bos_id_}, std::pair{"eos_token", &t.eos_id_}}) {
      const auto entry = config.find(key);
      const auto name = entry == config.end() ? std::nullopt : tokenizer_config_token(*entry);
      if (!name) continue;
      const auto id = t.token_to_id(*name);
      if (!id) {
        return corrupt_data(config_path.string() + ": " + key + " '" + *name + "' is not in " + file.string());
      }
      *slot = *id;
    }
  }
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return encode_impl(text, add_special_tokens, nullptr);
}

Result<std::vector<int32_t>> Tokenizer::encode_lossless(std::string_view text, bool add_special_tokens) const {
  DroppedCharacters dropped;
  std::vector<int32_t> ids = encode_impl(text, add_special_tokens, &dropped);
  if (dropped.count == 0) return ids;
  char cp[16] = "?";
  {
    const auto* b = reinterpret_cast<const unsigned char*>(dropped.first.data());
    uint32_t c = 0;
    const size_t n = dropped.first.size();
    if (n == 1) c = b[0];
    else if (n == 2) c = (b[0] & 0x1fu) << 6 | (b[1] & 0x3fu);
    else if (n == 3) c = (b[0] & 0x0fu) << 12 | (b[1] & 0x3fu) << 6 | (b[2] & 0x3fu);
    else if (n == 4) c = (b[0] & 0x07u) << 18 | (b[1] & 0x3fu) << 12 | (b[2] & 0x3fu) << 6 | (b[3] & 0x3fu);
    std::snprintf(cp, sizeof cp, "U+%04X", c);
  }
  return invalid_argument("the tokenizer cannot represent " + std::to_string(dropped.count) +
                          " character(s) of the text (the first is " + cp +
                          "): they are not in its vocabulary and it has neither byte-fallback tokens nor an unk "
                          "token, so they would be dropped without a word; remove them from the text or use a "
                          "tokenizer that covers them");
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool add_special_tokens,
                                            DroppedCharacters* dropped) const {
  const TokenizerData& d = *data_;
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_repair(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<AddedSegment> segments, pieces;
  std::vector<PreToken> words;
  d.raw_matcher.split(text, d.added, segments);
  for (const AddedSegment& seg : segments) {
    if (seg.token >= 0) {
      ids.push_back(d.added[static_cast<size_t>(seg.token)].id);
      continue;
    }
    const std::string normalized = apply_normalizers(d.normalizers, text.substr(seg.begin, seg.end - seg.begin));
    d.normalized_matcher.split(normalized, d.added, pieces);
    for (const AddedSegment& piece : pieces) {
      if (piece.token >= 0) {
        ids.push_back(d.added[static_cast<size_t>(piece.token)].id);
        continue;
      }
      words.clear();
      words.push_back(PreToken{normalized.substr(piece.begin, piece.end - piece.begin),
                               seg.begin == 0 && piece.begin == 0});
      apply_pre_tokenizers(d.pre_tokenizers, words);
      for (const PreToken& w : words) d.model->tokenize(w.text, ids, dropped);
    }
  }
  if (add_special_tokens) apply_post_processors(d.post_processors, ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const TokenizerData& d = *data_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const std::string* token = nullptr;
    if (const auto it = d.added_by_id.find(id); it != d.added_by_id.end()) {
      token = &d.added[it->second].content;
    } else {
      token = d.model->id_to_token(id);
    }
    if (token == nullptr) continue;  // unknown ids are dropped, as tokenizers does
    // tokenizers tests the string, so a model token spelled like a special
    // added token is skipped too.
    if (skip_special_tokens && d.special_contents.count(*token) != 0) continue;
    tokens.push_back(*token);
  }
  std::string out;
  if (!d.has_decoder) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  apply_decoders(d.decoders, tokens);
  for (const std::string& t : tokens) out += t;
  return out;
}

int32_t Tokenizer::vocab_size() const { return data_->vocab_size; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = data_->added_by_content.find(token); it != data_->added_by_content.end()) return it->second;
  return data_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const auto it = data_->added_by_id.find(id); it != data_->added_by_id.end()) {
    return data_->added[it->second].content;
  }
  if (const std::string* t = data_->model->id_to_token(id)) return *t;
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  const auto it = data_->added_by_id.find(id);
  return it != data_->added_by_id.end() && data_->added[it->second].special;
}

DecodeStream::DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string DecodeStream::step(int32_t id) {
  // Decode a window that starts a few tokens back (from prefix_index_), so
  // decoders that treat the first token specially (SentencePiece's leading
  // space strip) see the same context as a whole-sequence decode would.
  ids_.push_back(id);
  const std::string text = tokenizer_->decode(ids_, skip_special_tokens_);
  const bool incomplete = text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  if (text.size() <= prefix_.size() || incomplete) return {};
  // For the supported decoders the window's text always extends the prefix.
  // Should it not, emit from where they differ (on a character boundary)
  // rather than stall: some text may repeat, none is lost.
  size_t common = 0;
  while (common < prefix_.size() && prefix_[common] == text[common]) ++common;
  while (common > 0 && common < text.size() && (static_cast<uint8_t>(text[common]) & 0xC0) == 0x80) --common;
  std::string fresh = text.substr(common);
  const size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_->decode(ids_, skip_special_tokens_);
  prefix_index_ = new_prefix_index;
  return fresh;
}

}  // namespace submoe::io
