// GPT-OSS's expert tensors split at open (io/fused_experts.cpp): fused,
// transposed, interleaved F32 / BF16 experts and MXFP4 blocks become per-expert
// [out, in] tensors equal to an oracle written here from the hub's definitions
// (x @ gate_up_proj with gate the even columns; MXFP4 low nibble first, value
// E2M1 x 2^(scale - 127)); Mixtral's untransposed v5 fused layout (no biases)
// is left alone; every inconsistency is refused naming the tensor.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "io/io_test_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::TempDir;

double e2m1(int code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return (code >> 3) ? -mag : mag;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> read(const SafetensorsModel& m, const std::string& name) {
  const TensorView* t = m.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  auto v = to_f32(*t);
  EXPECT_TRUE(v.is_ok());
  return *v;
}

constexpr int64_t E = 3, H = 64, I = 32;
const std::string kExperts = "model.layers.0.mlp.experts.";

TEST(FusedExperts, DenseFusedTransposedExpertsSplitPerExpert) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n01;
  std::vector<float> gu(E * H * 2 * I), dn(E * I * H), bias(E * 2 * I, 0.5f), dbias(E * H, 0.25f);
  for (float& v : gu) v = n01(rng);
  for (float& v : dn) v = n01(rng);
  TempDir dir;
  SafetensorsWriter w;
  ASSERT_TRUE(w.add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(gu)).is_ok());
  ASSERT_TRUE(w.add(kExperts + "gate_up_proj_bias", DType::kF32, {E, 2 * I}, f32_bytes(bias)).is_ok());
  ASSERT_TRUE(w.add(kExperts + "down_proj", DType::kF32, {E, I, H}, f32_bytes(dn)).is_ok());
  ASSERT_TRUE(w.add(kExperts + "down_proj_bias", DType::kF32, {E, H}, f32_bytes(dbias)).is_ok());
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->find(kExperts + "gate_up_proj"), nullptr) << "the fused sources leave the listing";
  EXPECT_NE((*m)->find(kExperts + "gate_up_proj_bias"), nullptr) << "biases stay for the loader";
  EXPECT_EQ((*m)->tensors().size(), 2u + 3u * E);
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = kExperts + std::to_string(e) + ".";
    const auto g = read(**m, p + "gate_proj.weight"), u = read(**m, p + "up_proj.weight"),
               d = read(**m, p + "down_proj.weight");
    EXPECT_EQ((*m)->find(p + "down_proj.weight")->shape, (std::vector<int64_t>{H, I}));
    for (int64_t i = 0; i < I; ++i)
      for (int64_t h = 0; h < H; ++h) {
        ASSERT_EQ(g[i * H + h], gu[(e * H + h) * 2 * I + 2 * i]);
        ASSERT_EQ(u[i * H + h], gu[(e * H + h) * 2 * I + 2 * i + 1]);
        ASSERT_EQ(d[h * I + i], dn[(e * I + i) * H + h]);
      }
  }
}

struct Mx {
  std::vector<uint8_t> blocks, scales;
  int64_t rows, cols;
  double at(int64_t e, int64_t r, int64_t c) const {
    const uint8_t byte = blocks[((e * rows + r) * cols + c) / 2];
    return e2m1(c % 2 ? byte >> 4 : byte & 15) * std::ldexp(1.0, scales[(e * rows + r) * (cols / 32) + c / 32] - 127);
  }
};

Mx random_mx(int64_t rows, int64_t cols, std::mt19937& rng) {
  Mx m{std::vector<uint8_t>(E * rows * cols / 2), std::vector<uint8_t>(E * rows * cols / 32), rows, cols};
  std::uniform_int_distribution<int> byte(0, 255), s(110, 135);
  for (auto& b : m.blocks) b = static_cast<uint8_t>(byte(rng));
  for (auto& v : m.scales) v = static_cast<uint8_t>(s(rng));
  return m;
}

void add_mx(SafetensorsWriter* w, const std::string& name, const Mx& m) {
  ASSERT_TRUE(w->add(name + "_blocks", DType::kU8, {E, m.rows, m.cols / 32, 16}, m.blocks).is_ok());
  ASSERT_TRUE(w->add(name + "_scales", DType::kU8, {E, m.rows, m.cols / 32}, m.scales).is_ok());
}

TEST(FusedExperts, Mxfp4BlocksDequantizeExactlyPerExpert) {
  std::mt19937 rng(2);
  const Mx gu = random_mx(2 * I, H, rng), dn = random_mx(H, I, rng);
  TempDir dir;
  SafetensorsWriter w;
  add_mx(&w, kExperts + "gate_up_proj", gu);
  add_mx(&w, kExperts + "down_proj", dn);
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->tensors().size(), 3u * E);
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = kExperts + std::to_string(e) + ".";
    EXPECT_EQ((*m)->find(p + "gate_proj.weight")->dtype, DType::kBF16);
    const auto g = read(**m, p + "gate_proj.weight"), u = read(**m, p + "up_proj.weight"),
               d = read(**m, p + "down_proj.weight");
    for (int64_t i = 0; i < I; ++i)
      for (int64_t h = 0; h < H; ++h) {
        ASSERT_EQ(g[i * H + h], gu.at(e, 2 * i, h));
        ASSERT_EQ(u[i * H + h], gu.at(e, 2 * i + 1, h));
        ASSERT_EQ(d[h * I + i], dn.at(e, h, i));
      }
  }
}

