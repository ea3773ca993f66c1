// Tunstall tree over single trits (docs/format.md 3.2): repeatedly split the
// most probable leaf shallower than 28 trits into its three children. Each split
// adds two leaves, so 32767 splits give 65535 leaves; the one remaining codeword
// is the most probable child of the leaf that would be split next (that leaf
// stays a codeword too, the greedy longest match picks between them).
#include <algorithm>
#include <string>

#include "best_first_queue.h"
#include "submoe/codec/ternary_dictionary.h"

namespace submoe::ternary {

Result<TernaryDictionary> build_tunstall_dictionary(double p0) {
  if (!(p0 >= 0.0 && p0 <= 1.0)) {
    return invalid_argument("tunstall dictionary: p0 = " + std::to_string(p0) + " not in [0, 1]");
  }
  const double trit_prob[3] = {p0, (1.0 - p0) / 2.0, (1.0 - p0) / 2.0};
  constexpr uint32_t kSplits = (kDictEntries - 1) / 2;  // 32767 splits -> 65535 leaves

  detail::BestFirstQueue splittable = detail::make_best_first_queue(2 * kDictEntries);
  std::vector<detail::CandidateString> leaves;  // final: 28 trits deep, or collected at the end
  leaves.reserve(kDictEntries);
  splittable.push({1.0, 0, 0, 2});
  for (uint32_t i = 0; i < kSplits; ++i) {
    const detail::CandidateString leaf = splittable.top();
    splittable.pop();
    for (uint32_t t = 0; t < 3; ++t) {
      const detail::CandidateString child = leaf.extended(t, trit_prob[t]);
      if (child.length < kMaxWeightsPerEntry) {
        splittable.push(child);
      } else {
        leaves.push_back(child);
      }
    }
  }
  const detail::CandidateString next_split = splittable.top();
  const uint32_t likeliest_trit = trit_prob[0] >= trit_prob[1] ? 0 : 1;
  leaves.push_back(next_split.extended(likeliest_trit, trit_prob[likeliest_trit]));
  while (!splittable.empty()) {
    leaves.push_back(splittable.top());
    splittable.pop();
  }
  // Index order: decreasing probability, ties by the smaller trit string.
  std::sort(leaves.begin(), leaves.end(),
            [](const detail::CandidateString& a, const detail::CandidateString& b) { return detail::PopsFirst{}(b, a); });

  std::vector<DictEntry> entries;
  entries.reserve(kDictEntries);
  uint8_t trits[kMaxWeightsPerEntry];
  for (const detail::CandidateString& leaf : leaves) {
    for (uint32_t k = 0; k < leaf.length; ++k) trits[k] = static_cast<uint8_t>(leaf.symbol(k));
    SUBMOE_ASSIGN_OR_RETURN(DictEntry e, make_dict_entry({trits, leaf.length}));
    entries.push_back(e);
  }
  return TernaryDictionary::from_entries(DictKind::kTunstall, p0, entries);
}

}  // namespace submoe::ternary
