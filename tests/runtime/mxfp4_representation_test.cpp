// The mxfp4 representation (src/runtime/repr/mxfp4): the encoder's
// reconstruction is the reference decoder's for its packed bytes; a matrix
// that is already MXFP4 (a hub GPT-OSS expert) re-encodes exactly; each
// group's scale is never worse than OCP's rule, checked with a brute-force
// rounding oracle written here from the E2M1 definition; GPTQ through the
// group hook beats RTN on the layer output; the fused op agrees with the
// reference decode in every execution mode; untrusted bytes, records and
// options are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "repr_test_support.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

double e2m1(int code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return (code >> 3) ? -mag : mag;
}

std::shared_ptr<const MatrixCodec> codec() {
  auto c = make_codec(ReprOptions{"mxfp4"});
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

using testing::spans_of;

std::unique_ptr<MatrixEncoder> rtn(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  auto enc = codec()->make_encoder(rows, cols);
  EXPECT_TRUE(enc.is_ok()) << enc.status().to_string();
  std::vector<float> copy = w;
  EXPECT_TRUE(quant::rtn_quantize(copy, rows, cols, **enc).is_ok());
  return std::move(enc).value();
}

// Squared error of a group under scale code s, rounding each value to the
// nearest of the 16 codes (ties: the smaller magnitude's code... or the even
// one; both tie-breaks give the same error).
double oracle_group_error(const float* g, int s) {
  double err = 0;
  for (int i = 0; i < 32; ++i) {
    double best = INFINITY;
    for (int code = 0; code < 16; ++code) best = std::min(best, std::abs(g[i] - e2m1(code) * std::ldexp(1.0, s - 127)));
    err += best * best;
  }
  return err;
}

TEST(Mxfp4Representation, ReconstructionIsTheDecodersAndScalesBeatOcpsRule) {
  const uint32_t rows = 9, cols = 96;
  std::mt19937 rng(3);
  std::student_t_distribution<float> heavy(3.0f);  // outliers, so clipping matters
  std::vector<float> w(rows * cols);
  for (float& v : w) v = 0.02f * heavy(rng);
  const auto enc = rtn(w, rows, cols);
  auto packed = enc->pack();
  ASSERT_TRUE(packed.is_ok());
  ASSERT_EQ(packed->size(), 2u);
  EXPECT_EQ((*packed)[0].bytes.size(), rows * cols / 2);
  EXPECT_EQ((*packed)[1].bytes.size(), rows * cols / 32);
  const auto f = spans_of(*packed);
  auto dec = codec()->decode(rows, cols, f);
  ASSERT_TRUE(dec.is_ok()) << dec.status().to_string();
  EXPECT_EQ(*dec, enc->dequantize());
  int beat = 0;
  for (uint32_t g = 0; g < rows * cols / 32; ++g) {
    const float* grp = &w[g * 32];
    double amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, double{std::abs(grp[i])});
    const int ocp = static_cast<int>(std::floor(std::log2(amax))) - 2 + 127;
    double got = 0;
    for (int i = 0; i < 32; ++i) got += std::pow(grp[i] - (*dec)[g * 32 + i], 2);
    const double want = oracle_group_error(grp, ocp);
    EXPECT_LE(got, want * (1 + 1e-12)) << "group " << g;
    EXPECT_LE(got, oracle_group_error(grp, ocp + 1) * (1 + 1e-12)) << "group " << g;
    beat += got < want;
  }
  EXPECT_GT(beat, 0) << "the choice of the next scale up never paid on heavy-tailed data";
}

TEST(Mxfp4Representation, AMatrixThatIsAlreadyMxfp4ReencodesExactly) {
  const uint32_t rows = 5, cols = 64;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> code(0, 15), scale(100, 140);
  std::vector<float> w(rows * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t g = 0; g < cols / 32; ++g) {
      const int s = scale(rng);
      for (uint32_t i = 0; i < 32; ++i) w[r * cols + g * 32 + i] = static_cast<float>(e2m1(code(rng)) * std::ldexp(1.0, s - 127));
    }
  EXPECT_EQ(rtn(w, rows, cols)->dequantize(), w);
}

TEST(Mxfp4Representation, RoundsToNearestTiesToEvenAndSaturates) {
  // One group, scale 2^0 (its largest magnitude 6 gives OCP's 127 and no
  // reason to move): midpoints go to the even code, beyond 6 saturates.
  std::vector<float> w(32, 0.0f);
  const float in[] = {6.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -5.0f, -0.25f, 0.3f, -6.0f};
  const float want[] = {6.0f, 0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f, -4.0f, 0.0f, 0.5f, -6.0f};
  std::copy(std::begin(in), std::end(in), w.begin());
  const std::vector<float> q = rtn(w, 1, 32)->dequantize();
  for (size_t i = 0; i < std::size(in); ++i) EXPECT_EQ(q[i], want[i]) << in[i];
}

