// The rvq representation (src/runtime/repr/rvq): the encoder's reconstruction
// is exactly what the reference decoder gives for its packed bytes; the fused
// op (rotation + LUT kernel) agrees with a float64 product on the decoded
// weights; block-LDL feedback through the solver beats RTN on the layer output
// error; untrusted fields, records and options are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "repr_test_support.h"
#include "submoe/linalg/dense.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

std::shared_ptr<const MatrixCodec> small_codec(double bits, bool rht = true,
                                               std::vector<std::pair<std::string, std::string>> more = {}) {
  ReprOptions o{"rvq", bits};
  o.extra = {{"train_vectors", "2048"}, {"iters", "4"}, {"beam", "4"}};
  if (!rht) o.extra.emplace_back("rht", "off");
  o.extra.insert(o.extra.end(), more.begin(), more.end());
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : nullptr;
}

struct Problem {
  uint32_t rows, cols;
  std::vector<float> w, h, x;  // x: tokens x cols calibration inputs
  size_t tokens;
};

Problem make_problem(uint32_t rows, uint32_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01;
  Problem p{rows, cols, std::vector<float>(size_t{rows} * cols), std::vector<float>(size_t{cols} * cols, 0.0f), {}, 4 * cols};
  for (float& v : p.w) v = 0.02f * n01(rng);
  p.w[5] = 0.5f;  // an outlier the rotation spreads out
  p.x.resize(p.tokens * cols);
  std::vector<float> z(4);
  for (size_t t = 0; t < p.tokens; ++t) {
    for (float& v : z) v = n01(rng);
    for (uint32_t c = 0; c < cols; ++c) p.x[t * cols + c] = 0.3f * n01(rng) + z[c % 4] + 0.5f * z[(c / 4) % 4];
  }
  linalg::accumulate_gram_f32(p.tokens, cols, p.x.data(), cols, 1.0f / static_cast<float>(p.tokens), p.h.data());
  return p;
}

using testing::spans_of;

// Runs the pipeline's steps on one matrix: prepare (rotation), GPTQ or RTN.
std::unique_ptr<MatrixEncoder> encode(const MatrixCodec& c, const Problem& p, bool gptq) {
  return testing::encode_matrix(c, p.w, p.h, p.rows, p.cols, gptq);
}

double output_error(const Problem& p, const std::vector<float>& q) {
  double e = 0;
  for (size_t t = 0; t < p.tokens; ++t)
    for (uint32_t r = 0; r < p.rows; ++r) {
      double d = 0;
      for (uint32_t c = 0; c < p.cols; ++c)
        d += (double(p.w[size_t{r} * p.cols + c]) - q[size_t{r} * p.cols + c]) * p.x[t * p.cols + c];
      e += d * d;
    }
  return e;
}

TEST(RvqRepresentation, EncoderReconstructionIsTheDecodersBitForBit) {
  for (bool rht : {true, false}) {
    SCOPED_TRACE(rht ? "rht" : "no rotation");
    auto codec = small_codec(2.0, rht);
    ASSERT_NE(codec, nullptr);
    const Problem p = make_problem(24, 64, 1);
    auto enc = encode(*codec, p, true);
    auto packed = enc->pack();
    ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
    const auto specs = codec->fields(p.rows, p.cols);
    ASSERT_EQ(packed->size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ((*packed)[i].name, specs[i].name);
      EXPECT_EQ((*packed)[i].shape, specs[i].shape);
    }
    const auto f = spans_of(*packed);
    auto dec = codec->decode(p.rows, p.cols, f);
    ASSERT_TRUE(dec.is_ok()) << dec.status().to_string();
    const std::vector<float> q = enc->dequantize();
    ASSERT_EQ(*dec, q);
    // Bytes: codes S per 16 weights + an f16 scale per row (+ 16 bytes of seeds).
    size_t bytes = 0;
    for (const auto& t : *packed) bytes += t.bytes.size();
    EXPECT_EQ(bytes, size_t{24} * 4 * 4 + 24 * 2 + (rht ? 16 : 0));
  }
}

