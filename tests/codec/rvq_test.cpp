// Residual vector quantization: the generator against golden values (computed
// independently in Python), k-means (monotone error, thread-count
// determinism, the empty-cluster policy), the encoder (beam never worse than
// greedy, beam 256 = the exhaustive optimum of 2 stages), the trainer, the
// matrix round trip through the reference decoder bit for bit, every
// rejection rule of the validator, the ledger and a tiny synthetic run.
#include "submoe/codec/rvq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"

namespace submoe::rvq {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Random stage codebooks whose scale shrinks per stage like trained ones.
std::vector<float> random_codebooks(uint32_t stages, uint64_t seed) {
  std::vector<float> cb = gaussian_vectors(size_t{stages} * kRvqEntries, seed);
  for (uint32_t s = 0; s < stages; ++s) {
    const float scale = std::pow(0.6f, static_cast<float>(s));
    for (size_t i = 0; i < kRvqCodebookFloats; ++i) cb[s * kRvqCodebookFloats + i] *= scale;
  }
  return cb;
}

TEST(RvqGenerator, SplitMix64ReferenceValue) {
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xe220a8397b1dcdafULL);  // the published first output for seed 0
}

TEST(RvqGenerator, GoldenGaussians) {
  float v[6];
  fill_gaussian(v, 42);
  const float golden[6] = {0x1.a8ac4cp-2f, 0x1.4e2c3cp-1f, -0x1.c8a55p-1f,
                           0x1.53ab5ep+0f, 0x1.bac69cp+0f, -0x1.e2279ap+0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(float_bits(v[i]), float_bits(golden[i])) << i;
  // An odd length ends with a cosine value of the same stream.
  float odd[5];
  fill_gaussian(odd, 42);
  EXPECT_EQ(float_bits(odd[4]), float_bits(golden[4]));
}

TEST(RvqGenerator, Moments) {
  const std::vector<float> v = gaussian_vectors(8192, 7);
  double m = 0, m2 = 0;
  for (float x : v) {
    m += x;
    m2 += static_cast<double>(x) * x;
  }
  m /= static_cast<double>(v.size());
  m2 /= static_cast<double>(v.size());
  EXPECT_NEAR(m, 0.0, 0.01);
  EXPECT_NEAR(m2, 1.0, 0.02);
  EXPECT_NE(gaussian_vectors(4, 7), gaussian_vectors(4, 8));
}

TEST(RvqKMeans, ErrorNeverIncreasesAndDeterministicAcrossThreads) {
  const std::vector<float> pts = gaussian_vectors(4500, 3);  // 3 chunks of 2048
  KMeansOptions o;
  o.centroids = 32;
  o.max_iterations = 8;
  o.tolerance = 0;
  o.seed = 5;
  auto serial = kmeans16(pts, o);
  ASSERT_TRUE(serial.is_ok()) << serial.status().to_string();
  ASSERT_EQ(serial->error_history.size(), 9u);
  EXPECT_EQ(serial->iterations, 8u);
  for (size_t i = 1; i < serial->error_history.size(); ++i) {
    // Exact Lloyd never increases the error; centroids rounded to float may
    // add a few ulps of the total near convergence.
    EXPECT_LE(serial->error_history[i], serial->error_history[i - 1] * (1 + 1e-7)) << i;
  }
  EXPECT_LT(serial->error_history.back(), 0.9 * serial->error_history.front());
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    o.pool = &pool;
    auto r = kmeans16(pts, o);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r->centroids, serial->centroids) << threads;
    EXPECT_EQ(r->error_history, serial->error_history) << threads;
  }
  // The seed matters; tolerance stops early.
  o.pool = nullptr;
  o.seed = 6;
  EXPECT_NE(kmeans16(pts, o)->centroids, serial->centroids);
  o.tolerance = 0.5;
  auto early = kmeans16(pts, o);
  EXPECT_TRUE(early->converged);
  EXPECT_EQ(early->iterations, 1u);
}

