// The e8p representation (src/runtime/repr/e8p): at 2, 3 and 4 bits, with and
// without the rotation, the encoder's reconstruction is exactly what the
// reference decoder gives for its packed bytes and the ledger counts every
// byte; the fused op (rotation + E8P kernels) agrees with a float64 product on
// the decoded weights in every execution mode; BlockLDLQ through the solver
// beats round-to-nearest on the layer's output error and each rate beats the
// one below; records, options and untrusted fields are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "repr_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

using testing::CorrelatedProblem;
using testing::spans_of;

std::shared_ptr<const MatrixCodec> codec_of(double bits, bool rht = true) {
  ReprOptions o{"e8p", bits};
  if (!rht) o.extra = {{"rht", "off"}};
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : nullptr;
}

std::unique_ptr<MatrixEncoder> encode(const MatrixCodec& c, const CorrelatedProblem& p, bool gptq) {
  return testing::encode_matrix(c, p.w, p.h, p.rows, p.cols, gptq);
}

TEST(E8pRepresentation, EncoderReconstructionIsTheDecodersAndTheLedgerCountsEveryByte) {
  const CorrelatedProblem p(24, 64, 256, 1);
  for (uint32_t bits = 2; bits <= 4; ++bits)
    for (bool rht : {true, false}) {
      SCOPED_TRACE(std::to_string(bits) + (rht ? " bits, rht" : " bits, no rotation"));
      auto codec = codec_of(bits, rht);
      ASSERT_NE(codec, nullptr);
      auto enc = encode(*codec, p, true);
      auto packed = enc->pack();
      ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
      const auto specs = codec->fields(p.rows, p.cols);
      ASSERT_EQ(packed->size(), specs.size());
      size_t bytes = 0;
      for (size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ((*packed)[i].name, specs[i].name);
        EXPECT_EQ((*packed)[i].shape, specs[i].shape);
        EXPECT_EQ((*packed)[i].dtype, specs[i].dtype);
        bytes += (*packed)[i].bytes.size();
      }
      // 16 bits per 8 weights per E8P stage, 8 for the 1-bit stage, an f16 per row, the seeds.
      const size_t per_code = bits == 2 ? 2 : bits == 3 ? 3 : 4;
      EXPECT_EQ(bytes, size_t{24} * 8 * per_code + 24 * 2 + (rht ? 16 : 0));
      auto dec = codec->decode(p.rows, p.cols, spans_of(*packed));
      ASSERT_TRUE(dec.is_ok()) << dec.status().to_string();
      ASSERT_EQ(*dec, enc->dequantize());
    }
}

TEST(E8pRepresentation, FusedOpsMatchTheDecodedWeightsInEveryMode) {
  const CorrelatedProblem p(40, 96, 70, 2);  // 96 = 8 x 12: a Paley factor in the rotation
  for (uint32_t bits = 2; bits <= 4; ++bits) {
    auto codec = codec_of(bits);
    ASSERT_NE(codec, nullptr);
    auto enc = encode(*codec, p, false);
    auto packed = enc->pack();
    ASSERT_TRUE(packed.is_ok());
    const auto f = spans_of(*packed);
    const std::vector<float> wq = enc->dequantize();
    for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8,
                               ExecutionMode::kReferenceDecode}) {
      SCOPED_TRACE(std::to_string(bits) + " bits, " + execution_mode_name(mode));
      auto op = codec->make_op(p.rows, p.cols, f, mode);
      ASSERT_TRUE(op.is_ok()) << op.status().to_string();
      if (mode != ExecutionMode::kReferenceDecode) {
        EXPECT_NE((*op)->describe().find("e8p " + std::to_string(bits) + " bits [40, 96]"), std::string::npos)
            << (*op)->describe();
      }
      for (size_t n : {size_t{1}, size_t{3}, size_t{70}}) {
        std::vector<float> y(n * p.rows);
        (*op)->forward(p.x.data(), n, y.data(), nullptr);
        for (size_t t = 0; t < n; ++t)
          for (uint32_t r = 0; r < p.rows; ++r) {
            double want = 0, mag = 0;
            for (uint32_t c = 0; c < p.cols; ++c) {
              float x = p.x[t * p.cols + c];
              if (mode == ExecutionMode::kFusedBf16) x = bf16_to_float(float_to_bf16(x));
              want += double(wq[size_t{r} * p.cols + c]) * x;
              mag += std::fabs(double(wq[size_t{r} * p.cols + c]) * x);
            }
            // Float rotations and sums: 1e-4 x mag. int8 activations of the
            // rotated x: each off by up to 1/254 of the token's largest, summed
            // over 96 terms with random signs: a few 1e-3 x mag.
            const double tol = mode == ExecutionMode::kFusedInt8 ? 2e-2 : 1e-4;
            ASSERT_NEAR(y[t * p.rows + r], want, tol * mag + 1e-6) << "token " << t << " row " << r;
          }
      }
    }
  }
}

