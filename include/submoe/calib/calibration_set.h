// Calibration samples: a text file tokenized into N samples of L tokens.
//
// Selection (deterministic, documented in docs/compress.md): the whole file is
// tokenized without special tokens, cut into consecutive windows of L tokens
// (a short tail is dropped), and N windows are taken at evenly spaced window
// indices floor(i * W / N), i = 0..N-1, so the samples cover the whole text.
// With fewer windows than N every window is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/tokenizer.h"

namespace submoe::calib {

struct CalibrationSet {
  size_t samples = 0;
  size_t seq_len = 0;
  std::vector<int32_t> tokens;  // samples x seq_len, sample-major
  size_t text_tokens = 0;       // tokens in the whole file
  size_t windows = 0;           // windows available
  std::string text_sha256;      // of the file's bytes
  std::string tokens_sha256;    // of `tokens` as little-endian int32
  const int32_t* sample(size_t i) const { return tokens.data() + i * seq_len; }
};

// Errors: unreadable file, seq_len or samples 0, text shorter than one window.
Result<CalibrationSet> make_calibration_set(const std::string& text_path, const io::Tokenizer& tokenizer, bool lossy_text,
                                            size_t samples, size_t seq_len);

// Same selection over token ids already in memory (tests, other front ends).
Result<CalibrationSet> select_calibration_windows(std::vector<int32_t> ids, size_t samples, size_t seq_len);

}  // namespace submoe::calib