TEST(RvqRepresentation, FusedOpMatchesTheDecodedWeights) {
  auto codec = small_codec(1.5);
  ASSERT_NE(codec, nullptr);
  const Problem p = make_problem(48, 96, 2);  // 48 = 16 x 3 and 96 = 8 x 12: Paley factors on both sides
  auto enc = encode(*codec, p, false);
  auto packed = enc->pack();
  ASSERT_TRUE(packed.is_ok());
  const auto f = spans_of(*packed);
  const std::vector<float> wq = enc->dequantize();
  for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kReferenceDecode}) {
    auto op = codec->make_op(p.rows, p.cols, f, mode);
    ASSERT_TRUE(op.is_ok()) << op.status().to_string();
    EXPECT_NE((*op)->describe().find(mode == ExecutionMode::kFused ? "rvq 3 stages [48, 96]" : "rvq reference"),
              std::string::npos)
        << (*op)->describe();
    for (size_t n : {size_t{1}, size_t{3}, size_t{9}}) {
      std::vector<float> y(n * p.rows);
      (*op)->forward(p.x.data(), n, y.data(), nullptr);
      for (size_t t = 0; t < n; ++t)
        for (uint32_t r = 0; r < p.rows; ++r) {
          double want = 0, mag = 0;
          for (uint32_t c = 0; c < p.cols; ++c) {
            want += double(wq[size_t{r} * p.cols + c]) * p.x[t * p.cols + c];
            mag += std::fabs(double(wq[size_t{r} * p.cols + c]) * p.x[t * p.cols + c]);
          }
          // Rotations and the LUT sums in float32: a few hundred roundings of
          // terms bounded by mag (documented bounds in kernels/hadamard.h and
          // kernels/rvq_gemv.h); 1e-4 relative is far below one stage's effect.
          // One token takes the int8 tables: 18 entries per row, each off by up
          // to 1/254 of its tile's largest entry; this x is periodic, so the
          // rotation piles its energy into a few coordinates, and the rows'
          // outputs are ~1% of mag (cancellation): measured up to 5e-3 x mag.
          const double tol = mode == ExecutionMode::kFused && n == 1 ? 1e-2 : 1e-4;
          ASSERT_NEAR(y[t * p.rows + r], want, tol * mag + 1e-6) << "token " << t << " row " << r;
        }
    }
  }
}

TEST(RvqRepresentation, BlockLdlFeedbackBeatsRtnAndRateLowersError) {
  const Problem p = make_problem(32, 128, 3);
  double prev = 1e300;
  for (double bits : {1.0, 2.0, 3.0}) {
    auto codec = small_codec(bits);
    ASSERT_NE(codec, nullptr);
    const double e_rtn = output_error(p, encode(*codec, p, false)->dequantize());
    const double e_ldl = output_error(p, encode(*codec, p, true)->dequantize());
    EXPECT_LT(e_ldl, 0.9 * e_rtn) << bits << " bits: ldl " << e_ldl << " rtn " << e_rtn;
    EXPECT_LT(e_ldl, prev) << bits << " bits";
    prev = e_ldl;
  }
}

// Choosing each block's codeword under the solver's metric ||(w_F - q_F)
// U_FF^-1|| instead of the Euclidean distance lowers the layer output error on
// correlated inputs (the gain is off in both, to isolate the assignment).
TEST(RvqRepresentation, BlockMetricAssignmentLowersTheOutputError) {
  const Problem p = make_problem(32, 128, 4);
  for (double bits : {1.0, 2.0}) {
    auto euclid = small_codec(bits, true, {{"metric", "euclidean"}, {"gain", "none"}});
    auto block = small_codec(bits, true, {{"metric", "block"}, {"gain", "none"}});
    ASSERT_NE(euclid, nullptr);
    ASSERT_NE(block, nullptr);
    const double e_euclid = output_error(p, encode(*euclid, p, true)->dequantize());
    const double e_block = output_error(p, encode(*block, p, true)->dequantize());
    EXPECT_LT(e_block, 0.95 * e_euclid) << bits << " bits: block " << e_block << " euclidean " << e_euclid;
  }
}