TEST(E8pRepresentation, BlockLdlqBeatsRoundingAndEachRateBeatsTheOneBelow) {
  const CorrelatedProblem p(32, 128, 512, 3);
  double previous = INFINITY;
  for (uint32_t bits = 2; bits <= 4; ++bits) {
    auto codec = codec_of(bits);
    ASSERT_NE(codec, nullptr);
    const double rtn = p.out_err(encode(*codec, p, false)->dequantize());
    const double gptq = p.out_err(encode(*codec, p, true)->dequantize());
    EXPECT_LT(gptq, 0.9 * rtn) << bits << " bits";
    EXPECT_LT(gptq, 0.6 * previous) << bits << " bits";
    previous = gptq;
  }
}

TEST(E8pRepresentation, TheBlockMetricBeatsQuipsNearestRounding) {
  // Gaussian weights, correlated inputs, no rotation: choosing among 16
  // candidates under the solver's metric cut the output error by ~40% here.
  const CorrelatedProblem p(64, 256, 1024, 3, 1.0f);
  ReprOptions o{"e8p", 2};
  o.extra = {{"rht", "off"}, {"metric", "euclidean"}};
  auto nearest = make_codec(o);
  o.extra = {{"rht", "off"}};
  auto block = make_codec(o);
  ASSERT_TRUE(nearest.is_ok() && block.is_ok());
  const double e_nearest = p.out_err(encode(**nearest, p, true)->dequantize());
  const double e_block = p.out_err(encode(**block, p, true)->dequantize());
  EXPECT_LT(e_block, 0.75 * e_nearest);
}

TEST(E8pRepresentation, RecordsRoundTripAndBadOnesAreRefusedByName) {
  auto two = make_codec(ReprOptions{"e8p"});
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ((*two)->record()["bits"], 2);
  auto codec = codec_of(3);
  ASSERT_NE(codec, nullptr);
  const nlohmann::json rec = codec->record();
  EXPECT_EQ(rec["codebook_crc32"], "b1a1a044");
  const TensorLookup none = [](std::string_view) -> const io::TensorView* { return nullptr; };
  auto again = codec_from_record(rec, "r", none);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)->record(), rec);
  EXPECT_EQ((*again)->summary(), codec->summary());
  auto refused = [&](nlohmann::json r, const std::string& needle) {
    auto c = codec_from_record(r, "r", none);
    ASSERT_FALSE(c.is_ok()) << r.dump();
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  };
  nlohmann::json r = rec;
  r["codebook_crc32"] = "b1a1a045";
  refused(r, "codebook_crc32");
  r = rec;
  r["codebook"] = "e8p13";
  refused(r, "codebook");
  r = rec;
  r["bits"] = 5;
  refused(r, "bits");
  r = rec;
  r["rotation"] = "fft";
  refused(r, "rotation");
  r = rec;
  r["scale"] = 1;
  refused(r, "scale");
  r = rec;
  r.erase("codebook_crc32");
  refused(r, "codebook_crc32");

  for (auto [opts, needle] : std::vector<std::pair<ReprOptions, std::string>>{
           {ReprOptions{"e8p", 2.5}, "2, 3 or 4"},
           {ReprOptions{"e8p", 1}, "2, 3 or 4"},
           {ReprOptions{"e8p", 2, 128}, "--group-size"},
           {ReprOptions{"e8p", 2, std::nullopt, std::nullopt, std::nullopt, {{"beam", "4"}}}, "not an e8p option"},
           {ReprOptions{"e8p", 2, std::nullopt, std::nullopt, std::nullopt, {{"row_rms", "9"}}}, "row_rms=9"},
           {ReprOptions{"e8p", 2, std::nullopt, std::nullopt, std::nullopt, {{"rht", "yes"}}}, "rht=yes"},
           {ReprOptions{"e8p", 2, std::nullopt, std::nullopt, std::nullopt, {{"metric", "l1"}}}, "metric=l1"},
           {ReprOptions{"e8p", 2, std::nullopt, std::nullopt, std::nullopt, {{"candidates", "0"}}}, "candidates=0"}}) {
    auto c = make_codec(opts);
    ASSERT_FALSE(c.is_ok()) << needle;
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  }
}

TEST(E8pRepresentation, UntrustedFieldsAreRefused) {
  auto codec = codec_of(4);
  ASSERT_NE(codec, nullptr);
  const CorrelatedProblem p(8, 32, 64, 4);
  auto packed = encode(*codec, p, false)->pack();
  ASSERT_TRUE(packed.is_ok());
  auto f = spans_of(*packed);
  ASSERT_TRUE(codec->decode(8, 32, f).is_ok());
  EXPECT_FALSE(codec->decode(8, 40, f).is_ok());  // shape mismatch
  EXPECT_FALSE(codec->decode(8, 30, f).is_ok());  // not a multiple of 8
  auto short_f = f;
  short_f[1] = short_f[1].first(short_f[1].size() - 2);
  EXPECT_FALSE(codec->decode(8, 32, short_f).is_ok());
  auto fewer = f;
  fewer.pop_back();
  EXPECT_FALSE(codec->decode(8, 32, fewer).is_ok());
  std::vector<PackedTensor> bad = *packed;
  const uint16_t inf = 0x7c00;
  std::memcpy(bad[2].bytes.data() + 6, &inf, 2);
  auto r = codec->decode(8, 32, spans_of(bad));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("row 3"), std::string::npos) << r.status().message();
  EXPECT_FALSE(codec->make_op(8, 32, spans_of(bad), ExecutionMode::kFused).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
