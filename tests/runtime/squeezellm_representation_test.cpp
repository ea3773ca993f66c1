// The squeezellm representation (src/runtime/repr/squeezellm): the encoder's
// reconstruction is the reference decoder's for its packed bytes and the
// ledger counts every byte; exceptions hold exactly the chosen fractions,
// replace their weights and lower the error on heavy-tailed rows; the
// Hessian diagonal weights the tables (the output error falls against
// uniform weights on inputs of uneven scale); GPTQ beats RTN; the fused op
// agrees with the reference decode in every mode; records and options are
// strict.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "repr_test_support.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

std::shared_ptr<const MatrixCodec> codec(double bits, std::vector<std::pair<std::string, std::string>> extra = {}) {
  ReprOptions o{"squeezellm", bits};
  o.extra = std::move(extra);
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

using testing::rtn;
using testing::spans_of;
using testing::sq_err;

TEST(SqueezeLlmRepresentation, ReconstructionIsTheDecodersAndExceptionsPay) {
  const uint32_t rows = 24, cols = 256;
  std::mt19937 rng(3);
  std::student_t_distribution<float> heavy(2.5f);
  std::vector<float> w(rows * cols);
  for (float& v : w) v = 0.02f * heavy(rng);
  for (double bits : {3.0, 4.0}) {
    SCOPED_TRACE(bits);
    double dense_err = 0;
    for (bool with : {false, true}) {
      const auto c = with ? codec(bits, {{"outliers", "0.004"}, {"sensitive", "0.0005"}}) : codec(bits);
      const auto enc = rtn(*c, w, rows, cols);
      auto packed = enc->pack();
      ASSERT_TRUE(packed.is_ok());
      const auto fields = c->fields(rows, cols);
      ASSERT_EQ(packed->size(), fields.size());
      size_t bytes = 0;
      for (size_t i = 0; i < fields.size(); ++i) {
        EXPECT_EQ((*packed)[i].name, fields[i].name);
        if (!fields[i].shape.empty()) {
          EXPECT_EQ((*packed)[i].shape, fields[i].shape);
        }
        bytes += (*packed)[i].bytes.size();
      }
      const size_t nnz = with ? (*packed)[3].bytes.size() / 2 : 0;
      if (with) {
        EXPECT_EQ(nnz, static_cast<size_t>(std::llround(0.004 * rows * cols)) +
                           static_cast<size_t>(std::llround(0.0005 * rows * cols)));
      }
      EXPECT_EQ(bytes, rows * cols * static_cast<size_t>(bits) / 8 + rows * (2u << static_cast<int>(bits)) +
                           (with ? 4 * (rows + 1) + 4 * nnz : 0));
      const auto f = spans_of(*packed);
      auto dec = c->decode(rows, cols, f);
      ASSERT_TRUE(dec.is_ok()) << dec.status().to_string();
      EXPECT_EQ(*dec, enc->dequantize());
      auto op = c->make_op(rows, cols, f, ExecutionMode::kFused);
      ASSERT_TRUE(op.is_ok());
      EXPECT_EQ((*op)->weight_bytes(), bytes);
      const double e = sq_err(w, *dec);
      if (!with) {
        dense_err = e;
      } else {
        EXPECT_LT(e, 0.8 * dense_err) << "0.45% exceptions on heavy tails";
      }
    }
  }
}

TEST(SqueezeLlmRepresentation, TheHessianDiagonalWeightsTheTables) {
  // Inputs of very uneven scale: the error that matters is sum_c H_cc (dw_c)^2.
  const uint32_t rows = 16, cols = 128, tokens = 256;
  std::mt19937 rng(5);
  std::normal_distribution<float> n01;
  std::vector<float> w(rows * cols), h(size_t{cols} * cols, 0.0f);
  for (float& v : w) v = n01(rng);
  for (uint32_t t = 0; t < tokens; ++t) {
    std::vector<float> x(cols);
    for (uint32_t c = 0; c < cols; ++c) x[c] = n01(rng) * (c % 8 == 0 ? 10.0f : 0.3f);
    for (uint32_t i = 0; i < cols; ++i) h[i * cols + i] += x[i] * x[i] / tokens;  // diagonal suffices here
  }
  auto loss = [&](const std::vector<float>& q) {
    double e = 0;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) e += h[c * cols + c] * std::pow(w[r * cols + c] - q[r * cols + c], 2);
    return e;
  };
  auto enc = codec(3)->make_encoder(rows, cols);
  ASSERT_TRUE(enc.is_ok());
  quant::GptqOptions o;
  o.damp = 1.0;  // a diagonal H: GPTQ's feedback has nothing to move; the tables carry the weighting
  ASSERT_TRUE(quant::gptq_quantize(w, rows, cols, h, **enc, o, nullptr).is_ok());
  const double weighted = loss((*enc)->dequantize()), uniform = loss(rtn(*codec(3), w, rows, cols)->dequantize());
  EXPECT_LT(weighted, 0.8 * uniform) << "weighted " << weighted << " uniform " << uniform;
}

