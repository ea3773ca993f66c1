#include "io/tokenizer_bpe.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

// Words longer than this are rare (runs of one character); caching them would
// only churn the cache.
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kCacheCapacity = 1 << 16;

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;
  int32_t new_id;
  // std::priority_queue pops the largest: invert to pop the lowest rank, then
  // the leftmost position.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::create(TokenIdMap vocab,
                                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                                   BpeOptions options) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  m->vocab_ = std::move(vocab);
  m->options_ = std::move(options);
  int32_t max_id = -1;
  for (const auto& [token, id] : m->vocab_) max_id = std::max(max_id, id);
  m->id_to_token_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& [token, id] : m->vocab_) {
    // Two tokens sharing an id: keep the lexicographically smallest, so the
    // choice does not depend on hash order.
    const std::string*& slot = m->id_to_token_[static_cast<size_t>(id)];
    if (slot == nullptr || token < *slot) slot = &token;
  }

  const std::string& prefix = m->options_.continuing_subword_prefix;
  m->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const std::string where = "model.merges[" + std::to_string(rank) + "] ('" + a + " " + b + "')";
    const auto ia = m->vocab_.find(a);
    if (ia == m->vocab_.end()) return corrupt_data(where + ": token '" + a + "' is not in the vocabulary");
    const auto ib = m->vocab_.find(b);
    if (ib == m->vocab_.end()) return corrupt_data(where + ": token '" + b + "' is not in the vocabulary");
    const std::string merged =
        a + (!prefix.empty() && b.compare(0, prefix.size(), prefix) == 0 ? b.substr(prefix.size()) : b);
    const auto im = m->vocab_.find(merged);
    if (im == m->vocab_.end()) {
      return corrupt_data(where + ": merged token '" + merged + "' is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, as tokenizers' map insertion does.
    m->merges_[pair_key(ia->second, ib->second)] = Merge{static_cast<uint32_t>(rank), im->second};
  }

  if (m->options_.unk_token) {
    const auto it = m->vocab_.find(*m->options_.unk_token);
    if (it == m->vocab_.end()) {
      return corrupt_data("model.unk_token '" + *m->options_.unk_token + "' is not in the vocabulary");
    }
    m->unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const auto it = m->vocab_.find(std::string_view(name));
    m->byte_token_id_[static_cast<size_t>(b)] = it == m->vocab_.end() ? -1 : it->second;
  }
  return m;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  return id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out, Dropped* dropped) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.ids.begin(), it->second.ids.end());
      if (dropped != nullptr && it->second.dropped.count > 0) {
        if (dropped->count == 0) dropped->first = it->second.dropped.first;
        dropped->count += it->second.dropped.count;
      }
      return;
    }
  }
  const size_t first = out.size();
  Dropped lost;
  merge_word(word, out, lost);
  if (dropped != nullptr && lost.count > 0) {
    if (dropped->count == 0) dropped->first = lost.first;
    dropped->count += lost.count;
  }
  if (cacheable) {
    CachedWord entry{std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()),
                     std::move(lost)};
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::move(entry));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out, Dropped& dropped) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, n - 1, n + 1, true});
  };

  // A pending unk is only flushed by an in-vocabulary character or the end of
  // the word, never by byte-fallback tokens: tokenizers orders them this way.
  int32_t pending_unk = -1;  // -1: none
  std::string key;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t start = pos;
    pos += utf8_length(static_cast<uint8_t>(word[pos]));
    pos = std::min(pos, word.size());
    key.clear();
    if (start != 0) key += options_.continuing_subword_prefix;
    key.append(word.substr(start, pos - start));
    if (pos == word.size()) key += options_.end_of_word_suffix;

    if (const auto it = vocab_.find(key); it != vocab_.end()) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
      add(it->second);
      continue;
    }
    if (options_.byte_fallback) {
      const bool all_bytes = std::all_of(key.begin(), key.end(), [&](char c) {
        return byte_token_id_[static_cast<uint8_t>(c)] >= 0;
      });
      if (all_bytes) {
        for (const char c : key) add(byte_token_id_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !options_.fuse_unk) add(pending_unk);
      pending_unk = *unk_id_;
    } else {
      if (dropped.count == 0) dropped.first = std::string(word.substr(start, pos - start));
      ++dropped.count;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::vector<Candidate> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(storage));
  auto push_pair = [&](int32_t left) {
    const Symbol& l = symbols[static_cast<size_t>(left)];
    if (l.next < 0) return;
    const auto it = merges_.find(pair_key(l.id, symbols[static_cast<size_t>(l.next)].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, static_cast<uint32_t>(left), it->second.new_id});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) push_pair(static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    // Stale entry: one side has changed since the pair was queued.
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(static_cast<int32_t>(top.pos));
  }
  for (const Symbol& s : symbols) {
    if (s.alive) out.push_back(s.id);
  }
}

}  // namespace submoe::io
