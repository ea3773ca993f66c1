// libFuzzer target: the residual-VQ codec's untrusted-input surface
// (codec/rvq.h). The first byte picks what the rest of the input is:
//   0: a packed matrix (shape bytes, then raw codes, scales and codebooks) ->
//      make_rvq_view + validate; if accepted, the reference decoder must
//      succeed and give finite values
//   1: a weight matrix (f16 values) -> encode with trained-on-the-fly
//      codebooks, decode, and the decoder must reproduce the encoder
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "submoe/codec/rvq.h"
#include "submoe/core/bf16.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::rvq;

namespace {

using submoe::fuzz::Reader;
using submoe::fuzz::require;

// Fixed codebooks (8 stages of N(0, 1) entries scaled down per stage, as
// trained residual codebooks are); training them here would dominate the run.
const RvqCodebookSet& codebooks() {
  static const RvqCodebookSet cb = [] {
    std::vector<float> v(size_t{kRvqMaxStages} * kRvqCodebookFloats);
    fill_gaussian(v, 7);
    for (size_t i = 0; i < v.size(); ++i) v[i] *= std::ldexp(1.0f, -static_cast<int>(i / kRvqCodebookFloats));
    return std::make_shared<const std::vector<float>>(std::move(v));
  }();
  return cb;
}

void packed(Reader r) {
  const uint32_t rows = 1 + r.u8() % 8, groups = 1 + r.u8() % 4, stages = 1 + r.u8() % kRvqMaxStages;
  const uint32_t cb_stages = 1 + r.u8() % kRvqMaxStages;
  const uint32_t cols = groups * kRvqDim;
  // The rest: codes, scales, codebooks in that order, each cut from the input
  // (short inputs give short arrays, which the view must refuse).
  auto take = [&](size_t want) {
    std::vector<std::byte> out(std::min(want, r.n));
    if (!out.empty()) std::memcpy(out.data(), r.p, out.size());
    r.p += out.size();
    r.n -= out.size();
    return out;
  };
  const std::vector<std::byte> codes = take(size_t{rows} * groups * stages);
  const std::vector<std::byte> scales = take(size_t{rows} * 2);
  std::vector<std::byte> cb = take(size_t{cb_stages} * kRvqCodebookFloats * 4);
  // Mostly valid codebooks: the input's bytes overwrite a prefix of trained ones.
  if (cb.size() < size_t{cb_stages} * kRvqCodebookFloats * 4 && r.u8() % 2 == 0) {
    std::vector<std::byte> full(size_t{cb_stages} * kRvqCodebookFloats * 4);
    std::memcpy(full.data(), codebooks()->data(), full.size());
    if (!cb.empty()) std::memcpy(full.data(), cb.data(), cb.size());
    cb = std::move(full);
  }
  auto view = make_rvq_view(rows, cols, stages, codes, scales, cb);
  if (!view.is_ok()) return;
  require(validate_rvq(*view).is_ok());
  auto w = decode_rvq_reference(*view);
  require(w.is_ok());
  for (float v : *w) require(std::isfinite(v));
  require(w->size() == size_t{rows} * cols);
}

void round_trip(Reader r) {
  const uint32_t rows = 1 + r.u8() % 4, groups = 1 + r.u8() % 3, stages = 1 + r.u8() % kRvqMaxStages;
  const uint32_t beam = 1 + r.u8() % 8;
  const uint32_t cols = groups * kRvqDim;
  std::vector<float> w(size_t{rows} * cols);
  for (float& v : w) {
    const uint16_t h = static_cast<uint16_t>(r.u8() | (r.u8() << 8));
    v = f16_bits_to_float(h);
  }
  auto m = encode_rvq_matrix(w, rows, cols, stages, codebooks(), beam, nullptr);
  if (!m.is_ok()) {
    // Only non-finite weights or rows whose RMS exceeds f16 may be refused.
    bool allowed = false;
    for (uint32_t row = 0; row < rows && !allowed; ++row) {
      double ss = 0;
      for (uint32_t c = 0; c < cols; ++c) {
        const float v = w[size_t{row} * cols + c];
        if (!std::isfinite(v)) allowed = true;
        ss += double(v) * v;
      }
      if (std::sqrt(ss / cols) > 65504.0) allowed = true;
    }
    require(allowed);
    return;
  }
  require(validate_rvq(m->view()).is_ok());
  auto d = decode_rvq_reference(m->view());
  require(d.is_ok());
  for (float v : *d) require(std::isfinite(v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Reader r{data + 1, size - 1};
  if (data[0] % 2 == 0)
    packed(r);
  else
    round_trip(r);
  return 0;
}
