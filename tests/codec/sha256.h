// SHA-256 (FIPS 180-4) for checking golden files in tests; written from the
// standard, checked against its test vectors in sha256_test.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace submoe::testing {

std::string sha256_hex(std::span<const uint8_t> data);

}  // namespace submoe::testing
