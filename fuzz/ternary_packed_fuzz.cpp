// libFuzzer target: the ternary codec's untrusted-input surface. The first byte
// picks what the rest of the input is:
//   0: a dictionary blob            -> deserialize; if accepted, encode/decode round trip
//   1: a packed matrix (raw arrays) -> make_packed_view + validate; if accepted,
//                                      every decoder and the ledger must succeed
//   2: entry overwrites of a valid dictionary under a valid matrix -> validate, decode
//   3: a symbol matrix              -> encode with both codes, decode, compare
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "submoe/codec/ternary_dict.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::ternary;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;

const TernaryDictionary& dict(int which) {
  static const TernaryDictionary q = build_qmoe_dictionary(0.885).value();
  static const TernaryDictionary t = build_tunstall_dictionary(0.885).value();
  return which == 0 ? q : t;
}

void check_round_trip(const std::vector<uint8_t>& symbols, uint32_t rows, uint32_t cols, const TernaryDictionary& d) {
  std::vector<RowScales> scales(rows, RowScales{float_to_bf16(-1.0f), float_to_bf16(2.0f)});
  auto m = encode_ternary(symbols, rows, cols, scales, d);
  require(m.is_ok());
  require(validate_packed(m->view()).is_ok());
  auto back = decode_symbols(m->view());
  require(back.is_ok() && *back == symbols);
}

void fuzz_dictionary_blob(const uint8_t* data, size_t size) {
  // Short inputs get the good blob with the input written over its start, so
  // the header and the first entries are what the fuzzer explores.
  static const std::vector<uint8_t> good = serialize_dictionary(dict(1));
  std::vector<uint8_t> blob = good;
  if (size < 4096) {
    std::memcpy(blob.data(), data, size);
  } else {
    blob.assign(data, data + size);
  }
  auto d = deserialize_dictionary(blob);
  if (!d.is_ok()) return;
  const std::vector<uint8_t> symbols = {0, 1, 2, 0, 0, 0, 0, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  check_round_trip(symbols, 3, 7, *d);
}

void fuzz_packed_arrays(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = r.u8() % 17;
  const uint32_t cols = r.u16() % 600;
  const int which = static_cast<int>(r.u8() & 1);
  // Copy into aligned storage: offsets, then scales, then the rest as codes.
  std::vector<int32_t> offsets(rows + 1);
  std::vector<RowScales> scales(rows);
  const size_t off_bytes = offsets.size() * 4, scale_bytes = scales.size() * 4;
  if (r.n < off_bytes + scale_bytes) return;
  std::memcpy(offsets.data(), r.p, off_bytes);
  if (scale_bytes) std::memcpy(scales.data(), r.p + off_bytes, scale_bytes);
  const size_t code_bytes = (r.n - off_bytes - scale_bytes) & ~size_t{1};
  std::vector<uint16_t> codes(code_bytes / 2);
  if (code_bytes) std::memcpy(codes.data(), r.p + off_bytes + scale_bytes, code_bytes);
  auto v = make_packed_view(rows, cols, std::as_bytes(std::span(codes)), std::as_bytes(std::span(offsets)),
                            std::as_bytes(std::span(scales)), dict(which).entries());
  require(v.is_ok());
  if (!validate_packed(*v).is_ok()) return;
  auto s = decode_symbols(*v);
  auto f = decode_to_float(*v);
  auto l = compute_ledger(*v);
  require(s.is_ok() && f.is_ok() && l.is_ok());
  require(s->size() == size_t{rows} * cols && f->size() == s->size());
  require(l->symbol_counts[0] + l->symbol_counts[1] + l->symbol_counts[2] == l->weights);
  auto copy = PackedTernaryMatrix::from_parts(rows, cols, codes, offsets, scales, dict(which).entries());
  require(copy.is_ok());
}

void fuzz_dictionary_entries(const uint8_t* data, size_t size) {
  static std::vector<DictEntry> entries(dict(0).entry_span().begin(), dict(0).entry_span().end());
  static const std::vector<uint8_t> symbols = [] {
    std::vector<uint8_t> s(4 * 97);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>((i * i + i / 7) % 5 < 3 ? 0 : 1 + i % 2);
    return s;
  }();
  static const PackedTernaryMatrix m =
      encode_ternary(symbols, 4, 97, std::vector<RowScales>(4, RowScales{float_to_bf16(-1.0f), float_to_bf16(1.0f)}),
                     dict(0))
          .value();
  // Records of (entry index: 2 bytes, word0: 4 bytes, word1: 4 bytes), restricted
  // to the entries this matrix uses so that overwrites matter.
  std::vector<std::pair<uint16_t, DictEntry>> saved;
  Reader r{data, size};
  while (r.n >= 10) {
    const uint16_t code = m.codes()[r.u16() % m.num_codes()];
    DictEntry e;
    e.word[0] = r.u16() | (r.u16() << 16);
    e.word[1] = r.u16() | (r.u16() << 16);
    saved.emplace_back(code, entries[code]);
    entries[code] = e;
  }
  PackedTernaryView v = m.view();
  v.dict = entries.data();
  if (validate_packed(v).is_ok()) {
    auto s = decode_symbols(v);
    require(s.is_ok() && s->size() == symbols.size());
  }
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) entries[it->first] = it->second;
}

void fuzz_encode(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint32_t rows = 1 + r.u8() % 8;
  const uint32_t cols = r.u16() % 300;
  std::vector<uint8_t> symbols(size_t{rows} * cols);
  for (auto& s : symbols) s = static_cast<uint8_t>(r.u8() % 3);
  check_round_trip(symbols, rows, cols, dict(0));
  check_round_trip(symbols, rows, cols, dict(1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 4) {
    case 0:
      fuzz_dictionary_blob(data + 1, size - 1);
      break;
    case 1:
      fuzz_packed_arrays(data + 1, size - 1);
      break;
    case 2:
      fuzz_dictionary_entries(data + 1, size - 1);
      break;
    default:
      fuzz_encode(data + 1, size - 1);
      break;
  }
  return 0;
}
