// Shared helpers for the codec tests: dictionaries built once per process,
// deterministic random symbol matrices, golden-file access.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dict.h"

namespace submoe::testing {

// Built on first use and kept for the whole test binary (each takes ~0.1 s).
const ternary::TernaryDictionary& qmoe_dict_0885();
const ternary::TernaryDictionary& tunstall_dict_0885();

std::string fixture_path(const std::string& relative);  // under tests/fixtures
std::vector<uint8_t> read_file_bytes(const std::string& path);

// i.i.d. symbols, P(0) = p0, P(1) = P(2) = (1 - p0) / 2, independent of the
// standard library's distribution implementations.
std::vector<uint8_t> random_symbols(size_t n, double p0, uint64_t seed);
std::vector<ternary::RowScales> random_scales(size_t rows, uint64_t seed);

// Trit string of an entry as a std::vector.
std::vector<uint8_t> entry_trits(const ternary::DictEntry& e);

}  // namespace submoe::testing