TEST(FusedExperts, MixtralsUntransposedFusedLayoutIsLeftAlone) {
  TempDir dir;
  SafetensorsWriter w;
  std::vector<float> gu(E * 2 * I * H, 1.0f), dn(E * H * I, 1.0f);
  ASSERT_TRUE(w.add(kExperts + "gate_up_proj", DType::kF32, {E, 2 * I, H}, f32_bytes(gu)).is_ok());
  ASSERT_TRUE(w.add(kExperts + "down_proj", DType::kF32, {E, H, I}, f32_bytes(dn)).is_ok());
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_TRUE(m.is_ok());
  EXPECT_NE((*m)->find(kExperts + "gate_up_proj"), nullptr);
  EXPECT_EQ((*m)->tensors().size(), 2u);
}

TEST(FusedExperts, InconsistenciesAreRefusedByName) {
  std::mt19937 rng(3);
  const Mx gu = random_mx(2 * I, H, rng), dn = random_mx(H, I, rng);
  std::vector<float> fgu(E * H * 2 * I, 1.0f), fdn(E * I * H, 1.0f), bias(E * 2 * I, 0.0f);
  struct Case {
    const char* what;
    std::function<void(SafetensorsWriter*)> build;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"no down_proj", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(fgu)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_bias", DType::kF32, {E, 2 * I}, f32_bytes(bias)).is_ok());
       }, "down_proj"},
      {"down_proj of another width", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(fgu)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_bias", DType::kF32, {E, 2 * I}, f32_bytes(bias)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "down_proj", DType::kF32, {E, H, I}, f32_bytes(fdn)).is_ok());
       }, "'" + kExperts + "down_proj' has shape [3, 64, 32], expected [3, 32, 64]"},
      {"odd gate_up width", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, 2 * I, H - 1}, f32_bytes(std::vector<float>(E * 2 * I * (H - 1)))).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_bias", DType::kF32, {E, 2 * I}, f32_bytes(bias)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "down_proj", DType::kF32, {E, I, H}, f32_bytes(fdn)).is_ok());
       }, "2 x intermediate"},
      {"MXFP4 without scales", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 32, 16}, gu.blocks).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "gate_up_proj_scales"},
      {"MXFP4 scales of another shape", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 32, 16}, gu.blocks).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_scales", DType::kU8, {E, 2 * I * (H / 32)}, gu.scales).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "'" + kExperts + "gate_up_proj_scales' has shape [3, 128]"},
      {"MXFP4 blocks not of 16 bytes", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 16, 8}, gu.blocks).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_scales", DType::kU8, {E, 2 * I, H / 32}, gu.scales).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "expected [experts, rows, cols / 32, 16]"},
      {"MXFP4 down_proj of another hidden size", [&](SafetensorsWriter* w) {
         add_mx(w, kExperts + "gate_up_proj", gu);
         const Mx other = random_mx(H / 2, I, rng);
         add_mx(w, kExperts + "down_proj", other);
       }, "down_proj_blocks' has shape [3, 32, 1, 16], expected [3, 64, 1, 16]"},
      {"NaN scale", [&](SafetensorsWriter* w) {
         Mx bad = gu;
         bad.scales[5] = 255;
         add_mx(w, kExperts + "gate_up_proj", bad);
         add_mx(w, kExperts + "down_proj", dn);
       }, "E8M0 NaN scale 255"},
      {"overflowing scale", [&](SafetensorsWriter* w) {
         Mx bad = gu;
         std::fill(bad.blocks.begin(), bad.blocks.end(), uint8_t{0x77});
         bad.scales[0] = 254;
         add_mx(w, kExperts + "gate_up_proj", bad);
         add_mx(w, kExperts + "down_proj", dn);
       }, "scale 254 overflows"},
      {"fused and per-expert both", [&](SafetensorsWriter* w) {
         add_mx(w, kExperts + "gate_up_proj", gu);
         add_mx(w, kExperts + "down_proj", dn);
         ASSERT_TRUE(w->add(kExperts + "1.up_proj.weight", DType::kF32, {I, H}, f32_bytes(std::vector<float>(I * H))).is_ok());
       }, "both fused experts"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    SafetensorsWriter w;
    c.build(&w);
    ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok()) << c.what;
    auto m = SafetensorsModel::open(dir.path());
    ASSERT_FALSE(m.is_ok()) << c.what;
    EXPECT_NE(m.status().message().find(c.message), std::string::npos) << c.what << ": " << m.status().to_string();
  }
}

}  // namespace
}  // namespace submoe::io
