// Synthetic checkpoints: the tensor layout against checkpoints written by
// transformers itself (the HF fixtures), config.json round trips, loading and
// running every architecture, determinism, sharding and argument errors.
#include "submoe/model/synth_checkpoint.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/io/param_stats.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"
#include "temp_dir.h"

namespace submoe::model {
namespace {

namespace fs = std::filesystem;
using submoe::testing::TempDir;
const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";
const io::Architecture kArchs[] = {io::Architecture::kMixtral, io::Architecture::kQwen2Moe, io::Architecture::kQwen3Moe,
                                   io::Architecture::kOlmoe};


SynthSpec tiny_spec(io::Architecture arch) {
  SynthSpec s;
  s.architecture = arch;
  s.layers = 2;
  s.experts = 6;
  s.top_k = 2;
  s.hidden = 64;
  s.ffn = 24;
  s.heads = 4;
  s.kv_heads = 2;
  s.vocab = 97;
  s.shared_ffn = 40;
  s.dense_ffn = 48;
  s.seed = 7;
  return s;
}

SynthWriteOptions quick_options() {
  SynthWriteOptions o;
  o.fsync = false;
  return o;
}

std::string slurp(const std::string& path) {
  auto r = io::read_file_to_string(path);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : std::string();
}

TEST(SynthCheckpoint, InverseNormalCdfMatchesErfc) {
  // Independent reference: Phi(x) = erfc(-x / sqrt 2) / 2 must give back p.
  std::vector<double> ps;
  for (int e = -300; e <= -1; ++e) ps.push_back(std::pow(10.0, e / 20.0));
  for (int i = 1; i < 1000; ++i) ps.push_back(i / 1000.0);
  for (double p : {0.02424, 0.02425, 0.02426, 0.97574, 0.97575, 0.97576}) ps.push_back(p);
  for (double p : ps) {
    for (double q : {p, 1.0 - p}) {
      if (!(q > 0.0 && q < 1.0)) continue;
      const double x = inverse_normal_cdf(q);
      ASSERT_TRUE(std::isfinite(x)) << q;
      const double phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
      const double tail = std::min(q, 1.0 - q);
      // Acklam: |relative error of x| < 1.15e-9, i.e. |dp| ~ pdf(x) |x| 1.2e-9,
      // which is < 1e-7 of the tail mass down to p = 1e-15.
      EXPECT_LE(std::abs(phi - q), 1e-7 * tail + 1e-16) << "p " << q << " x " << x;
    }
  }
  EXPECT_EQ(inverse_normal_cdf(0.5), 0.0);
  EXPECT_TRUE(std::isinf(inverse_normal_cdf(0.0)) && inverse_normal_cdf(0.0) < 0);
  EXPECT_TRUE(std::isinf(inverse_normal_cdf(1.0)) && inverse_normal_cdf(1.0) > 0);
}

std::vector<uint8_t> fill_all(uint64_t seed, const CheckpointTensor& t, io::DType dtype, ThreadPool* pool) {
  std::vector<uint8_t> out(static_cast<size_t>(t.numel()) * io::dtype_size(dtype));
  EXPECT_TRUE(fill_synth_tensor(seed, t, dtype, 0, out, pool).is_ok());
  return out;
}

TEST(SynthCheckpoint, FillDependsOnlyOnSeedNameAndIndex) {
  const CheckpointTensor t{"model.layers.3.mlp.experts.5.up_proj.weight", {37, 1001}, SynthInit::kNormal};
  ThreadPool pool(3);
  for (io::DType dtype : {io::DType::kBF16, io::DType::kF32}) {
    const size_t esize = io::dtype_size(dtype);
    const std::vector<uint8_t> whole = fill_all(11, t, dtype, &pool);
    // Random chunk boundaries, one thread: the same bytes.
    std::vector<uint8_t> pieces(whole.size());
    std::mt19937 rng(5);
    size_t at = 0;
    while (at < whole.size()) {
      const size_t n = std::min(whole.size() - at, esize * (1 + rng() % 5000));
      ASSERT_TRUE(
          fill_synth_tensor(11, t, dtype, at / esize, std::span<uint8_t>(pieces.data() + at, n), nullptr).is_ok());
      at += n;
    }
    EXPECT_EQ(pieces, whole);
    EXPECT_NE(fill_all(12, t, dtype, nullptr), whole);
    CheckpointTensor other = t;
    other.name = "model.layers.3.mlp.experts.5.gate_proj.weight";
    EXPECT_NE(fill_all(11, other, dtype, nullptr), whole);
  }
  std::vector<uint8_t> small(6);
  EXPECT_EQ(fill_synth_tensor(1, t, io::DType::kF16, 0, small, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fill_synth_tensor(1, t, io::DType::kF32, 0, std::span<uint8_t>(small.data(), 5), nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(fill_synth_tensor(1, t, io::DType::kBF16, 37 * 1001 - 2, small, nullptr).code(),
            ErrorCode::kInvalidArgument);
}

struct Moments {
  double mean = 0, stddev = 0, kurtosis = 0, beyond3 = 0;
};
Moments moments_bf16(const std::vector<uint8_t>& bytes) {
  const size_t n = bytes.size() / 2;
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = bf16_to_float(bf16_t{static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8))});
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= n;
  double m2 = 0, m4 = 0;
  for (double x : v) {
    const double d = x - m.mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= n;
  m4 /= n;
  m.stddev = std::sqrt(m2);
  m.kurtosis = m4 / (m2 * m2);
  for (double x : v) m.beyond3 += std::abs(x - m.mean) > 3 * m.stddev;
  m.beyond3 /= n;
  return m;
}

TEST(SynthCheckpoint, ValuesFollowTheDocumentedInit) {
  const size_t n = 512 * 1024;
  const Moments lin = moments_bf16(fill_all(3, {"w", {512, 1024}, SynthInit::kNormal}, io::DType::kBF16, nullptr));
  EXPECT_LT(std::abs(lin.mean), 4 * 0.02 / std::sqrt(double(n)));
  EXPECT_NEAR(lin.stddev, 0.02, 0.02 * 0.005);
  EXPECT_NEAR(lin.kurtosis, 3.0, 0.05);  // Gaussian, not a sum of a few uniforms
  EXPECT_NEAR(lin.beyond3, 0.0027, 0.0004);
  const Moments emb = moments_bf16(fill_all(3, {"e", {256, 512}, SynthInit::kEmbedding}, io::DType::kBF16, nullptr));
  EXPECT_NEAR(emb.stddev, 1.0, 0.01);
  // Router of hidden 64: std 1/sqrt(64); of hidden 4096: the floor 0.02.
  const Moments r64 = moments_bf16(fill_all(3, {"r", {1024, 64}, SynthInit::kRouter}, io::DType::kBF16, nullptr));
  EXPECT_NEAR(r64.stddev, 0.125, 0.125 * 0.01);
  const Moments r4k = moments_bf16(fill_all(3, {"r", {16, 4096}, SynthInit::kRouter}, io::DType::kBF16, nullptr));
  EXPECT_NEAR(r4k.stddev, 0.02, 0.02 * 0.02);
  for (auto [init, bits] : {std::pair{SynthInit::kOnes, uint16_t{0x3F80}}, std::pair{SynthInit::kZeros, uint16_t{0}}}) {
    const auto b = fill_all(3, {"n", {77}, init}, io::DType::kBF16, nullptr);
    for (size_t i = 0; i < 77; ++i) ASSERT_EQ(b[2 * i] | (b[2 * i + 1] << 8), bits);
  }
  const auto f = fill_all(3, {"w", {3, 5}, SynthInit::kNormal}, io::DType::kF32, nullptr);
  const auto h = fill_all(3, {"w", {3, 5}, SynthInit::kNormal}, io::DType::kBF16, nullptr);
  for (size_t i = 0; i < 15; ++i) {  // bf16 is the f32 value rounded
    float x;
    std::memcpy(&x, &f[4 * i], 4);
    EXPECT_EQ(float_to_bf16(x).bits, h[2 * i] | (h[2 * i + 1] << 8));
  }
}

// The layout of each fixture's config equals the tensors transformers wrote.
TEST(SynthCheckpoint, LayoutMatchesCheckpointsWrittenByTransformers) {
  for (const char* fixture :
       {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "deepseek_v3_plain_q", "gpt_oss"}) {
    SCOPED_TRACE(fixture);
    auto config = io::load_hf_config(kFixtures + fixture);
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    // The file as written (SafetensorsModel would split GPT-OSS's fused experts).
    auto st = io::SafetensorsFile::open(kFixtures + fixture + "/model.safetensors");
    ASSERT_TRUE(st.is_ok()) << st.status().to_string();
    std::map<std::string, std::vector<int64_t>> stored, ours;
    for (const io::TensorView& t : (*st)->tensors()) stored[t.name] = t.shape;
    const auto layout = checkpoint_layout(*config);
    for (const CheckpointTensor& t : layout) EXPECT_TRUE(ours.emplace(t.name, t.shape).second) << t.name;
    EXPECT_EQ(ours, stored);
    const auto golden = nlohmann::json::parse(slurp(kFixtures + fixture + "/golden.json"));
    // transformers counts parameters, not buffers: DeepSeek-V3's
    // e_score_correction_bias is a buffer that checkpoints store.
    int64_t buffers = 0;
    for (const CheckpointTensor& t : layout)
      if (t.name.ends_with(".e_score_correction_bias")) buffers += t.numel();
    EXPECT_EQ(layout_parameters(layout) - buffers, golden["num_parameters"].get<int64_t>());
  }
}

// Loads the 8-expert synth checkpoint at `dir`, runs 60 tokens of a vocabulary
// of 97: finite logits, `moe_layers` layers routed, every expert chosen at
// least twice in each.
void expect_finite_logits_and_every_expert_routed(const std::string& dir, size_t moe_layers, ThreadPool& pool) {
  auto m = MoeModel::load(dir);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  Session session(**m, &pool);
  std::map<int, std::vector<int>> chosen;
  session.set_routing_observer([&](int layer, size_t, const Routing& routing) {
    auto& n = chosen[layer];
    n.resize(8);
    for (int32_t e : routing.experts) n[static_cast<size_t>(e)]++;
  });
  std::vector<int32_t> ids(60);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 5) % 97);
  std::vector<float> logits;
  ASSERT_TRUE(session.forward(ids, LogitsMode::kAll, &logits).is_ok());
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  ASSERT_EQ(chosen.size(), moe_layers);
  for (const auto& [layer, n] : chosen)
    for (int k : n) EXPECT_GE(k, 2) << "layer " << layer << ": every expert is chosen";
}

TEST(SynthCheckpoint, ConfigJsonUsesEachArchitecturesFieldsAndRoundTrips) {
  for (io::Architecture arch : kArchs) {
    SCOPED_TRACE(std::string(io::architecture_model_type(arch)));
    SynthSpec spec = tiny_spec(arch);
    if (arch == io::Architecture::kQwen2Moe || arch == io::Architecture::kQwen3Moe) spec.mlp_only_layers = {1};
    if (arch == io::Architecture::kQwen3Moe) spec.head_dim = 24;  // != hidden / heads
    auto c = resolve_synth_config(spec);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    const std::string text = synth_config_json(*c);
    const auto j = nlohmann::json::parse(text);
    auto back = io::parse_hf_config(text);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    const io::MoeModelConfig& b = *back;
    EXPECT_EQ(b.architecture, arch);
    EXPECT_EQ(b.vocab_size, 97);
    EXPECT_EQ(b.hidden_size, 64);
    EXPECT_EQ(b.num_hidden_layers, 2);
    EXPECT_EQ(b.num_attention_heads, 4);
    EXPECT_EQ(b.num_key_value_heads, 2);
    EXPECT_EQ(b.head_dim, arch == io::Architecture::kQwen3Moe ? 24 : 16);
    EXPECT_EQ(b.num_experts, 6);
    EXPECT_EQ(b.num_experts_per_tok, 2);
    EXPECT_EQ(b.moe_intermediate_size, 24);
    EXPECT_EQ(b.shared_expert_intermediate_size, arch == io::Architecture::kQwen2Moe ? 40 : 0);
    EXPECT_EQ(b.norm_topk_prob, c->norm_topk_prob);
    EXPECT_EQ(b.qkv_bias, arch == io::Architecture::kQwen2Moe);
    EXPECT_FALSE(b.o_proj_bias);
    EXPECT_EQ(b.qk_norm, c->qk_norm);
    EXPECT_EQ(b.mlp_only_layers, c->mlp_only_layers);
    EXPECT_EQ(b.rms_norm_eps, c->rms_norm_eps);
    EXPECT_EQ(b.rope_theta, c->rope_theta);
    EXPECT_EQ(b.rope_scaling.type, io::RopeType::kDefault);
    EXPECT_FALSE(b.sliding_window_for_layer(0) || b.sliding_window_for_layer(1));
    EXPECT_FALSE(b.tie_word_embeddings);
    EXPECT_EQ(b.dtype, "bfloat16");
    EXPECT_TRUE(io::check_forward_supported(b).is_ok());
    EXPECT_EQ(j["model_type"], std::string(io::architecture_model_type(arch)));
    switch (arch) {
      case io::Architecture::kMixtral:
        EXPECT_EQ(j["architectures"][0], "MixtralForCausalLM");
        EXPECT_EQ(j["num_local_experts"], 6);
        EXPECT_EQ(j["intermediate_size"], 24);
        EXPECT_FALSE(j.contains("num_experts") || j.contains("moe_intermediate_size"));
        break;
      case io::Architecture::kQwen2Moe:
      case io::Architecture::kQwen3Moe:
        EXPECT_EQ(j["architectures"][0],
                  arch == io::Architecture::kQwen2Moe ? "Qwen2MoeForCausalLM" : "Qwen3MoeForCausalLM");
        EXPECT_EQ(j["num_experts"], 6);
        EXPECT_EQ(j["moe_intermediate_size"], 24);
        EXPECT_EQ(j["intermediate_size"], 48);
        EXPECT_EQ(j["decoder_sparse_step"], 1);
        EXPECT_EQ(j["mlp_only_layers"], nlohmann::json::array({1}));
        EXPECT_EQ(j.contains("shared_expert_intermediate_size"), arch == io::Architecture::kQwen2Moe);
        EXPECT_FALSE(b.is_moe_layer(1));
        EXPECT_TRUE(b.is_moe_layer(0));
        break;
      case io::Architecture::kOlmoe:
        EXPECT_EQ(j["architectures"][0], "OlmoeForCausalLM");
        EXPECT_EQ(j["num_experts"], 6);
        EXPECT_EQ(j["intermediate_size"], 24);
        EXPECT_TRUE(j["clip_qkv"].is_null());
        break;
      case io::Architecture::kDeepseekV2:
      case io::Architecture::kDeepseekV3:
        ADD_FAILURE() << "multi-head latent attention is checked by LatentAttentionCheckpointsRoundTripLoadAndRoute";
        break;
      case io::Architecture::kGptOss:
        ADD_FAILURE() << "GPT-OSS is checked by GptOssCheckpointsRoundTripLoadAndRoute";
        break;
    }
  }
}

// DeepSeek-V2/V3 synthetic checkpoints: V3's MLA proportions per head, one
// dense first layer, shared experts, expert groups; config.json parses back to
// the same shape, the layout is the one transformers writes (checked against
// the fixtures above), and the model loads and routes over every expert.
TEST(SynthCheckpoint, LatentAttentionCheckpointsRoundTripLoadAndRoute) {
  TempDir tmp;
  ThreadPool pool(2);
  for (io::Architecture arch : {io::Architecture::kDeepseekV2, io::Architecture::kDeepseekV3}) {
    SCOPED_TRACE(std::string(io::architecture_model_type(arch)));
    SynthSpec spec = tiny_spec(arch);
    spec.layers = 3;
    spec.experts = 8;
    spec.shared_ffn = 48;  // two shared experts of ffn 24
    auto c = resolve_synth_config(spec);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    auto back = io::parse_hf_config(synth_config_json(*c));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    const io::MoeModelConfig& b = *back;
    EXPECT_EQ(b.attention, io::AttentionKind::kMla);
    EXPECT_EQ(b.qk_nope_head_dim, 16);  // hidden 64 / 4 heads
    EXPECT_EQ(b.v_head_dim, 16);
    EXPECT_EQ(b.qk_rope_head_dim, 8);
    EXPECT_EQ(b.head_dim, 8);
    EXPECT_EQ(b.kv_lora_rank, 64);
    EXPECT_EQ(b.q_lora_rank, std::optional<int64_t>(192));
    EXPECT_EQ(b.num_key_value_heads, 4);
    EXPECT_EQ(b.first_k_dense_replace, 1);
    EXPECT_FALSE(b.is_moe_layer(0));
    EXPECT_TRUE(b.is_moe_layer(1) && b.is_moe_layer(2));
    EXPECT_EQ(b.num_shared_experts, 2);
    EXPECT_EQ(b.shared_expert_intermediate_size, 48);
    EXPECT_EQ(b.n_group, 4);
    EXPECT_EQ(b.topk_group, 2);
    EXPECT_EQ(b.router_selection, c->router_selection);
    EXPECT_EQ(b.routed_scaling_factor, arch == io::Architecture::kDeepseekV3 ? 2.5 : 1.0);
    EXPECT_TRUE(io::check_forward_supported(b).is_ok());

    auto r = write_synth_checkpoint(spec, tmp.file(std::string(io::architecture_model_type(arch))), quick_options());
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    expect_finite_logits_and_every_expert_routed(tmp.file(std::string(io::architecture_model_type(arch))), 2, pool);
  }
}

// GPT-OSS synthetic checkpoints: the hub layout (fused transposed experts with
// biases, biased router, sinks; checked against the fixture transformers wrote
// above), the hub config's rules (alternating sliding layers, YaRN 32 x 4096,
// clamped SwiGLU), and the model loads and routes over every expert.
TEST(SynthCheckpoint, GptOssCheckpointsRoundTripLoadAndRoute) {
  TempDir tmp;
  ThreadPool pool(2);
  SynthSpec spec = tiny_spec(io::Architecture::kGptOss);
  spec.layers = 3;
  spec.experts = 8;
  auto c = resolve_synth_config(spec);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  auto back = io::parse_hf_config(synth_config_json(*c));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  const io::MoeModelConfig& b = *back;
  EXPECT_EQ(b.architecture, io::Architecture::kGptOss);
  EXPECT_TRUE(b.attention_sinks && b.router_linear_bias && b.expert_bias && b.qkv_bias && b.o_proj_bias);
  EXPECT_EQ(b.router_selection, io::RouterSelection::kTopKSoftmax);
  EXPECT_EQ(b.expert_activation, io::ExpertActivation::kClampedSwiGlu);
  EXPECT_EQ(b.sliding_window_for_layer(0), std::optional<int64_t>(128));
  EXPECT_EQ(b.sliding_window_for_layer(1), std::nullopt);
  EXPECT_EQ(b.sliding_window_for_layer(2), std::optional<int64_t>(128));
  EXPECT_EQ(b.rope_scaling.type, io::RopeType::kYarn);
  EXPECT_EQ(b.rope_scaling.factor, 32.0);
  EXPECT_FALSE(b.rope_scaling.truncate);
  EXPECT_EQ(b.max_position_embeddings, 131072);
  std::set<std::string> names;
  for (const CheckpointTensor& t : checkpoint_layout(b)) names.insert(t.name);
  for (const char* want : {"model.layers.1.self_attn.sinks", "model.layers.1.mlp.router.bias",
                           "model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj_bias"})
    EXPECT_TRUE(names.count(want)) << want;

  auto r = write_synth_checkpoint(spec, tmp.file("gpt_oss"), quick_options());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_finite_logits_and_every_expert_routed(tmp.file("gpt_oss"), 3, pool);
}

// hidden / heads not a multiple of 4 leaves an odd RoPE part: refused.
TEST(SynthCheckpoint, LatentAttentionNeedsARopePartThatIsEven) {
  SynthSpec spec = tiny_spec(io::Architecture::kDeepseekV3);
  spec.hidden = 72;  // 18 per head, RoPE part 9
  auto c = resolve_synth_config(spec);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("multiple of 4"), std::string::npos) << c.status().message();
}

// Total parameters by the formula of doc §1.5 and §2-§5, written out per architecture.
int64_t formula_parameters(const io::MoeModelConfig& c) {
  const int64_t V = c.vocab_size, H = c.hidden_size, D = c.head_dim, q = c.num_attention_heads * D,
                kv = c.num_key_value_heads * D, E = c.num_experts, I = c.moe_intermediate_size;
  int64_t per_layer_attn = H * q + 2 * H * kv + q * H + 2 * H;                      // q, k, v, o, two norms
  if (c.architecture == io::Architecture::kQwen2Moe) per_layer_attn += q + 2 * kv;  // q/k/v biases
  if (c.architecture == io::Architecture::kQwen3Moe) per_layer_attn += 2 * D;       // per-head q/k norms
  if (c.architecture == io::Architecture::kOlmoe) per_layer_attn += q + kv;         // whole-projection norms
  int64_t total = 2 * V * H + H;                                                    // embedding, lm_head, final norm
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    total += per_layer_attn;
    if (!c.is_moe_layer(l)) {
      total += 3 * H * c.intermediate_size;
      continue;
    }
    total += E * H + E * 3 * H * I;
    if (c.architecture == io::Architecture::kQwen2Moe) total += 3 * H * c.shared_expert_intermediate_size + H;
  }
  return total;
}

