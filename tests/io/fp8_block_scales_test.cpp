// FP8 block-scaled checkpoints (DeepSeek-V3 / Kimi-K2 hub weights): the
// weight_scale_inv pairing made at open and the dequantization read_as_f32 /
// read_as_bf16 apply, against a float64 oracle of DeepSeek's weight_dequant,
// on ragged block edges, BF16 scales, a scale in another shard and every kind
// of inconsistency.
#include <cmath>
#include <random>

#include "io/io_test_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::TempDir;

// The E4M3 "fn" value of a byte, written from the format's definition.
double e4m3(uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  const double mag = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (b & 0x80) ? -mag : mag;
}

struct Fp8Matrix {
  int64_t rows, cols, br, bc;
  std::vector<uint8_t> codes;
  std::vector<float> scales;  // [ceil(rows/br), ceil(cols/bc)]
  int64_t scale_rows() const { return (rows + br - 1) / br; }
  int64_t scale_cols() const { return (cols + bc - 1) / bc; }
  double oracle(int64_t r, int64_t c) const {
    return e4m3(codes[static_cast<size_t>(r * cols + c)]) *
           static_cast<double>(scales[static_cast<size_t>((r / br) * scale_cols() + c / bc)]);
  }
};

Fp8Matrix random_matrix(int64_t rows, int64_t cols, int64_t br, int64_t bc, uint32_t seed) {
  std::mt19937 rng(seed);
  Fp8Matrix m{rows, cols, br, bc, {}, {}};
  m.codes.resize(static_cast<size_t>(rows * cols));
  for (uint8_t& b : m.codes) {
    b = static_cast<uint8_t>(rng());
    if ((b & 0x7f) == 0x7f) b ^= 1;  // never NaN
  }
  std::uniform_real_distribution<float> u(-12.0f, -4.0f);
  m.scales.resize(static_cast<size_t>(m.scale_rows() * m.scale_cols()));
  // Scales exact in BF16 too, so one oracle serves F32 and BF16 scale tensors.
  for (float& s : m.scales) s = bf16_to_float(float_to_bf16(std::exp2(u(rng))));
  return m;
}

void write_config(const TempDir& dir, const std::string& block, const std::string& fmt = "e4m3") {
  testing::write_bytes(dir.file("config.json"),
                       R"({"model_type": "deepseek_v3", "quantization_config": {"quant_method": "fp8", "fmt": ")" + fmt +
                           R"(", "activation_scheme": "dynamic")" +
                           (block.empty() ? std::string() : ", \"weight_block_size\": " + block) + "}}");
}

void add_matrix(SafetensorsWriter* w, const std::string& name, const Fp8Matrix& m, DType scale_dtype) {
  ASSERT_TRUE(w->add(name, DType::kF8E4M3, {m.rows, m.cols}, m.codes).is_ok());
  const std::vector<int64_t> shape{m.scale_rows(), m.scale_cols()};
  if (scale_dtype == DType::kF32) {
    ASSERT_TRUE(w->add_f32(name + "_scale_inv", shape, m.scales).is_ok());
  } else {
    std::vector<bf16_t> b;
    for (float s : m.scales) b.push_back(float_to_bf16(s));  // exact (random_matrix)
    ASSERT_TRUE(w->add_bf16(name + "_scale_inv", shape, b).is_ok());
  }
}

void expect_dequantized(const TensorView& t, const Fp8Matrix& m) {
  ASSERT_NE(t.block_scale, nullptr) << t.name;
  EXPECT_EQ(t.block_rows, m.br);
  EXPECT_EQ(t.block_cols, m.bc);
  auto f = to_f32(t);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto b = to_bf16(t);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      const size_t i = static_cast<size_t>(r * m.cols + c);
      // The float32 product rounds the exact (float64) one once.
      ASSERT_EQ((*f)[i], static_cast<float>(m.oracle(r, c))) << t.name << " (" << r << ", " << c << ")";
      ASSERT_EQ((*b)[i].bits, float_to_bf16(static_cast<float>(m.oracle(r, c))).bits) << r << ", " << c;
    }
}