TEST(SqueezeLlmRepresentation, GptqBeatsRtnAndFusedOpsAgreeWithTheReference) {
  const testing::CorrelatedProblem p(16, 128, 512, 7);
  const uint32_t rows = p.rows, cols = p.cols;
  std::mt19937 rng(8);
  std::normal_distribution<float> n01;
  const auto c = codec(3, {{"outliers", "0.01"}});
  auto enc = c->make_encoder(rows, cols);
  ASSERT_TRUE(enc.is_ok());
  ASSERT_TRUE(quant::gptq_quantize(p.w, rows, cols, p.h, **enc, quant::GptqOptions{}, nullptr).is_ok());
  EXPECT_LT(p.out_err((*enc)->dequantize()), 0.9 * p.out_err(rtn(*c, p.w, rows, cols)->dequantize()));
  auto packed = (*enc)->pack();
  ASSERT_TRUE(packed.is_ok());
  const auto f = spans_of(*packed);
  auto ref = c->make_op(rows, cols, f, ExecutionMode::kReferenceDecode);
  ASSERT_TRUE(ref.is_ok());
  for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8}) {
    auto op = c->make_op(rows, cols, f, mode);
    ASSERT_TRUE(op.is_ok());
    EXPECT_NE((*op)->describe().find("squeezellm"), std::string::npos);
    for (size_t n : {size_t{1}, size_t{5}, size_t{70}}) {
      std::vector<float> in(n * cols), got(n * rows), want(n * rows);
      for (float& v : in) v = n01(rng);
      (*op)->forward(in.data(), n, got.data(), nullptr);
      (*ref)->forward(in.data(), n, want.data(), nullptr);
      const double tol = mode == ExecutionMode::kFused ? 1e-5 : mode == ExecutionMode::kFusedBf16 ? 0.02 : 0.05;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << execution_mode_name(mode) << " " << i;
    }
  }
}

TEST(SqueezeLlmRepresentation, RecordsAndOptionsAreStrict) {
  EXPECT_EQ(codec(4)->record(), (nlohmann::json{{"representation", "squeezellm"}, {"bits", 4}, {"exceptions", false}}));
  EXPECT_EQ(codec(3, {{"sensitive", "0.001"}})->record()["exceptions"], true);
  EXPECT_EQ(codec(3, {{"sensitive", "0.001"}})->contract().sparse_semantics, "replacement");
  EXPECT_EQ(codec(3)->contract().sparse_semantics, "none");
  const nlohmann::json good{{"representation", "squeezellm"}, {"bits", 3}, {"exceptions", true}};
  auto from = codec_from_record(good, "r", nullptr);
  ASSERT_TRUE(from.is_ok());
  EXPECT_EQ((*from)->fields(2, 64).size(), 5u);
  EXPECT_EQ((*from)->summary(), "squeezellm (3-bit row tables, with exceptions)");
  for (auto [key, value] : {std::pair<const char*, nlohmann::json>{"bits", 2}, {"exceptions", "yes"}, {"iters", 3}}) {
    nlohmann::json bad = good;
    bad[key] = value;
    const Status st = codec_from_record(bad, "r", nullptr).status();
    EXPECT_FALSE(st.is_ok()) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }
  auto err = [](ReprOptions o) { return make_codec(o).status().message(); };
  EXPECT_NE(err(ReprOptions{"squeezellm"}).find("--bits 3 or 4"), std::string::npos);
  EXPECT_NE(err(ReprOptions{"squeezellm", 2.0}).find("--bits 3 or 4"), std::string::npos);
  ReprOptions o{"squeezellm", 3.0};
  o.extra = {{"outliers", "0.5"}};
  EXPECT_NE(err(o).find("fraction from 0 to 0.1"), std::string::npos);
  o.extra = {{"outliers", "abc"}};
  EXPECT_NE(err(o).find("fraction"), std::string::npos);
  o.extra = {{"iters", "0"}};
  EXPECT_NE(err(o).find("iters=0"), std::string::npos);
  o.extra = {{"beam", "2"}};
  EXPECT_NE(err(o).find("not a squeezellm option"), std::string::npos);
  o.extra = {};
  o.group_size = 128;
  EXPECT_NE(err(o).find("--group-size"), std::string::npos);
  EXPECT_FALSE(codec(4)->check_shape(4, 48).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
