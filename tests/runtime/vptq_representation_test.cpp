// The vptq representation (src/runtime/repr/vptq): the encoder's
// reconstruction is exactly the reference decoder's for its packed bytes and
// the ledger counts every byte (with and without residual and outlier
// codebooks); the fused op agrees with a float64 product in every execution
// mode; GPTQ's column order with feedback beats round-to-nearest on the layer
// output and the residual stage lowers the error; outlier columns are the
// Hessian-hardest ones; options, records and untrusted fields are refused by
// name.
#include <gtest/gtest.h>

#include <cmath>

#include "repr_test_support.h"
#include "submoe/codec/vptq.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

using testing::CorrelatedProblem;
using testing::spans_of;

std::shared_ptr<const MatrixCodec> codec_of(std::vector<std::pair<std::string, std::string>> extra,
                                            std::optional<double> bits = std::nullopt) {
  ReprOptions o{"vptq", bits};
  o.extra = std::move(extra);
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? *c : nullptr;
}

TEST(VptqRepresentation, EncoderReconstructionIsTheDecodersAndTheLedgerCountsEveryByte) {
  const CorrelatedProblem p(64, 48, 256, 3);
  for (const char* shape : {"6", "5+4"})
    for (const char* outliers : {"0", "0.1"})
      for (bool gptq : {true, false}) {
        const char* rows_scaled = gptq ? "on" : "off";
        SCOPED_TRACE(std::string(shape) + " outliers " + outliers + (gptq ? " with H, row scales" : " without H"));
        auto codec = codec_of({{"shape", shape}, {"outliers", outliers}, {"row_scales", rows_scaled}});
        ASSERT_NE(codec, nullptr);
        auto enc = testing::encode_matrix(*codec, p.w, p.h, p.rows, p.cols, gptq);
        auto packed = enc->pack();
        ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
        const auto specs = codec->fields(p.rows, p.cols);
        const size_t bytes = testing::expect_fields_match(specs, *packed);
        uint32_t n_out = 0;
        for (size_t i = 0; i < specs.size(); ++i)
          if (specs[i].name == "outlier_columns") n_out = static_cast<uint32_t>((*packed)[i].bytes.size() / 4);
        EXPECT_EQ(n_out, std::string(outliers) == "0" ? 0u : 4u);  // floor(0.1 x 48)
        vptq::Shape s;
        s.bits = std::string(shape) == "6" ? 6 : 5;
        s.residual_bits = std::string(shape) == "6" ? 0 : 4;
        s.row_scaled = gptq;
        EXPECT_EQ(bytes, vptq::matrix_bytes(p.rows, p.cols, s, n_out));
        const auto spans = spans_of(*packed);
        auto decoded = codec->decode(p.rows, p.cols, spans);
        ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
        EXPECT_EQ(*decoded, enc->dequantize());
        testing::expect_ops_match_decoded(*codec, p.rows, p.cols, spans, *decoded);
      }
}

TEST(VptqRepresentation, FeedbackBeatsRoundingAndTheResidualStageHelps) {
  const CorrelatedProblem p(128, 128, 512, 5);
  auto one = codec_of({{"shape", "8"}});
  auto two = codec_of({}, 2.0);  // 8+8
  ASSERT_TRUE(one && two);
  const double rtn = p.out_err(testing::encode_matrix(*one, p.w, p.h, p.rows, p.cols, false)->dequantize());
  const double gptq = p.out_err(testing::encode_matrix(*one, p.w, p.h, p.rows, p.cols, true)->dequantize());
  const double res = p.out_err(testing::encode_matrix(*two, p.w, p.h, p.rows, p.cols, true)->dequantize());
  EXPECT_LT(gptq, 0.9 * rtn) << gptq << " vs " << rtn;
  EXPECT_LT(res, 0.6 * gptq) << res << " vs " << gptq;
}

