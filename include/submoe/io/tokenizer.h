// Hugging Face tokenizer.json (the `tokenizers` library's serialization),
// reproducing `tokenizers` encode/decode exactly for the two families MoE
// checkpoints ship:
//   - byte-level BPE (GPT-2, Qwen, OLMoE, Llama 3): Split pre-tokenizers with the
//     GPT-2 or the Qwen2 / cl100k regex, ByteLevel pre-tokenizer and decoder,
//     optional NFC normalizer;
//   - SentencePiece-style BPE with byte fallback (Llama 2, Mistral, Mixtral):
//     Prepend("▁") + Replace(" ", "▁") normalizers or the Metaspace
//     pre-tokenizer, <0xNN> byte-fallback tokens, unk, and the
//     Replace / ByteFallback / Fuse / Strip decoder chain.
// Added tokens split the input first (lstrip / rstrip / single_word / normalized
// flags honoured), post-processors TemplateProcessing, RobertaProcessing,
// BertProcessing, ByteLevel and Sequence are applied when add_special_tokens.
//
// Pre-tokenizer regexes are not interpreted by a general regex engine: each
// known pattern string has a hand-written matcher, and a tokenizer.json with any
// other pattern fails to load with an error naming it. Components outside the
// list above (Unigram / WordPiece models, other normalizers) fail the same way.
// "truncation" and "padding" sections are ignored: encode never truncates or pads.
// As in tokenizers, the "id" written for an added token is not used: a token
// already in the model vocabulary keeps the model's id, a new one gets the next
// id after the vocabulary (real files agree with this numbering).
//
// Known differences from tokenizers (rare in practice):
// NFC / NFD use Unicode 16.0 tables where tokenizers' are Unicode 8-era (text
// with combining marks added to Unicode since differs); the single_word flag's
// word characters approximate the regex crate's \w (see unicode_props.h).
//
// Text input that is not valid UTF-8 is first repaired the way Python's
// bytes.decode("utf-8", errors="replace") and Rust's String::from_utf8_lossy do
// (each maximal invalid subpart becomes U+FFFD); `tokenizers` itself only
// accepts valid strings, so on valid input the results are identical.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "submoe/core/status.h"

namespace submoe::io {

struct TokenizerData;  // the parsed pipeline (src/io/tokenizer_*.h)

// Characters a tokenizer model lost: neither in the vocabulary, nor
// byte-fallback tokens, nor an unk token (tokenizers drops them silently).
struct DroppedCharacters {
  size_t count = 0;
  std::string first;  // the first such character (UTF-8)
};

// One special token of tokenizer_config.json (the value of bos_token, eos_token,
// an additional_special_tokens entry, ...): a string, or an object with
// "content" (older transformers); nullopt for null or anything else.
std::optional<std::string> tokenizer_config_token(const nlohmann::json& entry);

class Tokenizer {
 public:
  // `path` is a tokenizer.json file or a directory holding one. When a
  // tokenizer_config.json sits beside it, its bos_token / eos_token name the
  // BOS / EOS tokens (see bos_id()).
  static Result<Tokenizer> load(const std::string& path);
  // `json` is the text of a tokenizer.json; `origin` prefixes error messages.
  static Result<Tokenizer> from_json(std::string_view json, std::string_view origin = "tokenizer.json");

  // Token ids of `text`, as tokenizers' Tokenizer.encode(text,
  // add_special_tokens=...).ids. Never fails: characters the model cannot
  // represent become the unk token or are dropped, exactly as tokenizers does.
  // Thread-safe (the word cache is internally locked).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // The same ids, or kInvalidArgument when the model dropped characters (not
  // in the vocabulary, no byte fallback, no unk token), naming how many and
  // the first: what run, eval, compress and trace record read.
  Result<std::vector<int32_t>> encode_lossless(std::string_view text, bool add_special_tokens = true) const;

  // Text of `ids`, as tokenizers' Tokenizer.decode(ids, skip_special_tokens=...).
  // Unknown ids are skipped, like tokenizers does. Always valid UTF-8.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // 1 + the largest id of the model vocabulary and the added tokens: the number
  // of rows an embedding table needs to cover every id.
  int32_t vocab_size() const;
  // The added-token vocabulary is consulted first, then the model's.
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // True for added tokens marked "special" (skipped by decode(ids, true)).
  bool is_special(int32_t id) const;

  // BOS: tokenizer_config.json's bos_token when loaded from a path and present,
  // else the first special token of the TemplateProcessing single template
  // (the "<s>" of Llama-style tokenizers). EOS: tokenizer_config.json's
  // eos_token, else the last special token of that template, else the first of
  // "</s>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>" that
  // is a special added token. The model's config.json eos_token_id, when
  // available, is the better source for stopping generation.
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }

 private:
  Tokenizer() = default;
  std::vector<int32_t> encode_impl(std::string_view text, bool add_special_tokens, DroppedCharacters* dropped) const;
  std::shared_ptr<const TokenizerData> data_;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
};

// Incremental decoding for streaming generated text: feed ids one at a time and
// print what step() returns. The concatenation of all step() outputs equals
// decode(all ids) whenever that decode does not end inside an incomplete UTF-8
// character; text is held back while the last tokens decode to a trailing
// U+FFFD (a character split across byte tokens), and while decoding would
// rewrite already returned text (SentencePiece's leading-space strip), as
// tokenizers' DecodeStream does.
class DecodeStream {
 public:
  // `tokenizer` must outlive the stream.
  DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens);
  // New text made printable by `id`; empty when it must wait for more tokens.
  std::string step(int32_t id);

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace submoe::io