TEST(RvqKMeans, EmptyClustersReseededAtLargestErrors) {
  // 200 points near the origin and three outliers; centroids 1..3 start far
  // away and win no point, so they are re-seeded at the three points of
  // largest error, largest first.
  std::vector<float> pts = gaussian_vectors(203, 11);
  for (size_t i = 0; i < 200 * kRvqDim; ++i) pts[i] *= 0.1f;
  for (uint32_t j = 0; j < kRvqDim; ++j) {
    pts[200 * kRvqDim + j] = 3.0f;   // error ~ 144
    pts[201 * kRvqDim + j] = -5.0f;  // error ~ 400, the largest
    pts[202 * kRvqDim + j] = 4.0f;   // error ~ 256
  }
  std::vector<float> init(4 * kRvqDim, 0.0f);
  for (uint32_t j = 0; j < kRvqDim; ++j) {
    init[1 * kRvqDim + j] = 1000.0f;
    init[2 * kRvqDim + j] = 2000.0f;
    init[3 * kRvqDim + j] = 3000.0f;
  }
  KMeansOptions o;
  o.max_iterations = 1;
  o.tolerance = 0;
  auto r = kmeans16_from(pts, init, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->empty_reseeds, 3u);
  for (uint32_t j = 0; j < kRvqDim; ++j) {
    EXPECT_EQ(r->centroids[1 * kRvqDim + j], -5.0f);
    EXPECT_EQ(r->centroids[2 * kRvqDim + j], 4.0f);
    EXPECT_EQ(r->centroids[3 * kRvqDim + j], 3.0f);
  }
  EXPECT_LT(r->error_history[1], 0.05 * r->error_history[0]);
  // With more iterations the outliers keep their own clusters (no more re-seeds).
  o.max_iterations = 5;
  EXPECT_EQ(kmeans16_from(pts, init, o)->empty_reseeds, 3u);
}

TEST(RvqKMeans, RejectsBadInput) {
  std::vector<float> pts = gaussian_vectors(10, 1);
  KMeansOptions o;
  o.centroids = 11;
  EXPECT_FALSE(kmeans16(pts, o).is_ok());
  o.centroids = 0;
  EXPECT_FALSE(kmeans16(pts, o).is_ok());
  o.centroids = 4;
  EXPECT_FALSE(kmeans16(std::span<const float>(pts.data(), 17), o).is_ok());
  pts[35] = std::numeric_limits<float>::quiet_NaN();
  auto r = kmeans16(pts, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("points[2][3]"), std::string::npos) << r.status().message();
  // Identical points: seeding still returns k centroids.
  std::vector<float> same(64 * kRvqDim, 1.5f);
  auto s = kmeans16(same, o);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->error_history.back(), 0.0);
}

TEST(RvqEncoder, BeamNeverWorseThanGreedy) {
  const std::vector<float> cb = random_codebooks(4, 21);
  auto enc = RvqEncoder::create(cb, 4);
  ASSERT_TRUE(enc.is_ok());
  const std::vector<float> targets = gaussian_vectors(100, 22);
  double total_greedy = 0, total_beam = 0;
  for (size_t t = 0; t < 100; ++t) {
    const float* x = targets.data() + t * kRvqDim;
    uint8_t codes[4];
    float rec[kRvqDim];
    const double greedy = enc->encode(x, 1, codes, rec);
    total_greedy += greedy;
    for (uint32_t beam : {2u, 4u, 8u, 16u}) {
      const double e = enc->encode(x, beam, codes, rec);
      EXPECT_LE(e, greedy) << "target " << t << " beam " << beam;
      if (beam == 8) total_beam += e;
    }
  }
  EXPECT_LT(total_beam, 0.97 * total_greedy);
}

TEST(RvqEncoder, FullBeamIsExhaustiveForTwoStages) {
  const std::vector<float> cb = random_codebooks(2, 31);
  const std::vector<float> targets = gaussian_vectors(6, 32);
  for (size_t t = 0; t < 6; ++t) {
    const float* x = targets.data() + t * kRvqDim;
    double best = std::numeric_limits<double>::infinity();
    uint32_t b0 = 0, b1 = 0;
    for (uint32_t c0 = 0; c0 < kRvqEntries; ++c0) {
      for (uint32_t c1 = 0; c1 < kRvqEntries; ++c1) {
        double e = 0;
        for (uint32_t j = 0; j < kRvqDim; ++j) {
          const float rec = (0.0f + cb[c0 * kRvqDim + j]) + cb[kRvqCodebookFloats + c1 * kRvqDim + j];
          const double d = static_cast<double>(x[j]) - rec;
          e += d * d;
        }
        if (e < best) {
          best = e;
          b0 = c0;
          b1 = c1;
        }
      }
    }
    uint8_t codes[2];
    float rec[kRvqDim];
    auto e = encode_subvector(x, 2, cb, 256, codes, rec);
    ASSERT_TRUE(e.is_ok());
    EXPECT_EQ(*e, best) << t;
    EXPECT_EQ(codes[0], b0) << t;
    EXPECT_EQ(codes[1], b1) << t;
  }
}