TEST(SynthCheckpoint, EveryArchitectureLoadsRunsAndRoutesSpread) {
  TempDir tmp;
  ThreadPool pool(2);
  for (io::Architecture arch : kArchs) {
    for (io::DType dtype : {io::DType::kBF16, io::DType::kF32}) {
      const std::string name =
          std::string(io::architecture_model_type(arch)) + (dtype == io::DType::kF32 ? "-f32" : "");
      SCOPED_TRACE(name);
      SynthSpec spec = tiny_spec(arch);
      spec.dtype = dtype;
      if (arch == io::Architecture::kQwen2Moe) spec.mlp_only_layers = {0};
      auto r = write_synth_checkpoint(spec, tmp.file(name), quick_options());
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_EQ(r->parameters, formula_parameters(r->config));
      EXPECT_EQ(r->tensor_bytes, uint64_t(r->parameters) * io::dtype_size(dtype));
      EXPECT_EQ(r->files, (std::vector<std::string>{"model.safetensors", "config.json"}));
      EXPECT_EQ(r->bytes_written,
                fs::file_size(tmp.file(name) + "/model.safetensors") + fs::file_size(tmp.file(name) + "/config.json"));

      auto st = io::SafetensorsModel::open(tmp.file(name));
      ASSERT_TRUE(st.is_ok()) << st.status().to_string();
      const auto counts = io::count_parameters((*st)->tensors(), arch, r->config.num_experts_per_tok);
      EXPECT_EQ(counts.total, r->parameters);
      for (const io::TensorView* t : (*st)->tensors()) ASSERT_EQ(t->dtype, dtype) << t->name;
      EXPECT_EQ((*st)->files()[0]->metadata().at("format"), "pt");

      auto m = MoeModel::load(tmp.file(name));
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      Session session(**m, &pool);
      std::map<int, std::vector<int>> chosen;  // layer -> how often each expert was picked
      std::vector<float> top1;
      session.set_routing_observer([&](int layer, size_t, const Routing& routing) {
        auto& counts_l = chosen[layer];
        counts_l.resize(6);
        for (size_t i = 0; i < routing.experts.size(); ++i) counts_l[static_cast<size_t>(routing.experts[i])]++;
        for (size_t t = 0; t < routing.num_tokens; ++t) top1.push_back(routing.weights[t * routing.k]);
      });
      std::vector<int32_t> ids(60);
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 5) % 97);
      std::vector<float> logits;
      ASSERT_TRUE(session.forward(ids, LogitsMode::kAll, &logits).is_ok());
      ASSERT_EQ(logits.size(), ids.size() * 97);
      for (float x : logits) ASSERT_TRUE(std::isfinite(x));
      EXPECT_EQ(chosen.size(), arch == io::Architecture::kQwen2Moe ? 1u : 2u);
      for (const auto& [layer, counts_l] : chosen) {
        // 60 tokens x top-2 = 120 picks over 6 experts: every expert used, none dominant.
        for (int n : counts_l) {
          EXPECT_GE(n, 4) << "layer " << layer;
          EXPECT_LE(n, 60) << "layer " << layer;
        }
      }
      // Decisive routing: top-1 weights vary (near-uniform routing would pin them at 1/2 or 1/6).
      const auto [lo, hi] = std::minmax_element(top1.begin(), top1.end());
      EXPECT_GT(*hi - *lo, 0.1f);
    }
  }
}

