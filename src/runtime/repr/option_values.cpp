#include "runtime/repr/option_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace submoe::runtime::repr {

Result<uint64_t> option_uint(const std::string& key, const std::string& v, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || v[0] == '+' || v[0] == ' ' || *end != '\0' || errno != 0 || x < lo || x > hi)
    return invalid_argument("--repr-opt " + key + "=" + v + ": expected an integer in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
  return static_cast<uint64_t>(x);
}

Result<double> option_number(const std::string& key, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || v[0] == ' ' || *end != '\0' || !std::isfinite(d) || d < lo || d > hi)
    return invalid_argument("--repr-opt " + key + "=" + v + ": expected a number in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
  return d;
}

}  // namespace submoe::runtime::repr
