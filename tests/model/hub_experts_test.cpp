// GPT-OSS's hub expert layouts, read one layer at a time by the weight loader
// (src/model/hub_experts.cpp): fused, transposed, interleaved F32 experts and
// MXFP4 blocks become per-expert [out, in] matrices equal to an oracle written
// here from the hub's definitions (x @ gate_up_proj with gate the even
// columns; MXFP4 low nibble first, value E2M1 x 2^(scale - 127)); the fused
// MXFP4 ops compute the product of those matrices; every inconsistency is
// refused naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "model/hub_experts.h"
#include "submoe/io/architecture.h"
#include "submoe/io/hf_config.h"
#include "submoe/model/model_weights.h"
#include "temp_dir.h"

namespace submoe::model {
namespace {

using submoe::testing::TempDir;
using io::DType;
using io::SafetensorsWriter;

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

std::vector<float> values(const io::TensorView& t) {
  auto v = io::to_f32(t);
  EXPECT_TRUE(v.is_ok()) << v.status().to_string();
  return v.is_ok() ? *v : std::vector<float>{};
}

constexpr int64_t E = 3, H = 64, I = 32;
const std::string kExperts = "model.layers.0.mlp.experts.";

io::MoeModelConfig gpt_oss_config(int64_t hidden = H, int64_t inner = I) {
  const std::string json = R"({"model_type": "gpt_oss", "hidden_size": )" + std::to_string(hidden) +
                           R"(, "intermediate_size": )" + std::to_string(inner) +
                           R"(, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
      "head_dim": 64, "vocab_size": 8, "num_local_experts": 3, "num_experts_per_tok": 1})";
  auto c = io::parse_hf_config(json);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

// The layer-0 experts of a file built by `build`, as the loader finds them.
Result<LayerExpertWeights> find(const std::function<void(SafetensorsWriter*)>& build, const io::MoeModelConfig& c,
                                std::unique_ptr<io::SafetensorsModel>* keep) {
  TempDir dir;
  SafetensorsWriter w;
  build(&w);
  SUBMOE_RETURN_IF_ERROR(w.write(dir.file("model.safetensors")));
  SUBMOE_ASSIGN_OR_RETURN(*keep, io::SafetensorsModel::open(dir.file("model.safetensors")));
  return find_layer_expert_weights(**keep, c, io::architecture_descriptor(c.architecture), 0);
}

TEST(HubExperts, DenseFusedTransposedExpertsSplitPerExpert) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n01;
  std::vector<float> gu(E * H * 2 * I), dn(E * I * H);
  for (float& v : gu) v = n01(rng);
  for (float& v : dn) v = n01(rng);
  std::unique_ptr<io::SafetensorsModel> st;
  auto found = find([&](SafetensorsWriter* w) {
    ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(gu)).is_ok());
    ASSERT_TRUE(w->add(kExperts + "down_proj", DType::kF32, {E, I, H}, f32_bytes(dn)).is_ok());
  }, gpt_oss_config(), &st);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(found->tensor_names, (std::vector<std::string>{kExperts + "gate_up_proj", kExperts + "down_proj"}));
  ASSERT_TRUE(found->storage);
  for (int64_t e = 0; e < E; ++e) {
    const ExpertWeightViews& x = found->experts[static_cast<size_t>(e)];
    EXPECT_EQ(x.down.shape, (std::vector<int64_t>{H, I}));
    const auto g = values(x.gate), u = values(x.up), d = values(x.down);
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

TEST(HubExperts, Mxfp4BlocksDequantizeExactlyAndRunFused) {
  std::mt19937 rng(2);
  const Mx gu = random_mx(2 * I, H, rng), dn = random_mx(H, I, rng);
  std::unique_ptr<io::SafetensorsModel> st;
  auto build = [&](SafetensorsWriter* w) {
    add_mx(w, kExperts + "gate_up_proj", gu);
    add_mx(w, kExperts + "down_proj", dn);
  };
  auto found = find(build, gpt_oss_config(), &st);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(found->tensor_names.size(), 4u);
  for (int64_t e = 0; e < E; ++e) {
    const ExpertWeightViews& x = found->experts[static_cast<size_t>(e)];
    EXPECT_EQ(x.gate.dtype, DType::kBF16);
    const auto g = values(x.gate), u = values(x.up), d = values(x.down);
    for (int64_t i = 0; i < I; ++i)
      for (int64_t h = 0; h < H; ++h) {
        ASSERT_EQ(g[i * H + h], gu.at(e, 2 * i, h));
        ASSERT_EQ(u[i * H + h], gu.at(e, 2 * i + 1, h));
        ASSERT_EQ(d[h * I + i], dn.at(e, h, i));
      }
  }
  // The fused ops, straight from the blocks, against a float64 product.
  const detail::FusedMxfp4 t{st->find(kExperts + "gate_up_proj_blocks"), st->find(kExperts + "gate_up_proj_scales"),
                             st->find(kExperts + "down_proj_blocks"), st->find(kExperts + "down_proj_scales")};
  auto ops = detail::fused_mxfp4_ops(t, E, H, I);
  ASSERT_TRUE(ops.is_ok()) << ops.status().to_string();
  std::vector<float> x(H), y(I);
  std::normal_distribution<float> n01;
  for (float& v : x) v = n01(rng);
  for (int64_t e = 0; e < E; ++e) {
    const auto& op = (*ops)[static_cast<size_t>(e)];
    EXPECT_EQ(op.gate->weight_bytes(), static_cast<size_t>(I * H * 17 / 32));
    op.up->forward(x.data(), 1, y.data(), nullptr);
    for (int64_t i = 0; i < I; ++i) {
      double want = 0, mag = 0;
      for (int64_t h = 0; h < H; ++h) {
        want += gu.at(e, 2 * i + 1, h) * x[h];
        mag += std::abs(gu.at(e, 2 * i + 1, h) * x[h]);
      }
      ASSERT_NEAR(y[i], want, 1e-5 * mag) << "expert " << e << " row " << i;
    }
  }
}

TEST(HubExperts, InconsistenciesAreRefusedByName) {
  std::mt19937 rng(3);
  const Mx gu = random_mx(2 * I, H, rng), dn = random_mx(H, I, rng);
  std::vector<float> fgu(E * H * 2 * I, 1.0f), fdn(E * I * H, 1.0f);
  struct Case {
    const char* what;
    std::function<void(SafetensorsWriter*)> build;
    std::string message;
    io::MoeModelConfig config = gpt_oss_config();
  };
  const std::vector<Case> cases = {
      {"no down_proj", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(fgu)).is_ok());
       }, "no tensor '" + kExperts + "down_proj'"},
      {"down_proj of another orientation", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kF32, {E, H, 2 * I}, f32_bytes(fgu)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "down_proj", DType::kF32, {E, H, I}, f32_bytes(fdn)).is_ok());
       }, "'" + kExperts + "down_proj' has shape [3, 64, 32], the config implies [3, 32, 64]"},
      {"integer fused experts", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj", DType::kI32, {E, H, 2 * I}, f32_bytes(fgu)).is_ok());
         ASSERT_TRUE(w->add(kExperts + "down_proj", DType::kI32, {E, I, H}, f32_bytes(fdn)).is_ok());
       }, "dtype I32"},
      {"MXFP4 without scales", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 32, 16}, gu.blocks).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "no tensor '" + kExperts + "gate_up_proj_scales'"},
      {"MXFP4 scales of another shape", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 32, 16}, gu.blocks).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_scales", DType::kU8, {E, 2 * I * (H / 32)}, gu.scales).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "'" + kExperts + "gate_up_proj_scales' has shape [3, 128]"},
      {"MXFP4 blocks not of 16 bytes", [&](SafetensorsWriter* w) {
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_blocks", DType::kU8, {E, 2 * I, H / 16, 8}, gu.blocks).is_ok());
         ASSERT_TRUE(w->add(kExperts + "gate_up_proj_scales", DType::kU8, {E, 2 * I, H / 32}, gu.scales).is_ok());
         add_mx(w, kExperts + "down_proj", dn);
       }, "gate_up_proj_blocks' has shape [3, 64, 4, 8]"},
      {"MXFP4 with widths not of 32", [&](SafetensorsWriter* w) { add_mx(w, kExperts + "gate_up_proj", gu); },
       "intermediate_size 16 are not both multiples of 32", gpt_oss_config(H, 16)},
      {"NaN scale", [&](SafetensorsWriter* w) {
         Mx bad = gu;
         bad.scales[2 * I * 2 + 5] = 255;  // expert 1
         add_mx(w, kExperts + "gate_up_proj", bad);
         add_mx(w, kExperts + "down_proj", dn);
       }, "tensor '" + kExperts + "gate_up_proj_scales', expert 1: mxfp4: scale 255"},
      {"overflowing scale", [&](SafetensorsWriter* w) {
         Mx bad = dn;
         bad.scales[0] = 254;
         add_mx(w, kExperts + "gate_up_proj", gu);
         add_mx(w, kExperts + "down_proj", bad);
       }, "down_proj_scales', expert 0: mxfp4: scale 254 of row 0, block 0 overflows float"},
  };
  for (const Case& c : cases) {
    std::unique_ptr<io::SafetensorsModel> st;
    auto found = find(c.build, c.config, &st);
    ASSERT_FALSE(found.is_ok()) << c.what;
    EXPECT_NE(found.status().message().find(c.message), std::string::npos) << c.what << ": " << found.status().to_string();
  }
}

}  // namespace
}  // namespace submoe::model