TEST(RvqEncoder, ReconstructionIsTheDecoderSum) {
  const std::vector<float> cb = random_codebooks(8, 41);
  const std::vector<float> x = gaussian_vectors(1, 42);
  for (uint32_t beam : {1u, 8u}) {
    uint8_t codes[8];
    float rec[kRvqDim];
    auto e = encode_subvector(x.data(), 8, cb, beam, codes, rec);
    ASSERT_TRUE(e.is_ok());
    double err = 0;
    for (uint32_t j = 0; j < kRvqDim; ++j) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < 8; ++s) sum += cb[s * kRvqCodebookFloats + codes[s] * kRvqDim + j];
      EXPECT_EQ(float_bits(rec[j]), float_bits(sum)) << j;
      err += (static_cast<double>(x[j]) - sum) * (static_cast<double>(x[j]) - sum);
    }
    EXPECT_EQ(*e, err);
  }
}

TEST(RvqEncoder, RejectsBadArguments) {
  std::vector<float> cb = random_codebooks(2, 1);
  float x[kRvqDim] = {};
  uint8_t codes[8];
  float rec[kRvqDim];
  EXPECT_FALSE(encode_subvector(x, 0, cb, 1, codes, rec).is_ok());
  EXPECT_FALSE(encode_subvector(x, 3, cb, 1, codes, rec).is_ok());  // codebooks too short
  EXPECT_FALSE(encode_subvector(x, 2, cb, 0, codes, rec).is_ok());
  EXPECT_FALSE(encode_subvector(x, 2, cb, 257, codes, rec).is_ok());
  cb[kRvqCodebookFloats + 5 * kRvqDim + 7] = std::numeric_limits<float>::infinity();
  auto r = encode_subvector(x, 2, cb, 1, codes, rec);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("codebooks[stage 1][entry 5][7]"), std::string::npos) << r.status().message();
}

TEST(RvqTrain, StagesShrinkTheResidualAndAgreeWithTheEncoder) {
  const std::vector<float> train = gaussian_vectors(2100, 51);  // 2 chunks
  RvqTrainOptions o;
  o.max_iterations = 3;
  o.seed = 3;
  auto r = train_rvq_codebooks(train, 3, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->codebooks.size(), 3 * kRvqCodebookFloats);
  ASSERT_EQ(r->stages.size(), 3u);
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_LT(r->stages[s].mse_after, 0.8 * r->stages[s].mse_before) << s;
    if (s > 0) {
      EXPECT_EQ(r->stages[s].mse_before, r->stages[s - 1].mse_after);
    }
  }
  // The trainer's final residual is the greedy encoder's error.
  auto enc = RvqEncoder::create(r->codebooks, 3);
  ASSERT_TRUE(enc.is_ok());
  auto err = encode_rvq_vectors(train, *enc, 3, 1, {}, {}, nullptr);
  ASSERT_TRUE(err.is_ok());
  EXPECT_NEAR(*err / static_cast<double>(train.size()), r->stages[2].mse_after, 1e-6 * r->stages[2].mse_after);
  // Stage s depends only on stages < s: 2 stages (on 2 threads) are the
  // prefix of 3 (serial).
  ThreadPool pool(2);
  o.pool = &pool;
  auto r2 = train_rvq_codebooks(train, 2, o);
  ASSERT_TRUE(r2.is_ok());
  EXPECT_EQ(r2->codebooks, std::vector<float>(r->codebooks.begin(), r->codebooks.begin() + 2 * kRvqCodebookFloats));
  // Beam-encoder residuals: a one-stage beam is the exact nearest entry, so
  // stages 0 and 1 match the greedy trainer; stage 2 sees a different residual.
  o.max_iterations = 2;
  auto r1 = train_rvq_codebooks(train, 3, o);
  ASSERT_TRUE(r1.is_ok());
  o.beam_width = 2;
  auto rb = train_rvq_codebooks(train, 3, o);
  ASSERT_TRUE(rb.is_ok());
  const auto stage_floats = static_cast<std::ptrdiff_t>(kRvqCodebookFloats);
  EXPECT_TRUE(std::equal(rb->codebooks.begin(), rb->codebooks.begin() + 2 * stage_floats, r1->codebooks.begin()));
  EXPECT_FALSE(std::equal(rb->codebooks.begin() + 2 * stage_floats, rb->codebooks.end(),
                          r1->codebooks.begin() + 2 * stage_floats));
  EXPECT_LT(rb->stages[2].mse_before, r1->stages[2].mse_before);  // beam leaves a smaller residual
  EXPECT_FALSE(train_rvq_codebooks(std::span<const float>(train.data(), 255 * kRvqDim), 1, o).is_ok());
  EXPECT_FALSE(train_rvq_codebooks(train, 9, o).is_ok());
}