TEST(SynthCheckpoint, SameSeedSameBytesWhateverTheThreads) {
  TempDir tmp;
  ThreadPool pool(3);
  SynthSpec spec = tiny_spec(io::Architecture::kQwen2Moe);
  spec.vocab = 20000;
  spec.hidden = 128;  // embedding F32 [20000, 128] = 10.2 MB spans two write chunks
  spec.dtype = io::DType::kF32;
  spec.layers = 1;
  SynthWriteOptions one = quick_options(), many = quick_options();
  many.pool = &pool;
  uint64_t last_done = 0, calls = 0;
  many.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GT(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
    ++calls;
  };
  auto a = write_synth_checkpoint(spec, tmp.file("a"), one);
  auto b = write_synth_checkpoint(spec, tmp.file("b"), many);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(last_done, b->tensor_bytes);
  EXPECT_GT(calls, 10u);
  const std::string bytes_a = slurp(tmp.file("a") + "/model.safetensors");
  EXPECT_EQ(bytes_a, slurp(tmp.file("b") + "/model.safetensors"));
  EXPECT_EQ(slurp(tmp.file("a") + "/config.json"), slurp(tmp.file("b") + "/config.json"));
  // The chunked embedding equals one whole-tensor fill.
  auto st = io::SafetensorsModel::open(tmp.file("a"));
  ASSERT_TRUE(st.is_ok());
  const io::TensorView* embed = (*st)->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  ASSERT_GT(embed->nbytes, io::SafetensorsWriter::kFillChunkBytes);
  const auto expect = fill_all(spec.seed, {embed->name, embed->shape, SynthInit::kEmbedding}, io::DType::kF32, &pool);
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), embed->data));

  spec.seed += 1;
  auto c = write_synth_checkpoint(spec, tmp.file("c"), one);
  ASSERT_TRUE(c.is_ok());
  const std::string bytes_c = slurp(tmp.file("c") + "/model.safetensors");
  ASSERT_EQ(bytes_c.size(), bytes_a.size());
  EXPECT_NE(bytes_c, bytes_a);
}

