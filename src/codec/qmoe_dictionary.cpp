// QMoE's dictionary (docs/format.md 3.1): best-first search over strings of
// trit pairs under the i.i.d. model, entry index = pop order.
#include <cstddef>
#include <string>

#include "best_first_queue.h"
#include "submoe/codec/ternary_dictionary.h"

namespace submoe::ternary {

Result<TernaryDictionary> build_qmoe_dictionary(double p0) {
  if (!(p0 >= 0.0 && p0 <= 1.0)) return invalid_argument("qmoe dictionary: p0 = " + std::to_string(p0) + " not in [0, 1]");
  const double trit_prob[3] = {p0, (1.0 - p0) / 2.0, (1.0 - p0) / 2.0};
  // Pair symbol s = 3 * t[2k+1] + t[2k]: the first weight is the low base-3 digit.
  double pair_prob[9];
  for (uint32_t s = 0; s < 9; ++s) pair_prob[s] = trit_prob[s % 3] * trit_prob[s / 3];

  // 65537 pops push at most 9 each; the queue never needs more room than that.
  detail::BestFirstQueue queue = detail::make_best_first_queue(9 * (kDictEntries + 1) + 1);
  queue.push({1.0, 0, 0, 4});
  std::vector<DictEntry> entries;
  entries.reserve(kDictEntries);
  uint8_t trits[kMaxWeightsPerEntry];
  bool have_single[9] = {};
  while (entries.size() < kDictEntries) {
    const detail::CandidateString top = queue.top();
    queue.pop();
    if (top.length > 0) {
      for (uint32_t k = 0; k < top.length; ++k) {
        const uint32_t s = top.symbol(k);
        trits[2 * k] = static_cast<uint8_t>(s % 3);
        trits[2 * k + 1] = static_cast<uint8_t>(s / 3);
      }
      SUBMOE_ASSIGN_OR_RETURN(DictEntry e, make_dict_entry({trits, 2 * size_t{top.length}}));
      entries.push_back(e);
      if (top.length == 1) have_single[top.symbol(0)] = true;
    }
    if (top.length < kMaxPairsPerEntry) {
      for (uint32_t s = 0; s < 9; ++s) queue.push(top.extended(s, pair_prob[s]));
    }
  }
  // Completion rule (docs/format.md 3.1): at extreme p0 some single pairs are too
  // improbable to be popped, and without them some rows cannot be encoded. They
  // replace the last popped entries, which keeps the table prefix-closed (the
  // extensions of an entry are popped after it) and ordered (an entry that was
  // never popped is no more probable than any popped one). At p0 = 0.885 all
  // nine are among the first 16 entries and this changes nothing.
  uint32_t missing = 0;
  for (bool have : have_single) missing += have ? 0 : 1;
  // Drop the last `missing` popped entries of two or more pairs (never a single
  // pair: it would go missing in turn).
  for (size_t i = entries.size(); missing > 0 && i-- > 0;) {
    if (entry_pairs(entries[i].word[0]) > 1) {
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
      --missing;
    }
  }
  for (uint8_t s = 0; s < 9; ++s) {
    if (have_single[s]) continue;
    const uint8_t pair[2] = {static_cast<uint8_t>(s % 3), static_cast<uint8_t>(s / 3)};
    SUBMOE_ASSIGN_OR_RETURN(DictEntry e, make_dict_entry(pair));
    entries.push_back(e);
  }
  return TernaryDictionary::from_entries(DictKind::kQmoe, p0, entries);
}

}  // namespace submoe::ternary