TEST(RvqMatrix, RowScales) {
  std::vector<float> row(32, 0.0f);
  EXPECT_EQ(*rvq_row_scale(row), 0x3c00);  // all zero: 1.0
  row[3] = 1e-30f;
  EXPECT_EQ(*rvq_row_scale(row), 0x0001);  // below f16: the smallest subnormal
  for (float& v : row) v = 2.0f;
  EXPECT_EQ(f16_bits_to_float(*rvq_row_scale(row)), 2.0f);
  for (float& v : row) v = 1e5f;
  EXPECT_FALSE(rvq_row_scale(row).is_ok());
  row[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(rvq_row_scale(row).is_ok());
}

TEST(RvqMatrix, RoundTripThroughTheReferenceDecoderBitForBit) {
  const uint32_t rows = 6, cols = 64, stages = 3;
  auto cb = std::make_shared<const std::vector<float>>(random_codebooks(4, 61));  // more stages than used
  std::vector<float> w = gaussian_vectors(rows * cols / kRvqDim, 62);
  for (uint32_t c = 0; c < cols; ++c) w[2 * cols + c] = 0.0f;  // a zero row
  for (uint32_t c = 0; c < cols; ++c) w[4 * cols + c] *= 0.01f;
  for (uint32_t beam : {1u, 4u}) {
    ThreadPool pool(2);
    auto m = encode_rvq_matrix(w, rows, cols, stages, cb, beam, &pool);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->storage_bytes(), rvq_matrix_bytes(rows, cols, stages));
    EXPECT_EQ(m->scales()[2], 0x3c00);
    auto decoded = decode_rvq_reference(m->view());
    ASSERT_TRUE(decoded.is_ok());
    for (uint32_t r = 0; r < rows; ++r) {
      const float scale = f16_bits_to_float(m->scales()[r]);
      EXPECT_EQ(m->scales()[r], *rvq_row_scale(std::span<const float>(w.data() + r * cols, cols)));
      for (uint32_t g = 0; g < cols / kRvqDim; ++g) {
        float target[kRvqDim];
        for (uint32_t j = 0; j < kRvqDim; ++j) target[j] = w[r * cols + g * kRvqDim + j] / scale;
        uint8_t codes[3];
        float rec[kRvqDim];
        ASSERT_TRUE(encode_subvector(target, stages, *cb, beam, codes, rec).is_ok());
        EXPECT_EQ(0, std::memcmp(codes, m->view().row_codes(r) + g * stages, stages)) << r << " " << g;
        for (uint32_t j = 0; j < kRvqDim; ++j) {
          EXPECT_EQ(float_bits((*decoded)[r * cols + g * kRvqDim + j]), float_bits(scale * rec[j]));
        }
      }
    }
    // Same bytes with and without a pool, and through from_parts.
    auto serial = encode_rvq_matrix(w, rows, cols, stages, cb, beam, nullptr);
    EXPECT_TRUE(std::equal(serial->codes().begin(), serial->codes().end(), m->codes().begin()));
    auto again = RvqMatrix::from_parts(rows, cols, stages, m->codes(), m->scales(), cb);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(*decode_rvq_reference(again->view()), *decoded);
  }
  EXPECT_FALSE(encode_rvq_matrix(w, rows, 60, stages, cb, 1, nullptr).is_ok());
  EXPECT_FALSE(encode_rvq_matrix(w, rows, cols, 5, cb, 1, nullptr).is_ok());  // 4 stages of codebooks
  EXPECT_FALSE(encode_rvq_matrix(w, rows, cols, stages, nullptr, 1, nullptr).is_ok());
}

