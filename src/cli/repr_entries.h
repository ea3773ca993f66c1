// The --reprs and --bits lists of `compare` and `bench layer`: the same entry
// syntax and the same mapping onto runtime::ReprOptions, so a list that one
// command accepts means the same representations in the other.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/runtime/representation.h"

namespace submoe::cli {

// One --reprs entry: a registry name, optionally with its own options,
// "aqlm:shape=3x5:beam=8" (each KEY=VALUE is one --repr-opt).
struct ReprEntry {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
};

// The non-empty items of a comma-separated list.
std::vector<std::string> split_list(const std::string& s);

// One entry; a malformed KEY=VALUE or a name the registry does not know is an
// error naming it (before any work is done).
Result<ReprEntry> parse_repr_entry(const std::string& text);

// Every entry of --reprs (the entry texts, each checked by parse_repr_entry);
// an empty list is an error.
Result<std::vector<std::string>> parse_repr_list(const std::string& list);

// --bits: rates in (0, 16]; an empty list is {0}, each representation's
// default rate (for entries that carry their own, e.g. nf4 or aqlm:shape=...).
Result<std::vector<double>> parse_bits_list(const std::string& list);

// Whether the registry accepts `group_size` for this entry at this rate (its
// own options decide; the representation is not named here). 0: never.
bool takes_group_size(const ReprEntry& e, double bits, uint32_t group_size);

// The options of one (entry, rate) combination: bits when > 0, the group size
// where takes_group_size, the entry's own options. The representation may
// still refuse them; make_codec says why.
runtime::ReprOptions entry_options(const ReprEntry& e, double bits, uint32_t group_size);

// A rate as it appears in labels and arguments ("3", "2.5").
std::string format_bits(double bits);

}  // namespace submoe::cli
