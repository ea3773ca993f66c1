// Max-priority queue of symbol strings for the best-first dictionary builders
// (qmoe over pairs, tunstall over trits). Order: higher probability first; ties
// by the lexicographically smaller symbol list (a proper prefix is smaller).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace submoe::ternary::detail {

// A string of at most 14 symbols of at most 4 bits each (pairs 0..8 or trits
// 0..2), packed most significant first with zero padding, so that comparing
// (key, length) is the lexicographic order of the lists.
struct CandidateString {
  double prob;
  uint64_t key;
  uint32_t length;
  uint32_t bits_per_symbol;  // 4 for pairs, 2 for trits; capacity 56 bits

  uint32_t symbol(uint32_t i) const {
    const uint32_t capacity = 56 / bits_per_symbol;
    return static_cast<uint32_t>(key >> ((capacity - 1 - i) * bits_per_symbol)) & ((1u << bits_per_symbol) - 1);
  }
  CandidateString extended(uint32_t s, double p) const {
    const uint32_t capacity = 56 / bits_per_symbol;
    return {prob * p, key | (static_cast<uint64_t>(s) << ((capacity - 1 - length) * bits_per_symbol)), length + 1,
            bits_per_symbol};
  }
};

struct PopsFirst {
  // priority_queue pops the "largest": a pops before b when b < a here.
  bool operator()(const CandidateString& a, const CandidateString& b) const {
    if (a.prob != b.prob) return a.prob < b.prob;
    if (a.key != b.key) return a.key > b.key;
    return a.length > b.length;
  }
};

using BestFirstQueue = std::priority_queue<CandidateString, std::vector<CandidateString>, PopsFirst>;

inline BestFirstQueue make_best_first_queue(size_t reserve) {
  std::vector<CandidateString> storage;
  storage.reserve(reserve);
  return BestFirstQueue(PopsFirst{}, std::move(storage));
}

}  // namespace submoe::ternary::detail