TEST(Fp8BlockScales, DequantizesRaggedBlocksAgainstTheOracle) {
  TempDir dir;
  write_config(dir, "[16, 24]");
  // 16 x 24 blocks over shapes that are and are not multiples of them.
  const Fp8Matrix a = random_matrix(37, 50, 16, 24, 1), b = random_matrix(16, 24, 16, 24, 2),
                  c = random_matrix(5, 7, 16, 24, 3);
  SafetensorsWriter w;
  add_matrix(&w, "a.weight", a, DType::kF32);
  add_matrix(&w, "b.weight", b, DType::kBF16);
  add_matrix(&w, "c.weight", c, DType::kF32);
  const std::vector<float> norm{1.0f, 2.0f};
  ASSERT_TRUE(w.add_f32("norm.weight", {2}, norm).is_ok());
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  expect_dequantized(*(*m)->find("a.weight"), a);
  expect_dequantized(*(*m)->find("b.weight"), b);
  expect_dequantized(*(*m)->find("c.weight"), c);
  EXPECT_TRUE((*m)->find("a.weight_scale_inv")->is_block_scale);
  EXPECT_FALSE((*m)->find("norm.weight")->is_block_scale);
  EXPECT_EQ((*m)->find("norm.weight")->block_scale, nullptr);
  // A 1-D part of the weight has no block coordinates: refused, not misread.
  TensorView part = *(*m)->find("a.weight");
  part.shape = {10};
  part.nbytes = 10;
  std::vector<float> out(10);
  EXPECT_EQ(read_as_f32(part, out).code(), ErrorCode::kInvalidArgument);
}

TEST(Fp8BlockScales, DefaultBlockIs128AndScalesMayLiveInAnotherShard) {
  TempDir dir;
  write_config(dir, "");
  const Fp8Matrix a = random_matrix(130, 257, 128, 128, 4);
  SafetensorsWriter w1, w2;
  ASSERT_TRUE(w1.add("a.weight", DType::kF8E4M3, {a.rows, a.cols}, a.codes).is_ok());
  ASSERT_TRUE(w2.add_f32("a.weight_scale_inv", {a.scale_rows(), a.scale_cols()}, a.scales).is_ok());
  ASSERT_TRUE(w1.write(dir.file("model-1.safetensors")).is_ok());
  ASSERT_TRUE(w2.write(dir.file("model-2.safetensors")).is_ok());
  testing::write_bytes(dir.file("model.safetensors.index.json"),
                       R"({"weight_map": {"a.weight": "model-1.safetensors", "a.weight_scale_inv": "model-2.safetensors"}})");
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  expect_dequantized(*(*m)->find("a.weight"), a);
}