// Nearest-codeword VQ shrinks a row by about its distortion (<w_hat, w> <
// <w, w>); the unbiased gain scales each row's f16 scale by the ratio of a
// greedy pre-encoding, so that <w_hat, w> = <w, w> up to the difference between
// that pre-encoding and the beam search's codes (a few percent on one row of
// 64 blocks, far less on average).
TEST(RvqRepresentation, UnbiasedGainRemovesTheRowShrinkage) {
  const Problem p = make_problem(32, 1024, 5);
  for (bool gain : {false, true}) {
    auto codec = small_codec(1.0, false, {{"gain", gain ? "unbiased" : "none"}});
    ASSERT_NE(codec, nullptr);
    const std::vector<float> q = encode(*codec, p, false)->dequantize();
    double sum = 0;
    for (uint32_t r = 1; r < p.rows; ++r) {  // row 0 holds the outlier
      double ww = 0, qw = 0;
      for (uint32_t c = 0; c < p.cols; ++c) {
        const double w = p.w[size_t{r} * p.cols + c];
        ww += w * w;
        qw += w * q[size_t{r} * p.cols + c];
      }
      sum += qw / ww;
      if (gain) {
        EXPECT_NEAR(qw / ww, 1.0, 0.08) << "row " << r;
      }
    }
    const double mean = sum / (p.rows - 1);
    if (gain) {
      EXPECT_NEAR(mean, 1.0, 0.02);
    } else {
      EXPECT_LT(mean, 0.85);  // 1 bit: distortion about 0.2
    }
  }
}

TEST(RvqRepresentation, CorruptFieldsAreRejectedByName) {
  auto codec = small_codec(2.0);
  ASSERT_NE(codec, nullptr);
  const Problem p = make_problem(16, 32, 4);
  auto packed = encode(*codec, p, false)->pack();
  ASSERT_TRUE(packed.is_ok());
  auto expect_bad = [&](const std::function<void(std::vector<PackedTensor>&)>& edit, const std::string& needle) {
    std::vector<PackedTensor> t = *packed;
    edit(t);
    const auto f = spans_of(t);
    auto d = codec->decode(p.rows, p.cols, f);
    ASSERT_FALSE(d.is_ok()) << needle;
    EXPECT_NE(d.status().message().find(needle), std::string::npos) << d.status().to_string();
    EXPECT_FALSE(codec->make_op(p.rows, p.cols, f, ExecutionMode::kFused).is_ok()) << needle;
  };
  auto set_scale = [](std::vector<PackedTensor>& t, uint16_t bits) { std::memcpy(t[1].bytes.data() + 6, &bits, 2); };
  expect_bad([&](auto& t) { set_scale(t, 0x7e00); }, "scales");  // NaN
  expect_bad([&](auto& t) { set_scale(t, 0x7c00); }, "scales");  // +Inf
  expect_bad([&](auto& t) { set_scale(t, 0x0000); }, "scales");  // zero
  expect_bad([&](auto& t) { set_scale(t, 0xbc00); }, "scales");  // -1
  expect_bad([](auto& t) { t[0].bytes.pop_back(); }, "codes / scales hold");
  expect_bad([](auto& t) { t[2].bytes.resize(8); }, "rht_seeds holds 8 bytes");
  expect_bad([](auto& t) { t.pop_back(); }, "2 fields given, 3 expected");
  EXPECT_FALSE(codec->check_shape(16, 40).is_ok());  // 40 columns: not whole subvectors
}