TEST(SynthCheckpoint, ShardsHaveAValidIndexAndTheSameWeights) {
  TempDir tmp;
  const SynthSpec spec = tiny_spec(io::Architecture::kMixtral);
  auto whole = write_synth_checkpoint(spec, tmp.file("whole"), quick_options());
  ASSERT_TRUE(whole.is_ok());
  SynthWriteOptions o = quick_options();
  o.shard_bytes = 40000;  // experts are 3 KB each; the embedding (12 KB) and lm_head fit too
  auto sharded = write_synth_checkpoint(spec, tmp.file("sharded"), o);
  ASSERT_TRUE(sharded.is_ok()) << sharded.status().to_string();
  const auto& files = sharded->files;
  ASSERT_GT(files.size(), 4u);
  const auto index = nlohmann::json::parse(slurp(tmp.file("sharded") + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), sharded->tensor_bytes);
  const auto layout = checkpoint_layout(sharded->config);
  ASSERT_EQ(index["weight_map"].size(), layout.size());
  std::set<std::string> shard_files;
  for (const CheckpointTensor& t : layout) shard_files.insert(index["weight_map"][t.name].get<std::string>());
  const size_t n = shard_files.size();
  ASSERT_EQ(n + 2, files.size());  // + index + config
  for (size_t i = 0; i < n; ++i) {
    char expect[64];
    std::snprintf(expect, sizeof expect, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    ASSERT_TRUE(shard_files.count(expect)) << expect;
    auto f = io::SafetensorsFile::open(tmp.file("sharded") + "/" + expect);
    ASSERT_TRUE(f.is_ok());
    uint64_t data = 0;
    for (const auto& t : (*f)->tensors()) data += t.nbytes;
    EXPECT_TRUE(data <= o.shard_bytes || (*f)->tensors().size() == 1) << expect;
  }
  // Same tensors, same bytes, whatever the sharding.
  auto a = io::SafetensorsModel::open(tmp.file("whole"));
  auto b = io::SafetensorsModel::open(tmp.file("sharded"));
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const io::TensorView* t : (*a)->tensors()) {
    const io::TensorView* u = (*b)->find(t->name);
    ASSERT_NE(u, nullptr) << t->name;
    ASSERT_EQ(t->shape, u->shape);
    ASSERT_TRUE(std::equal(t->data, t->data + t->nbytes, u->data)) << t->name;
  }
  auto m = MoeModel::load(tmp.file("sharded"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
}

TEST(SynthCheckpoint, TokenizerFilesAreCopiedAndSetVocabAndSpecialIds) {
  TempDir tmp;
  const std::string from = kFixtures + "mixtral";
  auto tok = io::Tokenizer::load(from);
  ASSERT_TRUE(tok.is_ok());
  SynthSpec spec = tiny_spec(io::Architecture::kMixtral);
  spec.vocab = 0;  // = the tokenizer's
  SynthWriteOptions o = quick_options();
  o.tokenizer_from = from;
  auto r = write_synth_checkpoint(spec, tmp.file("m"), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->config.vocab_size, tok->vocab_size());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_EQ(slurp(tmp.file("m") + "/" + f), slurp(from + "/" + f)) << f;
  auto cfg = io::load_hf_config(tmp.file("m"));
  ASSERT_TRUE(cfg.is_ok());
  EXPECT_EQ(cfg->bos_token_id, std::optional<int64_t>(1));
  EXPECT_EQ(cfg->eos_token_ids, std::vector<int64_t>{2});
  const auto gen = nlohmann::json::parse(slurp(tmp.file("m") + "/generation_config.json"));
  EXPECT_EQ(gen["bos_token_id"], 1);
  EXPECT_EQ(gen["eos_token_id"], 2);
  auto m = MoeModel::load(tmp.file("m"));
  ASSERT_TRUE(m.is_ok());
  Session session(**m, nullptr);
  const std::vector<int32_t> ids = tok->encode("The quick brown fox jumps.");
  std::vector<float> logits;
  ASSERT_TRUE(session.forward(ids, LogitsMode::kLast, &logits).is_ok());
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  // Without a tokenizer the special ids are null.
  auto bare = resolve_synth_config(tiny_spec(io::Architecture::kMixtral));
  ASSERT_TRUE(bare.is_ok());
  const auto j = nlohmann::json::parse(synth_config_json(*bare));
  EXPECT_TRUE(j["bos_token_id"].is_null() && j["eos_token_id"].is_null());
  EXPECT_EQ(resolve_synth_config([] {
              auto s = tiny_spec(io::Architecture::kOlmoe);
              s.vocab = 0;
              return s;
            }())
                ->vocab_size,
            32000);
}

TEST(SynthCheckpoint, BadArgumentsAreClearErrors) {
  auto error_of = [](auto mutate) {
    SynthSpec s = tiny_spec(io::Architecture::kQwen3Moe);
    mutate(s);
    auto r = resolve_synth_config(s);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  auto has = [](const std::string& msg, const char* what) { return msg.find(what) != std::string::npos; };
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.layers = 0; }), "--layers must be positive"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.experts = -1; }), "--experts"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.hidden = 0; }), "--hidden"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.ffn = 0; }), "--ffn"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.top_k = 7; }), "--top-k must be in [1, --experts=6]"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.top_k = 0; }), "--top-k"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.heads = 5; }), "does not divide --hidden"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.kv_heads = 3; }), "--kv-heads 3 does not divide"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.head_dim = 15; }), "even"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.mlp_only_layers = {0, 1}; }), "no MoE layer"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.mlp_only_layers = {2}; }), "outside [0, 2)"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.dtype = io::DType::kF16; }), "--dtype"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.vocab = -3; }), "--vocab"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) {
                    s.architecture = io::Architecture::kMixtral;
                    s.mlp_only_layers = {1};
                  }),
                  "qwen2_moe and qwen3_moe only"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) {
                    s.architecture = io::Architecture::kOlmoe;
                    s.head_dim = 32;
                  }),
                  "always uses hidden / heads"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) { s.ffn = int64_t{1} << 40; }), "--ffn must be at most 2147483647"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) {
                    s.hidden = int64_t{1} << 30;
                    s.heads = 1 << 10;
                  }),
                  "limit is 1e15"));
  EXPECT_TRUE(has(error_of([](SynthSpec& s) {
                    s.layers = 100000;
                    s.experts = 60000;
                  }),
                  "limit is 1e7"));
  EXPECT_EQ(error_of([](SynthSpec& s) { s.head_dim = 40; }), "ok");  // qwen3 may set it
  EXPECT_EQ(error_of([](SynthSpec& s) {
              s.heads = 0;
              s.kv_heads = 0;
            }),
            "ok");  // defaults: 1 head of 64

  TempDir tmp;
  SynthWriteOptions o = quick_options();
  o.tokenizer_from = kFixtures + "qwen3_moe";
  SynthSpec s = tiny_spec(io::Architecture::kQwen3Moe);
  s.vocab = 100;  // the tokenizer has 343 ids
  auto r = write_synth_checkpoint(s, tmp.file("v"), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has(r.status().message(), "--vocab 100 is smaller than the tokenizer's 343 ids"));
  EXPECT_FALSE(fs::exists(tmp.file("v") + "/config.json"));
  o.tokenizer_from = tmp.file("nowhere");
  EXPECT_TRUE(has(write_synth_checkpoint(s, tmp.file("v"), o).status().message(), "--tokenizer-from"));
  o.tokenizer_from.clear();
  o.shard_bytes = 0;
  EXPECT_EQ(write_synth_checkpoint(s, tmp.file("v"), o).status().code(), ErrorCode::kInvalidArgument);
}

