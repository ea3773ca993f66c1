// libFuzzer target: the tokenizer.json loader and the encode / decode pipeline
// it builds (io/tokenizer.h: added tokens, normalizers, pre-tokenizers, BPE,
// decoders, post-processors). The input is the tokenizer.json text (at most
// 64 KiB). If it loads, a few fixed texts (ASCII, multi-byte UTF-8, invalid
// UTF-8, NUL and control bytes) are encoded. Beyond "no crash":
//   - encode_lossless either fails with kInvalidArgument or returns exactly
//     encode()'s ids;
//   - encode is deterministic (a second call, through the word cache, gives
//     the same ids);
//   - decode(), with and without skip_special_tokens, and every DecodeStream
//     step return valid UTF-8 ("always valid UTF-8"); NUL can be a real token
//     character, so NUL bytes are allowed, every other byte must form strict
//     UTF-8 (io::first_invalid_utf8);
//   - id_to_token / token_to_id of the encoded ids do not crash, and an id
//     with a token maps back to an id spelling the same token.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::io;

namespace {

using submoe::fuzz::require;

// Strict UTF-8 where NUL bytes are allowed (first_invalid_utf8 flags NUL,
// which is a valid character, so skip over it and continue).
bool valid_utf8_allowing_nul(std::string_view s) {
  while (!s.empty()) {
    const size_t bad = first_invalid_utf8(s);
    if (bad == std::string_view::npos) return true;
    if (s[bad] != '\0') return false;
    s.remove_prefix(bad + 1);
  }
  return true;
}

constexpr char kNulText[] = "nul\0byte \x01\x7F";

constexpr std::string_view kTexts[] = {
    "Hello, world! The quick brown fox jumps over the lazy dog 1234567890.",
    "  leading spaces\tand\ttabs\nnew lines\r\n  ",
    "caf\xC3\xA9 na\xC3\xAFve \xE4\xB8\xAD\xE6\x96\x87 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
    "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D e\xCC\x81 \xEF\xAC\x81",
    "bad \xFF\xFE bytes \xC3 \xE4\xB8 \xF0\x9F\x98 \xED\xA0\x80 \xC0\xAF \xF4\x90\x80\x80 end",
    std::string_view(kNulText, sizeof kNulText - 1),
    "<s></s><unk><|endoftext|><|im_start|>user<|im_end|> <0x41>\xE2\x96\x81word",
    "",
};

void check_decode(const Tokenizer& t, const std::vector<int32_t>& ids) {
  require(valid_utf8_allowing_nul(t.decode(ids, false)));
  require(valid_utf8_allowing_nul(t.decode(ids, true)));
  DecodeStream stream(t, false);
  for (int32_t id : ids) require(valid_utf8_allowing_nul(stream.step(id)));
}

void check_text(const Tokenizer& t, std::string_view text, bool special) {
  const std::vector<int32_t> ids = t.encode(text, special);
  require(t.encode(text, special) == ids);
  auto lossless = t.encode_lossless(text, special);
  if (lossless.is_ok()) {
    require(*lossless == ids);
  } else {
    require(lossless.status().code() == ErrorCode::kInvalidArgument);
  }
  for (int32_t id : ids) {
    (void)t.is_special(id);
    const auto tok = t.id_to_token(id);
    if (!tok) continue;
    const auto back = t.token_to_id(*tok);
    require(back.has_value());
    const auto tok2 = t.id_to_token(*back);
    require(tok2 && *tok2 == *tok);
  }
  check_decode(t, ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 16)) return 0;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto t = Tokenizer::from_json(json, "fuzz");
  if (!t.is_ok()) return 0;
  const Tokenizer& tok = *t;
  require(tok.vocab_size() >= 0);
  for (std::string_view text : kTexts) {
    check_text(tok, text, true);
    check_text(tok, text, false);
  }
  // Ids around the vocabulary's edges, unknown ones included (skipped by decode).
  const int64_t v = tok.vocab_size();
  std::vector<int32_t> edge = {0, 1, 2, 3, 255, 256, -1, INT32_MAX, INT32_MIN};
  for (int64_t id : {v - 1, v, v + 1})
    if (id >= INT32_MIN && id <= INT32_MAX) edge.push_back(static_cast<int32_t>(id));
  check_decode(tok, edge);
  if (tok.bos_id()) (void)tok.id_to_token(*tok.bos_id());
  if (tok.eos_id()) (void)tok.id_to_token(*tok.eos_id());
  return 0;
}
