// The BPE model of `tokenizers`: a word is split into characters (with the
// optional continuing-subword prefix / end-of-word suffix), characters missing
// from the vocabulary become <0xNN> byte tokens (byte_fallback) or the unk token
// (fused when fuse_unk), then the lowest-ranked adjacent pair is merged until no
// pair has a merge, leftmost first among equal ranks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/tokenizer.h"

namespace submoe::io {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  // A word that is itself a vocabulary entry is emitted whole (Llama 3).
  bool ignore_merges = false;
};

class BpeModel {
 public:
  // `merges` in rank order (rank = index). Errors name the merge or token.
  static Result<std::unique_ptr<BpeModel>> create(TokenIdMap vocab,
                                                  const std::vector<std::pair<std::string, std::string>>& merges,
                                                  BpeOptions options);

  using Dropped = DroppedCharacters;
  // Appends the ids of one pre-tokenized word; adds what it dropped to
  // `dropped` when given. Thread-safe.
  void tokenize(std::string_view word, std::vector<int32_t>& out, Dropped* dropped = nullptr) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when no vocabulary entry has this id.
  const std::string* id_to_token(int32_t id) const;
  // -1 for an empty vocabulary.
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  size_t merge_count() const { return merges_.size(); }
  // Number of vocabulary entries (tokenizers' get_vocab_size of the model).
  size_t vocab_count() const { return vocab_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  BpeModel() = default;
  void merge_word(std::string_view word, std::vector<int32_t>& out, Dropped& dropped) const;
  struct CachedWord {
    std::vector<int32_t> ids;
    Dropped dropped;
  };

  TokenIdMap vocab_;
  std::vector<const std::string*> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::array<int32_t, 256> byte_token_id_{};  // <0xNN> ids, -1 when absent

  // Words seen before; cleared when full so memory stays bounded.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, CachedWord, StringHash, std::equal_to<>> cache_;
};

}  // namespace submoe::io
