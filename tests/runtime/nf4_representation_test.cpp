// The nf4 representation (src/runtime/repr/nf4): for every scale storage the
// encoder's reconstruction is the reference decoder's for its packed bytes,
// the ledger counts every byte (4.127 / 4.25 / 4.5 bits at block 64); RTN
// through the registry gives bitsandbytes' codes (the golden case); GPTQ
// through the block hook beats RTN on the layer output; the fused op agrees
// with the reference decode in every execution mode; untrusted bytes, records
// and options are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "repr_test_support.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

std::shared_ptr<const MatrixCodec> codec(const std::string& scales = "dq8", uint32_t block = 64) {
  ReprOptions o{"nf4"};
  o.extra = {{"scales", scales}};
  if (block != 64) o.group_size = block;
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

using testing::rtn;
using testing::spans_of;

TEST(Nf4Representation, ReconstructionIsTheDecodersAndTheLedgerCountsEveryByte) {
  const uint32_t rows = 40, cols = 512;  // 320 blocks: two absmax2 groups under dq8
  std::mt19937 rng(3);
  std::student_t_distribution<float> heavy(3.0f);
  std::vector<float> w(rows * cols);
  for (float& v : w) v = 0.02f * heavy(rng);
  for (uint32_t c = 64; c < 128; ++c) w[3 * cols + c] = 0.0f;  // an all-zero block
  const double n = double(rows) * cols;  // dq8: two absmax2 floats and the offset on top
  for (const auto& [scales, bits] : {std::pair{"dq8", 4.0 + 8.0 / 64 + 3 * 32 / n}, {"fp16", 4.25}, {"fp32", 4.5}}) {
    SCOPED_TRACE(scales);
    const auto c = codec(scales);
    const auto enc = rtn(*c, w, rows, cols);
    auto packed = enc->pack();
    ASSERT_TRUE(packed.is_ok());
    const auto fields = c->fields(rows, cols);
    ASSERT_EQ(packed->size(), fields.size());
    size_t bytes = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      EXPECT_EQ((*packed)[i].name, fields[i].name);
      EXPECT_EQ((*packed)[i].dtype, fields[i].dtype);
      EXPECT_EQ((*packed)[i].shape, fields[i].shape);
      bytes += (*packed)[i].bytes.size();
    }
    const double ledger_bits = 8.0 * bytes / (double(rows) * cols);
    EXPECT_NEAR(ledger_bits, bits, 1e-12);
    const auto f = spans_of(*packed);
    auto dec = c->decode(rows, cols, f);
    ASSERT_TRUE(dec.is_ok()) << dec.status().to_string();
    EXPECT_EQ(*dec, enc->dequantize());
    for (uint32_t col = 64; col < 128; ++col) EXPECT_EQ((*dec)[3 * cols + col], 0.0f);
    auto op = c->make_op(rows, cols, f, ExecutionMode::kFused);
    ASSERT_TRUE(op.is_ok());
    EXPECT_EQ((*op)->weight_bytes(), bytes);
    double err = 0, energy = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      err += std::pow(w[i] - (*dec)[i], 2);
      energy += double{w[i]} * w[i];
    }
    EXPECT_LT(err / energy, 0.02) << "4-bit NF4 keeps the matrix within a few percent";
  }
}

TEST(Nf4Representation, GptqThroughTheBlockHookBeatsRtn) {
  const testing::CorrelatedProblem p(16, 128, 512, 5);
  const uint32_t rows = p.rows, cols = p.cols;
  for (const char* scales : {"fp16", "dq8"}) {
    SCOPED_TRACE(scales);
    auto enc = codec(scales)->make_encoder(rows, cols);
    ASSERT_TRUE(enc.is_ok());
    ASSERT_TRUE(quant::gptq_quantize(p.w, rows, cols, p.h, **enc, quant::GptqOptions{}, nullptr).is_ok());
    const double gptq = p.out_err((*enc)->dequantize()), plain = p.out_err(rtn(*codec(scales), p.w, rows, cols)->dequantize());
    EXPECT_LT(gptq, 0.9 * plain) << "gptq " << gptq << " rtn " << plain;
    auto packed = (*enc)->pack();
    ASSERT_TRUE(packed.is_ok());
    auto dec = codec(scales)->decode(rows, cols, spans_of(*packed));
    ASSERT_TRUE(dec.is_ok());
    EXPECT_EQ(*dec, (*enc)->dequantize());
  }
}