// Each broken checkpoint is refused at open with a message naming the tensor.
TEST(Fp8BlockScales, InconsistenciesAreRefusedByName) {
  const Fp8Matrix a = random_matrix(20, 30, 16, 24, 5);
  struct Case {
    const char* what;
    std::function<void(SafetensorsWriter*)> build;
    std::string config_block;
    std::string message;
    std::string fmt = "e4m3";
  };
  const std::vector<float> one{1.0f};
  const std::vector<Case> cases = {
      {"weight without its scale",
       [&](SafetensorsWriter* w) { ASSERT_TRUE(w->add("a.weight", DType::kF8E4M3, {20, 30}, a.codes).is_ok()); },
       "[16, 24]", "FP8 tensor 'a.weight' (F8_E4M3) has no block scale 'a.weight_scale_inv'"},
      {"scale of the wrong shape",
       [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add("a.weight", DType::kF8E4M3, {20, 30}, a.codes).is_ok());
         ASSERT_TRUE(w->add_f32("a.weight_scale_inv", {1, 1}, one).is_ok());
       },
       "[16, 24]", "block scale 'a.weight_scale_inv' has shape [1, 1]; weight 'a.weight' [20, 30] in blocks of 16 x 24 needs [2, 2]"},
      {"scale without a weight",
       [&](SafetensorsWriter* w) {
         add_matrix(w, "a.weight", a, DType::kF32);
         ASSERT_TRUE(w->add_f32("b.weight_scale_inv", {1, 1}, one).is_ok());
       },
       "[16, 24]", "block scale 'b.weight_scale_inv' has no weight 'b.weight'"},
      {"scale of a float weight",
       [&](SafetensorsWriter* w) {
         add_matrix(w, "a.weight", a, DType::kF32);
         ASSERT_TRUE(w->add_f32("c.weight", {1, 1}, one).is_ok());
         ASSERT_TRUE(w->add_f32("c.weight_scale_inv", {1, 1}, one).is_ok());
       },
       "[16, 24]", "tensor 'c.weight_scale_inv' scales 'c.weight', which is F32, not FP8"},
      {"non-finite scale",
       [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add("a.weight", DType::kF8E4M3, {20, 30}, a.codes).is_ok());
         std::vector<float> s = a.scales;
         s[3] = std::nanf("");
         ASSERT_TRUE(w->add_f32("a.weight_scale_inv", {2, 2}, s).is_ok());
       },
       "[16, 24]", "tensor 'a.weight_scale_inv' holds a NaN or infinite value at element 3"},
      {"bad block size",
       [&](SafetensorsWriter* w) { add_matrix(w, "a.weight", a, DType::kF32); }, "[0, 24]",
       "weight_block_size [0,24] is out of range"},
      {"block size not two integers",
       [&](SafetensorsWriter* w) { add_matrix(w, "a.weight", a, DType::kF32); }, "[16.5, 24]",
       "weight_block_size must be two integers [rows, cols], got [16.5,24]"},
      {"another FP8 format",
       [&](SafetensorsWriter* w) { add_matrix(w, "a.weight", a, DType::kF32); }, "[16, 24]",
       "fmt is \"e5m2\"; FP8 checkpoints are read in the e4m3 format only", "e5m2"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    write_config(dir, c.config_block, c.fmt);
    SafetensorsWriter w;
    c.build(&w);
    ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
    auto m = SafetensorsModel::open(dir.path());
    ASSERT_FALSE(m.is_ok()) << c.what;
    EXPECT_NE(m.status().message().find(c.message), std::string::npos) << c.what << ": " << m.status().to_string();
  }
}

// Without a quantization_config an FP8 tensor without a scale is plain FP8
// (scale 1), and a scale without any FP8 weight is refused.
TEST(Fp8BlockScales, PlainFp8WithoutAConfigAndOrphanScales) {
  const Fp8Matrix a = random_matrix(3, 4, 128, 128, 6);
  {
    TempDir dir;
    SafetensorsWriter w;
    ASSERT_TRUE(w.add("a.weight", DType::kF8E4M3, {3, 4}, a.codes).is_ok());
    ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
    auto m = SafetensorsModel::open(dir.path());
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    auto f = to_f32(*(*m)->find("a.weight"));
    ASSERT_TRUE(f.is_ok());
    for (size_t i = 0; i < f->size(); ++i) EXPECT_EQ((*f)[i], static_cast<float>(e4m3(a.codes[i])));
  }
  TempDir dir;
  SafetensorsWriter w;
  const std::vector<float> one{1.0f};
  ASSERT_TRUE(w.add_f32("a.weight", {1}, one).is_ok());
  ASSERT_TRUE(w.add_f32("a.weight_scale_inv", {1, 1}, one).is_ok());
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("'a.weight_scale_inv' is a block scale, but the checkpoint holds no FP8 weight"),
            std::string::npos)
      << m.status().to_string();
}

}  // namespace
}  // namespace submoe::io