TEST(SynthCheckpoint, ExistingCheckpointNeedsOverwriteWhichRemovesStaleFiles) {
  TempDir tmp;
  SynthSpec spec = tiny_spec(io::Architecture::kOlmoe);
  spec.vocab = 0;
  SynthWriteOptions sharded = quick_options();
  sharded.shard_bytes = 30000;
  sharded.tokenizer_from = kFixtures + "olmoe";
  auto first = write_synth_checkpoint(spec, tmp.file("d"), sharded);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_TRUE(fs::exists(tmp.file("d") + "/model.safetensors.index.json"));
  std::ofstream(tmp.file("d") + "/notes.txt") << "mine";

  auto again = write_synth_checkpoint(spec, tmp.file("d"), quick_options());
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("already holds a checkpoint"), std::string::npos);

  SynthWriteOptions over = quick_options();
  over.overwrite = true;
  auto r = write_synth_checkpoint(spec, tmp.file("d"), over);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.file("d"))) left.insert(e.path().filename().string());
  // One shard now; old shards, index and tokenizer files are gone, foreign files stay.
  EXPECT_EQ(left, (std::set<std::string>{"config.json", "model.safetensors", "notes.txt"}));
  EXPECT_TRUE(MoeModel::load(tmp.file("d")).is_ok());
}

}  // namespace
}  // namespace submoe::model