class RvqValidate : public ::testing::Test {
 protected:
  void SetUp() override {
    codebooks = random_codebooks(2, 71);
    codes.assign(size_t{rows} * (cols / kRvqDim) * stages, 7);
    scales.assign(rows, 0x3c00);
  }
  RvqView view() const {
    RvqView v;
    v.rows = rows;
    v.cols = cols;
    v.stages = stages;
    v.codes = codes.data();
    v.scales = scales.data();
    v.codebooks = codebooks.data();
    return v;
  }
  void expect_rejected(const RvqView& v, const std::string& needle) {
    const Status s = validate_rvq(v);
    ASSERT_FALSE(s.is_ok()) << needle;
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_FALSE(decode_rvq_reference(v).is_ok());
  }
  uint32_t rows = 5, cols = 32, stages = 2;
  std::vector<float> codebooks;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
};

TEST_F(RvqValidate, AcceptsGoodData) {
  EXPECT_TRUE(validate_rvq(view()).is_ok());
  scales[1] = 0x0001;  // smallest subnormal is positive and finite
  EXPECT_TRUE(validate_rvq(view()).is_ok());
}

TEST_F(RvqValidate, RejectsEveryBadScale) {
  for (uint16_t bad : {uint16_t{0x7e00}, uint16_t{0x7c01}, uint16_t{0x7c00}, uint16_t{0xfc00}, uint16_t{0x0000},
                       uint16_t{0x8000}, uint16_t{0xbc00}, uint16_t{0x8001}}) {
    SetUp();
    scales[3] = bad;
    scales[4] = bad;
    expect_rejected(view(), "scales[3]");
  }
}

TEST_F(RvqValidate, RejectsBadCodebooksAndShapes) {
  codebooks[kRvqCodebookFloats + 5 * kRvqDim + 7] = std::numeric_limits<float>::quiet_NaN();
  expect_rejected(view(), "codebooks[stage 1][entry 5][7]");
  SetUp();
  codebooks[9] = -std::numeric_limits<float>::infinity();
  expect_rejected(view(), "codebooks[stage 0][entry 0][9]");
  SetUp();
  codebooks[20] = 1e31f;
  expect_rejected(view(), "codebooks[stage 0][entry 1][4]");
  SetUp();
  RvqView v = view();
  v.stages = 0;
  expect_rejected(v, "stages");
  v.stages = 9;
  expect_rejected(v, "stages");
  v = view();
  v.cols = 40;
  expect_rejected(v, "cols");
  v.cols = 0;
  expect_rejected(v, "cols");
  v = view();
  v.rows = 0;
  expect_rejected(v, "rows");
  v = view();
  v.codes = nullptr;
  expect_rejected(v, "codes");
  v = view();
  v.scales = nullptr;
  expect_rejected(v, "scales");
  v = view();
  v.codebooks = nullptr;
  expect_rejected(v, "codebooks");
}