TEST(RvqRepresentation, RecordsRoundTripAndBadRecordsNameTheKey) {
  auto codec = small_codec(2.5);
  ASSERT_NE(codec, nullptr);
  const auto shared = codec->shared_tensors();
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].shape, (std::vector<int64_t>{5, 256, 16}));
  io::TensorView view;
  view.name = shared[0].name;
  view.dtype = shared[0].dtype;
  view.shape = shared[0].shape;
  std::vector<uint8_t> bytes = shared[0].bytes;
  view.data = bytes.data();
  view.nbytes = bytes.size();
  const TensorLookup lookup = [&](std::string_view n) { return n == view.name ? &view : nullptr; };
  const nlohmann::json rec = codec->record();
  EXPECT_EQ(rec, (nlohmann::json{{"representation", "rvq"}, {"stages", 5}, {"rotation", "rht"},
                                 {"codebook_tensor", "submoe.rvq.codebooks"}}));
  auto back = codec_from_record(rec, "qc.representations[0]", lookup);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ((*back)->summary(), codec->summary());
  EXPECT_EQ((*back)->grid_name(), "rvq2.5");
  auto bad = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
    nlohmann::json r = rec;
    edit(r);
    auto c = codec_from_record(r, "qc.representations[0]", lookup);
    ASSERT_FALSE(c.is_ok()) << needle;
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().to_string();
  };
  bad([](auto& r) { r["stages"] = 9; }, "qc.representations[0].stages = 9");
  bad([](auto& r) { r["stages"] = 6; }, "the record needs F32 [6..8, 256, 16]");  // the tensor holds 5
  bad([](auto& r) { r["rotation"] = "hadamard"; }, "rotation 'hadamard' is not rht or none");
  bad([](auto& r) { r["codebook_tensor"] = "nope"; }, "no tensor 'nope'");
  bad([](auto& r) { r["beam"] = 8; }, "beam is not a key of this representation");
  bad([](auto& r) { r.erase("stages"); }, "stages is missing");
  const float nan = NAN;
  std::memcpy(bytes.data() + 4 * 1000, &nan, 4);
  bad([](auto&) {}, "value 1000 is nan");
}

TEST(RvqRepresentation, OptionsAreCheckedByName) {
  auto err = [](ReprOptions o) {
    auto c = make_codec(o);
    return c.is_ok() ? std::string("ok") : c.status().message();
  };
  EXPECT_NE(err({"rvq"}).find("rvq needs --bits"), std::string::npos);
  EXPECT_NE(err({"rvq", 2.25}).find("steps of 0.5"), std::string::npos);
  EXPECT_NE(err({"rvq", 4.5}).find("steps of 0.5"), std::string::npos);
  EXPECT_NE(err({"rvq", 0.0}).find("steps of 0.5"), std::string::npos);
  EXPECT_NE(err({"rvq", 2.0, 128u}).find("--group-size applies to int only"), std::string::npos);
  ReprOptions o{"rvq", 2.0};
  o.extra = {{"beams", "4"}};
  EXPECT_NE(err(o).find("--repr-opt beams is not an rvq option"), std::string::npos);
  o.extra = {{"beam", "0"}};
  EXPECT_NE(err(o).find("--repr-opt beam=0: expected an integer in [1, 256]"), std::string::npos);
  o.extra = {{"rht", "yes"}};
  EXPECT_NE(err(o).find("rht=yes: expected on or off"), std::string::npos);
  o.extra = {{"metric", "l2"}};
  EXPECT_NE(err(o).find("metric=l2: expected block or euclidean"), std::string::npos);
  o.extra = {{"gain", "ls"}};
  EXPECT_NE(err(o).find("gain=ls: expected unbiased or none"), std::string::npos);
  ReprOptions t{"int", 4.0};
  t.extra = {{"beam", "4"}};
  EXPECT_NE(err(t).find("--repr-opt beam does not apply to int"), std::string::npos);
}

}  // namespace
}  // namespace submoe::runtime
