#include "submoe/calib/calibration_set.h"

#include <algorithm>

#include "submoe/core/sha256.h"
#include "submoe/io/file_util.h"

namespace submoe::calib {

Result<CalibrationSet> select_calibration_windows(std::vector<int32_t> ids, size_t samples, size_t seq_len) {
  if (samples == 0 || seq_len == 0) return invalid_argument("calibration: samples and sequence length must be >= 1");
  const size_t windows = ids.size() / seq_len;
  if (windows == 0)
    return invalid_argument("calibration text has " + std::to_string(ids.size()) +
                            " tokens, fewer than one sample of " + std::to_string(seq_len));
  CalibrationSet set;
  set.samples = std::min(samples, windows);
  set.seq_len = seq_len;
  set.text_tokens = ids.size();
  set.windows = windows;
  set.tokens.resize(set.samples * seq_len);
  for (size_t i = 0; i < set.samples; ++i) {
    const size_t w = i * windows / set.samples;
    std::copy_n(ids.begin() + static_cast<ptrdiff_t>(w * seq_len), seq_len,
                set.tokens.begin() + static_cast<ptrdiff_t>(i * seq_len));
  }
  Sha256 h;
  for (int32_t t : set.tokens) {
    const uint32_t u = static_cast<uint32_t>(t);
    const uint8_t le[4] = {static_cast<uint8_t>(u), static_cast<uint8_t>(u >> 8), static_cast<uint8_t>(u >> 16),
                           static_cast<uint8_t>(u >> 24)};
    h.update({le, 4});
  }
  set.tokens_sha256 = h.hex_digest();
  return set;
}

Result<CalibrationSet> make_calibration_set(const std::string& text_path, const io::Tokenizer& tokenizer, bool lossy_text,
                                            size_t samples, size_t seq_len) {
  SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_text_file(text_path, lossy_text));
  auto ids = tokenizer.encode_lossless(text, /*add_special_tokens=*/false);
  if (!ids.is_ok()) return ids.status().with_context(text_path);
  SUBMOE_ASSIGN_OR_RETURN(CalibrationSet set, select_calibration_windows(std::move(*ids), samples, seq_len));
  set.text_sha256 = sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  return set;
}

}  // namespace submoe::calib
