#include "codec_test_util.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace submoe::testing {

const ternary::TernaryDictionary& qmoe_dict_0885() {
  static const ternary::TernaryDictionary d = ternary::build_qmoe_dictionary(0.885).value();
  return d;
}

const ternary::TernaryDictionary& tunstall_dict_0885() {
  static const ternary::TernaryDictionary d = ternary::build_tunstall_dictionary(0.885).value();
  return d;
}

// Golden data lives in tests/fixtures/ (qmoe/ is a verbatim copy of
// ../shared/testdata/qmoe) so that a clean clone tests without ../shared.
std::string fixture_path(const std::string& relative) {
  return std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/" + relative;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> random_symbols(size_t n, double p0, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> s(n);
  for (auto& v : s) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    v = u < p0 ? 0 : ((rng() & 1) ? 1 : 2);
  }
  return s;
}

std::vector<ternary::RowScales> random_scales(size_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ternary::RowScales> s(rows);
  for (auto& v : s) {
    const float a = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53) * 0.1f + 1e-3f;
    const float b = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53) * 0.1f + 1e-3f;
    v = {float_to_bf16(-a), float_to_bf16(b)};
  }
  return s;
}

std::vector<uint8_t> entry_trits(const ternary::DictEntry& e) {
  uint8_t buf[ternary::kMaxWeightsPerEntry];
  const uint32_t n = ternary::dict_entry_symbols(e, buf);
  return {buf, buf + n};
}

}  // namespace submoe::testing
