// The values of --repr-opt KEY=VALUE that representations parse: strict
// numbers in a range, with errors that name the option and the range.
#pragma once

#include <cstdint>
#include <string>

#include "submoe/core/status.h"

namespace submoe::runtime::repr {

// A decimal integer in [lo, hi] (no sign, no trailing text).
Result<uint64_t> option_uint(const std::string& key, const std::string& value, uint64_t lo, uint64_t hi);
// A finite number in [lo, hi] (no trailing text).
Result<double> option_number(const std::string& key, const std::string& value, double lo, double hi);

}  // namespace submoe::runtime::repr
