// SHA-256 (FIPS 180-4), for provenance hashes of checkpoints, calibration text
// and token ids. Streaming: update() any number of times, then hex_digest().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "submoe/core/status.h"

namespace submoe {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> data);
  void update(std::string_view text) { update({reinterpret_cast<const uint8_t*>(text.data()), text.size()}); }
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::span<const uint8_t> data);
// Hash of a file's bytes, read in chunks (I/O errors name the file).
Result<std::string> sha256_file(const std::string& path);

}  // namespace submoe
