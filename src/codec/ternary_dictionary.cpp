// TernaryDictionary: checks a full entry table and builds its encoder trie.
#include "submoe/codec/ternary_dictionary.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace submoe::ternary {
namespace {

struct TrieBuild {
  std::vector<TrieNode> nodes;
  uint32_t max_length = 0;
};

Result<TrieBuild> build_trie(std::span<const DictEntry> entries, DictKind kind) {
  TrieBuild b;
  b.nodes.reserve(entries.size() * 2 + 1);
  b.nodes.push_back(TrieNode{{-1, -1, -1}, -1});
  uint8_t sym[kMaxWeightsPerEntry];
  for (size_t i = 0; i < entries.size(); ++i) {
    auto where = [i] { return "dictionary entry " + std::to_string(i) + ": "; };
    if (!dict_entry_valid(entries[i])) return validate_dict_entry(entries[i]).with_context("dictionary entry " + std::to_string(i));
    const uint32_t n = dict_entry_symbols(entries[i], sym);
    if (kind == DictKind::kQmoe && n % 2 != 0) {
      return corrupt_data(where() + "odd length " + std::to_string(n) + " in a qmoe dictionary (whole pairs only)");
    }
    b.max_length = std::max(b.max_length, n);
    size_t node = 0;
    for (uint32_t k = 0; k < n; ++k) {
      int32_t next = b.nodes[node].child[sym[k]];
      if (next < 0) {
        next = static_cast<int32_t>(b.nodes.size());
        b.nodes[node].child[sym[k]] = next;
        b.nodes.push_back(TrieNode{{-1, -1, -1}, -1});
      }
      node = static_cast<size_t>(next);
    }
    if (b.nodes[node].code >= 0) {
      return corrupt_data(where() + "same symbols as entry " + std::to_string(b.nodes[node].code) +
                          " (entries must be distinct)");
    }
    b.nodes[node].code = static_cast<int32_t>(i);
  }
  return b;
}

// The encoder (docs/format.md 5.2) fails only if its walk leaves the trie before
// passing any entry. Its walk follows real symbols, then virtual zeros, and never
// goes deeper than 28, so it is total exactly when every node with no entry on
// its root path (the root included) has all three children.
Status check_complete(const std::vector<TrieNode>& nodes) {
  struct Item {
    int32_t node;
    uint32_t depth;
    bool covered;
  };
  std::vector<Item> stack{{0, 0, false}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const TrieNode& n = nodes[static_cast<size_t>(it.node)];
    const bool covered = it.covered || n.code >= 0;
    for (uint32_t t = 0; t < 3; ++t) {
      if (n.child[t] >= 0) {
        stack.push_back({n.child[t], it.depth + 1, covered});
      } else if (!covered) {
        return corrupt_data("dictionary cannot encode every row: a string of " + std::to_string(it.depth) +
                            " symbols with no entry among its prefixes has no extension by symbol " +
                            std::to_string(t));
      }
    }
  }
  return Status::ok();
}

}  // namespace

Result<TernaryDictionary> TernaryDictionary::from_entries(DictKind kind, double p0,
                                                          std::span<const DictEntry> entries) {
  if (kind != DictKind::kQmoe && kind != DictKind::kTunstall) {
    return invalid_argument("unknown dictionary kind " + std::to_string(static_cast<uint32_t>(kind)));
  }
  if (!(p0 >= 0.0 && p0 <= 1.0)) return invalid_argument("p0 = " + std::to_string(p0) + " not in [0, 1]");
  if (entries.size() != kDictEntries) {
    return invalid_argument("a dictionary has " + std::to_string(kDictEntries) + " entries, got " +
                            std::to_string(entries.size()));
  }
  SUBMOE_ASSIGN_OR_RETURN(TrieBuild trie, build_trie(entries, kind));
  SUBMOE_RETURN_IF_ERROR(check_complete(trie.nodes));
  TernaryDictionary d;
  d.kind_ = kind;
  d.p0_ = p0;
  d.entries_.reset(kDictEntries, /*zero=*/false);
  std::copy(entries.begin(), entries.end(), d.entries_.data());
  d.trie_ = std::move(trie.nodes);
  d.trie_.shrink_to_fit();
  d.max_entry_length_ = trie.max_length;
  d.entry_lengths_.resize(kDictEntries);
  for (uint32_t c = 0; c < kDictEntries; ++c) d.entry_lengths_[c] = static_cast<uint8_t>(entry_length(entries[c]));
  return d;
}

Result<TernaryDictionary> build_dictionary(DictKind kind, double p0) {
  switch (kind) {
    case DictKind::kQmoe:
      return build_qmoe_dictionary(p0);
    case DictKind::kTunstall:
      return build_tunstall_dictionary(p0);
  }
  return invalid_argument("unknown dictionary kind");
}

}  // namespace submoe::ternary