TEST(VptqRepresentation, OutlierColumnsAreTheHessianHardest) {
  CorrelatedProblem p(32, 40, 128, 9);
  // Column 17: large weights; column 30: large curvature.
  for (uint32_t r = 0; r < p.rows; ++r) p.w[size_t{r} * p.cols + 17] *= 10;
  for (uint32_t i = 0; i < p.cols; ++i) {
    p.h[size_t{30} * p.cols + i] *= 10;
    p.h[size_t{i} * p.cols + 30] *= 10;
  }
  auto codec = codec_of({{"shape", "4"}, {"outliers", "0.05"}});  // 2 of 40 columns
  ASSERT_NE(codec, nullptr);
  auto packed = testing::encode_matrix(*codec, p.w, p.h, p.rows, p.cols, true)->pack();
  ASSERT_TRUE(packed.is_ok());
  const auto& oc = (*packed)[2];
  ASSERT_EQ(oc.name, "outlier_columns");
  ASSERT_EQ(oc.bytes.size(), 8u);
  EXPECT_EQ(oc.bytes[0], 17);
  EXPECT_EQ(oc.bytes[4], 30);
}

TEST(VptqRepresentation, OptionsRecordsAndFieldsAreCheckedByName) {
  auto fails = [](ReprOptions o, const char* needle) {
    auto c = make_codec(o);
    ASSERT_FALSE(c.is_ok()) << needle;
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  };
  fails({"vptq"}, "needs --bits");
  fails({"vptq", 5.0}, "must be 1, 2, 3 or 4");
  fails({"vptq", 2.0, std::nullopt, std::nullopt, std::nullopt, {{"shape", "8"}}}, "does not match");
  fails({"vptq", std::nullopt, std::nullopt, std::nullopt, std::nullopt, {{"shape", "17"}}}, "shape=17");
  fails({"vptq", std::nullopt, std::nullopt, std::nullopt, std::nullopt, {{"shape", "8+x"}}}, "shape=x");
  fails({"vptq", 2.0, std::nullopt, std::nullopt, std::nullopt, {{"outliers", "0.9"}}}, "outliers=0.9");
  fails({"vptq", 2.0, std::nullopt, std::nullopt, std::nullopt, {{"beam", "2"}}}, "not a vptq option");
  fails({"vptq", 2.0, std::nullopt, std::nullopt, std::nullopt, {{"row_scales", "yes"}}}, "row_scales=yes");
  fails({"vptq", 2.0, 64u}, "--group-size");
  auto c = codec_of({}, 2.0);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->record(),
            (nlohmann::json{{"representation", "vptq"}, {"bits", 8}, {"residual_bits", 8}, {"row_scales", true}}));
  EXPECT_FALSE(c->check_encodable(16, 64).is_ok());  // 128 vectors < 256 entries
  EXPECT_FALSE(c->check_encodable(20, 64).is_ok());  // rows not a multiple of 8
  const TensorLookup none = [](std::string_view) -> const io::TensorView* { return nullptr; };
  auto back = codec_from_record(c->record(), "r", none);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ((*back)->record(), c->record());
  for (const auto& bad :
       {nlohmann::json{{"representation", "vptq"}, {"bits", 0}, {"residual_bits", 8}, {"row_scales", true}},
        nlohmann::json{{"representation", "vptq"}, {"bits", 8}, {"residual_bits", 17}, {"row_scales", true}},
        nlohmann::json{{"representation", "vptq"}, {"bits", 8}, {"residual_bits", 8}},
        nlohmann::json{{"representation", "vptq"}, {"bits", 8}, {"residual_bits", 8}, {"row_scales", 1}},
        nlohmann::json{{"representation", "vptq"}, {"bits", 8}, {"residual_bits", 0}, {"row_scales", false}, {"v", 8}}})
    EXPECT_FALSE(codec_from_record(bad, "r", none).is_ok()) << bad.dump();
  // Untrusted fields: a field count, an outlier column out of range.
  const CorrelatedProblem p(16, 24, 64, 19);
  auto small = codec_of({{"shape", "4"}, {"outliers", "0.1"}});
  ASSERT_NE(small, nullptr);
  auto packed = testing::encode_matrix(*small, p.w, p.h, p.rows, p.cols, false)->pack();
  ASSERT_TRUE(packed.is_ok());
  auto fewer = spans_of(*packed);
  fewer.pop_back();
  EXPECT_FALSE(small->decode(p.rows, p.cols, fewer).is_ok());
  (*packed)[2].bytes[0] = 24;  // outlier column 24 of 24
  auto bad = small->decode(p.rows, p.cols, spans_of(*packed));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("outlier_columns[0] = 24"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(small->make_op(p.rows, p.cols, spans_of(*packed), ExecutionMode::kFused).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