TEST_F(RvqValidate, RawBuffersAreSizeChecked) {
  auto bytes = [](const auto& vec) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(vec.data()),
                                      vec.size() * sizeof(vec[0]));
  };
  auto ok = make_rvq_view(rows, cols, stages, bytes(codes), bytes(scales), bytes(codebooks));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_TRUE(decode_rvq_reference(*ok).is_ok());
  auto expect_bad = [](const Result<RvqView>& r, const std::string& needle) {
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_bad(make_rvq_view(rows, cols, stages, bytes(codes).first(codes.size() - 1), bytes(scales), bytes(codebooks)),
             "codes");
  expect_bad(make_rvq_view(rows, cols, stages, bytes(codes), bytes(scales).first(8), bytes(codebooks)), "scales");
  expect_bad(make_rvq_view(rows, cols, stages, bytes(codes), bytes(scales), bytes(codebooks).first(16384)),
             "codebooks");
  expect_bad(make_rvq_view(rows, cols, stages, bytes(codes), bytes(scales), bytes(codebooks).first(16384 * 2 - 4)),
             "codebooks");
  expect_bad(make_rvq_view(rows, 24, stages, bytes(codes), bytes(scales), bytes(codebooks)), "cols");
  expect_bad(make_rvq_view(rows, cols, 9, bytes(codes), bytes(scales), bytes(codebooks)), "stages");
  scales[0] = 0xfe00;
  expect_bad(make_rvq_view(rows, cols, stages, bytes(codes), bytes(scales), bytes(codebooks)), "scales[0]");
  // from_parts validates too.
  auto cb = std::make_shared<const std::vector<float>>(codebooks);
  EXPECT_FALSE(RvqMatrix::from_parts(rows, cols, stages, codes, scales, cb).is_ok());
  scales[0] = 0x3c00;
  EXPECT_TRUE(RvqMatrix::from_parts(rows, cols, stages, codes, scales, cb).is_ok());
  EXPECT_FALSE(RvqMatrix::from_parts(rows, cols, 3, codes, scales, cb).is_ok());
}

TEST(RvqLedger, ExactRates) {
  const RvqLedger l = rvq_ledger(3, 32, 4);
  EXPECT_EQ(l.weights, 96u);
  EXPECT_EQ(l.code_bytes, 24u);  // 3 rows x 2 groups x 4 stages
  EXPECT_EQ(l.scale_bytes, 6u);
  EXPECT_EQ(l.codebook_bytes, 4u * 16384u);
  EXPECT_EQ(l.code_bits_per_weight, 2.0);
  EXPECT_EQ(l.scale_bits_per_weight, 0.5);
  EXPECT_EQ(l.bits_per_weight, 2.5);
  EXPECT_EQ(l.bits_per_weight_with_codebooks, 8.0 * (30 + 65536) / 96);
  for (uint32_t s = 1; s <= kRvqMaxStages; ++s) {
    EXPECT_EQ(rvq_ledger(16, 4096, s).bits_per_weight, s * kRvqBitsPerStage + 16.0 / 4096);
    EXPECT_EQ(rvq_ledger(16, 4096, s).code_bytes + rvq_ledger(16, 4096, s).scale_bytes,
              rvq_matrix_bytes(16, 4096, s));
  }
  EXPECT_EQ(lloyd_max_gaussian_mse(2.0), 0.1175);
  EXPECT_EQ(lloyd_max_gaussian_mse(1.5), -1.0);
}

TEST(RvqSynth, TinyCurve) {
  RvqSynthOptions o;
  o.stages = 2;
  o.rows = 4;
  o.cols = 128;
  o.train_vectors = 1024;
  o.eval_train_vectors = 0;
  o.beam_width = 2;
  o.max_iterations = 4;
  o.curve = true;
  auto r = run_rvq_synth(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->points.size(), 2u);
  EXPECT_EQ(r->points[0].stages, 1u);
  EXPECT_EQ(r->points[1].code_bits_per_weight, 1.0);
  EXPECT_EQ(r->points[1].bits_per_weight, 1.0 + 16.0 / 128);
  EXPECT_EQ(r->points[1].gaussian_bound, 0.25);
  EXPECT_EQ(r->points[1].lloyd_max_scalar_mse, 0.3634);
  EXPECT_EQ(r->points[0].lloyd_max_scalar_mse, -1.0);
  for (const RvqSynthPoint& p : r->points) {
    EXPECT_TRUE(p.roundtrip_ok);
    EXPECT_GT(p.mse, p.gaussian_bound * 0.8);
    EXPECT_LT(p.mse, 1.0);
    EXPECT_LT(p.mse_train, p.mse_raw);  // 1024 vectors: overfit
  }
  EXPECT_LT(r->points[1].mse, r->points[0].mse);
  o.cols = 100;
  EXPECT_FALSE(run_rvq_synth(o).is_ok());
}

}  // namespace
}  // namespace submoe::rvq