TEST(Nf4Representation, FusedOpsAgreeWithTheReferenceDecodeInEveryMode) {
  const uint32_t rows = 37, cols = 256;
  std::mt19937 rng(9);
  std::normal_distribution<float> n01;
  std::vector<float> w(rows * cols);
  for (float& v : w) v = n01(rng);
  for (const char* scales : {"dq8", "fp16", "fp32"}) {
    const auto c = codec(scales, 128);
    const auto enc = rtn(*c, w, rows, cols);
    auto packed = enc->pack();
    ASSERT_TRUE(packed.is_ok());
    const auto f = spans_of(*packed);
    auto ref = c->make_op(rows, cols, f, ExecutionMode::kReferenceDecode);
    ASSERT_TRUE(ref.is_ok());
    for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8}) {
      auto op = c->make_op(rows, cols, f, mode);
      ASSERT_TRUE(op.is_ok()) << op.status().to_string();
      EXPECT_NE((*op)->describe().find("nf4"), std::string::npos);
      for (size_t n : {size_t{1}, size_t{3}, size_t{70}}) {
        std::vector<float> x(n * cols), got(n * rows), want(n * rows);
        for (float& v : x) v = n01(rng);
        (*op)->forward(x.data(), n, got.data(), nullptr);
        (*ref)->forward(x.data(), n, want.data(), nullptr);
        // bf16 / int8 activations perturb the product by their rounding only
        // (outputs here are O(20): 256 columns of O(1) weights).
        const double tol = mode == ExecutionMode::kFused ? 1e-4 : mode == ExecutionMode::kFusedBf16 ? 0.4 : 1.0;
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], tol) << scales << " mode " << execution_mode_name(mode) << " n " << n << " i " << i;
      }
    }
  }
}

TEST(Nf4Representation, UntrustedFieldsRecordsAndOptionsAreRefused) {
  const uint32_t rows = 2, cols = 128;
  const auto c = codec("fp32");
  std::vector<uint8_t> codes(rows * cols / 2, 0x9E);
  std::vector<float> absmax(4, 0.5f);
  std::vector<uint8_t> ab(16);
  std::memcpy(ab.data(), absmax.data(), 16);
  auto field = [](const std::vector<uint8_t>& v) { return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size()); };
  {
    const std::span<const std::byte> f[2] = {field(codes), field(ab)};
    EXPECT_TRUE(c->decode(rows, cols, f).is_ok());
    const std::span<const std::byte> one[1] = {field(codes)};
    EXPECT_EQ(c->decode(rows, cols, one).status().code(), ErrorCode::kCorruptData);
    EXPECT_FALSE(c->decode(rows, 96, f).is_ok());
  }
  absmax[2] = NAN;
  std::memcpy(ab.data(), absmax.data(), 16);
  {
    const std::span<const std::byte> f[2] = {field(codes), field(ab)};
    const Status st = c->decode(rows, cols, f).status();
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
    EXPECT_NE(st.message().find("row 1, block 0"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(c->check_shape(4, 96).is_ok());
  EXPECT_FALSE(c->make_encoder(4, 96).is_ok());

  const nlohmann::json good{{"representation", "nf4"}, {"block_size", 64}, {"scales", "dq8"}};
  EXPECT_EQ(codec()->record(), good);
  EXPECT_TRUE(codec_from_record(good, "r", nullptr).is_ok());
  for (auto [key, value] : {std::pair<const char*, nlohmann::json>{"block_size", 48}, {"block_size", -64},
                            {"block_size", "64"}, {"scales", "fp8"}, {"bits", 4}}) {
    nlohmann::json bad = good;
    bad[key] = value;
    const Status st = codec_from_record(bad, "r", nullptr).status();
    EXPECT_FALSE(st.is_ok()) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }
  nlohmann::json missing = good;
  missing.erase("scales");
  EXPECT_FALSE(codec_from_record(missing, "r", nullptr).is_ok());
  ReprOptions o{"nf4", 3.0};
  EXPECT_NE(make_codec(o).status().message().find("4-bit"), std::string::npos);
  o = ReprOptions{"nf4"};
  o.group_size = 100;
  EXPECT_NE(make_codec(o).status().message().find("block size 100"), std::string::npos);
  o = ReprOptions{"nf4"};
  o.extra = {{"scales", "bf16"}};
  EXPECT_NE(make_codec(o).status().message().find("dq8"), std::string::npos);
  o.extra = {{"rht", "on"}};
  EXPECT_NE(make_codec(o).status().message().find("not an nf4 option"), std::string::npos);
  EXPECT_TRUE(make_codec(ReprOptions{"nf4", 4.0}).is_ok());
  auto grid = options_from_grid_name("nf4");
  ASSERT_TRUE(grid.is_ok());
  EXPECT_EQ(grid->name, "nf4");
  EXPECT_EQ((*make_codec(*grid))->summary(), "nf4 (block 64, dq8 absmax, 4.127 bits)");
}

}  // namespace
}  // namespace submoe::runtime