TEST(Mxfp4Representation, GptqThroughTheGroupHookBeatsRtn) {
  const testing::CorrelatedProblem p(16, 128, 512, 5);
  const uint32_t rows = p.rows, cols = p.cols;
  auto enc = codec()->make_encoder(rows, cols);
  ASSERT_TRUE(enc.is_ok());
  ASSERT_TRUE(quant::gptq_quantize(p.w, rows, cols, p.h, **enc, quant::GptqOptions{}, nullptr).is_ok());
  const double gptq = p.out_err((*enc)->dequantize()), plain = p.out_err(rtn(p.w, rows, cols)->dequantize());
  EXPECT_LT(gptq, 0.9 * plain) << "gptq " << gptq << " rtn " << plain;
  auto packed = (*enc)->pack();
  ASSERT_TRUE(packed.is_ok());
  auto dec = codec()->decode(rows, cols, spans_of(*packed));
  ASSERT_TRUE(dec.is_ok());
  EXPECT_EQ(*dec, (*enc)->dequantize());
}

TEST(Mxfp4Representation, FusedOpsAgreeWithTheReferenceDecodeInEveryMode) {
  const uint32_t rows = 37, cols = 160;
  std::mt19937 rng(9);
  std::normal_distribution<float> n01;
  std::vector<float> w(rows * cols);
  for (float& v : w) v = n01(rng);
  const auto enc = rtn(w, rows, cols);
  auto packed = enc->pack();
  ASSERT_TRUE(packed.is_ok());
  const auto f = spans_of(*packed);
  auto ref = codec()->make_op(rows, cols, f, ExecutionMode::kReferenceDecode);
  ASSERT_TRUE(ref.is_ok());
  EXPECT_EQ((*ref)->out_features(), rows);
  for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8}) {
    auto op = codec()->make_op(rows, cols, f, mode);
    ASSERT_TRUE(op.is_ok()) << op.status().to_string();
    EXPECT_EQ((*op)->weight_bytes(), size_t{rows} * cols * 17 / 32) << "4.25 bits per weight, every byte counted";
    EXPECT_NE((*op)->describe().find("mxfp4"), std::string::npos);
    for (size_t n : {size_t{1}, size_t{3}, size_t{70}}) {
      std::vector<float> x(n * cols), got(n * rows), want(n * rows);
      for (float& v : x) v = n01(rng);
      (*op)->forward(x.data(), n, got.data(), nullptr);
      (*ref)->forward(x.data(), n, want.data(), nullptr);
      // bf16 / int8 activations perturb the product by their rounding only.
      const double tol = mode == ExecutionMode::kFused ? 1e-4 : mode == ExecutionMode::kFusedBf16 ? 0.1 : 0.5;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "mode " << execution_mode_name(mode) << " n " << n << " i " << i;
    }
  }
}

TEST(Mxfp4Representation, UntrustedFieldsRecordsAndOptionsAreRefused) {
  const uint32_t rows = 2, cols = 64;
  std::vector<uint8_t> blocks(rows * cols / 2, 0x21), scales(rows * cols / 32, 127);
  auto field = [](const std::vector<uint8_t>& v) { return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size()); };
  auto try_decode = [&](const std::vector<uint8_t>& b, const std::vector<uint8_t>& s, uint32_t r, uint32_t c) {
    const std::span<const std::byte> f[2] = {field(b), field(s)};
    return codec()->decode(r, c, f).status();
  };
  EXPECT_TRUE(try_decode(blocks, scales, rows, cols).is_ok());
  for (uint8_t bad : {uint8_t{255}, uint8_t{253}}) {
    std::vector<uint8_t> s = scales;
    s[3] = bad;
    const Status st = try_decode(blocks, s, rows, cols);
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
    EXPECT_NE(st.message().find("row 1, block 1"), std::string::npos) << st.message();
  }
  EXPECT_EQ(try_decode(std::vector<uint8_t>(blocks.begin(), blocks.end() - 1), scales, rows, cols).code(), ErrorCode::kCorruptData);
  EXPECT_FALSE(try_decode(blocks, scales, rows, 48).is_ok()) << "48 columns are not whole blocks of 32";
  EXPECT_FALSE(codec()->check_shape(4, 48).is_ok());
  EXPECT_FALSE(codec()->make_encoder(4, 48).is_ok());
  const auto& fields = codec()->fields(rows, cols);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(fields[1].shape, (std::vector<int64_t>{2, 2}));

  EXPECT_TRUE(codec_from_record({{"representation", "mxfp4"}}, "r", nullptr).is_ok());
  EXPECT_NE(codec_from_record({{"representation", "mxfp4"}, {"bits", 4}}, "r", nullptr).status().message().find("bits"),
            std::string::npos);
  EXPECT_EQ(codec()->record(), (nlohmann::json{{"representation", "mxfp4"}}));
  ReprOptions o{"mxfp4", 4.0};
  EXPECT_NE(make_codec(o).status().message().find("4.25"), std::string::npos);
  o = ReprOptions{"mxfp4"};
  o.group_size = 64;
  EXPECT_NE(make_codec(o).status().message().find("--group-size"), std::string::npos);
  o = ReprOptions{"mxfp4"};
  o.extra = {{"rht", "on"}};
  EXPECT_FALSE(make_codec(o).is_ok());
  EXPECT_TRUE(make_codec(ReprOptions{"mxfp4", 4.25}).is_ok());
  auto grid = options_from_grid_name("mxfp4");
  ASSERT_TRUE(grid.is_ok());
  EXPECT_EQ(grid->name, "mxfp4");
}

}  // namespace
}  // namespace submoe::runtime
