// compress --dense-repr (calib/dense_packing.h, docs/format.md 9.5): dense
// projection classes stored packed. The artifact's layout (fields in place of
// the source tensor, quantization_config.dense_weights, format 3, the ledger's
// classes), the loader building each packed projection from its fields (its
// output against the codec's reference decoder times x in float64, and the
// decoded weights within half a grid step of the source), the untouched
// classes still read as they are, and the errors for bad choices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "submoe/calib/compress.h"
#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::calib {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";

std::string temp_dir(const std::string& name) {
  const std::string d = (fs::temp_directory_path() / ("submoe_dense_" + name + "_" + std::to_string(getpid()))).string();
  fs::remove_all(d);
  return d;
}

CompressOptions options(const std::string& model, const std::string& out, std::vector<DenseReprChoice> dense) {
  CompressOptions o;
  o.model_dir = kFixtures + model;
  o.calib_path = kFixtures + "calib/shakespeare-excerpt.txt";
  o.out_dir = out;
  o.method = QuantMethod::kRtn;
  o.repr = runtime::ReprOptions{"int"};
  o.repr.bits = 4;
  o.samples = 4;
  o.seq_len = 32;
  o.threads = 2;
  o.dense_reprs = std::move(dense);
  return o;
}

DenseReprChoice int4(model::DenseClass c, uint32_t group = 32) {
  DenseReprChoice d{c, runtime::ReprOptions{"int"}, false};
  d.repr.bits = 4;
  d.repr.group_size = group;
  return d;
}

json read_json(const std::string& path) {
  auto t = io::read_file_to_string(path);
  EXPECT_TRUE(t.is_ok()) << path;
  return json::parse(t.is_ok() ? *t : std::string("{}"));
}

// y = op(x) against decode(fields) x in float64, for one packed projection.
void expect_op_matches_decoder(const runtime::Artifact& a, const model::LinearOp& op, const std::string& name,
                               const io::TensorView& source) {
  const auto rows = static_cast<uint32_t>(op.out_features()), cols = static_cast<uint32_t>(op.in_features());
  const runtime::MatrixCodec& codec = *a.codecs()[a.quantization().dense_weights.front().second];
  std::vector<std::span<const std::byte>> f;
  for (const runtime::FieldSpec& s : codec.fields(rows, cols)) {
    const io::TensorView* t = a.tensors()->find(name + "." + s.name);
    ASSERT_NE(t, nullptr) << name << "." << s.name;
    f.push_back(std::as_bytes(t->bytes()));
  }
  auto w_hat = codec.decode(rows, cols, f);
  ASSERT_TRUE(w_hat.is_ok()) << w_hat.status().to_string();
  // Round to nearest on an asymmetric 4-bit grid: within half a step of the source
  // (step = the group's range / 15, at most the row's range / 15).
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  ASSERT_TRUE(io::read_as_f32(source, w).is_ok());
  for (uint32_t r = 0; r < rows; ++r) {
    float lo = w[static_cast<size_t>(r) * cols], hi = lo;
    for (uint32_t c = 0; c < cols; ++c) {
      lo = std::min(lo, w[static_cast<size_t>(r) * cols + c]);
      hi = std::max(hi, w[static_cast<size_t>(r) * cols + c]);
    }
    const double half_step = 0.5 * (hi - lo) / 15.0 * 1.01 + 1e-3 * (hi - lo);  // + f16 scale rounding
    for (uint32_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      ASSERT_LE(std::fabs((*w_hat)[i] - w[i]), half_step) << name << " row " << r << " col " << c;
    }
  }
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> x(cols), y(rows);
  for (float& v : x) v = nd(rng);
  op.forward(x.data(), 1, y.data(), nullptr);
  for (uint32_t r = 0; r < rows; ++r) {
    double want = 0, sum_abs = 0;
    for (uint32_t c = 0; c < cols; ++c) {
      want += static_cast<double>((*w_hat)[static_cast<size_t>(r) * cols + c]) * x[c];
      sum_abs += std::fabs(static_cast<double>((*w_hat)[static_cast<size_t>(r) * cols + c]) * x[c]);
    }
    EXPECT_NEAR(y[r], want, 1e-5 * sum_abs + 1e-7) << name << " row " << r;
  }
}

TEST(DenseRepr, PackedClassesAreStoredAsFieldsAndLoadAsTheirRepresentation) {
  const std::string out = temp_dir("qwen2");
  CompressOptions o = options("qwen2_moe", out,
                              {int4(model::DenseClass::kAttention), int4(model::DenseClass::kSharedExpert),
                               int4(model::DenseClass::kDenseMlp), int4(model::DenseClass::kLmHead)});
  auto s = compress_model(o, {});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();

  const json cfg = read_json(out + "/config.json");
  const json& q = cfg.at("quantization_config");
  EXPECT_EQ(q.at("format_version"), artifact::kArtifactFormatVersion);
  // The experts' record (int4 per row) and the dense classes' (int4 g32): two records.
  ASSERT_EQ(q.at("representations").size(), 2u);
  for (const char* c : {"attention", "shared_expert", "dense_mlp", "lm_head"}) EXPECT_EQ(q.at("dense_weights").at(c), 1);
  EXPECT_FALSE(q.at("dense_weights").contains("router"));
  EXPECT_EQ(q.at("modules_not_converted"), json({"embed_tokens", "norms", "router"}));
  const json ledger = read_json(out + "/" + std::string(artifact::kManifestFile)).at("ledger");
  EXPECT_EQ(ledger.at("dense_classes").at("attention").at("representation"), "int (4 bits, group 32)");
  EXPECT_EQ(ledger.at("dense_classes").at("router").at("representation"), "source dtype");
  EXPECT_NEAR(ledger.at("dense_classes").at("lm_head").at("bits_per_weight").get<double>(), 4.75, 1e-9);

  auto art = runtime::Artifact::open(out);
  ASSERT_TRUE(art.is_ok()) << art.status().to_string();
  auto src = io::SafetensorsModel::open(kFixtures + "qwen2_moe");
  ASSERT_TRUE(src.is_ok());
  const runtime::Artifact& a = **art;
  // The source tensor is gone, its fields are there; unpacked classes as they were.
  EXPECT_EQ(a.tensors()->find("model.layers.0.self_attn.q_proj.weight"), nullptr);
  EXPECT_NE(a.tensors()->find("model.layers.0.self_attn.q_proj.weight.qweight"), nullptr);
  EXPECT_NE(a.tensors()->find("model.layers.0.mlp.gate.weight"), nullptr);

  auto m = runtime::load_artifact_model(*art, {});
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const model::ModelWeights& w = (*m)->weights();
  EXPECT_NE(w.layers[0].q->describe().find("int4-g32"), std::string::npos) << w.layers[0].q->describe();
  EXPECT_NE(w.layers[0].router->describe().find("dense"), std::string::npos) << w.layers[0].router->describe();
  struct Case {
    const model::LinearOp* op;
    std::string name;
  };
  const std::vector<Case> cases = {
      {w.layers[0].q.get(), "model.layers.0.self_attn.q_proj.weight"},
      {w.layers[0].o.get(), "model.layers.0.self_attn.o_proj.weight"},
      {w.layers[0].shared_expert.down.get(), "model.layers.0.mlp.shared_expert.down_proj.weight"},
      {w.layers[1].mlp.up.get(), "model.layers.1.mlp.up_proj.weight"},
      {w.lm_head.get(), "lm_head.weight"}};
  for (const Case& c : cases) {
    const io::TensorView* t = (*src)->find(c.name);
    ASSERT_NE(t, nullptr) << c.name;
    expect_op_matches_decoder(a, *c.op, c.name, *t);
  }
  fs::remove_all(out);
}

TEST(DenseRepr, WithoutDenseChoicesTheFormatStaysVersion2) {
  const std::string out = temp_dir("plain");
  auto s = compress_model(options("qwen3_moe", out, {}), {});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const json q = read_json(out + "/config.json").at("quantization_config");
  EXPECT_EQ(q.at("format_version"), artifact::kDenseBf16FormatVersion);
  EXPECT_FALSE(q.contains("dense_weights"));
  fs::remove_all(out);
}

TEST(DenseRepr, BadChoicesAreRefusedBeforeAnythingIsWritten) {
  const std::string out = temp_dir("bad");
  auto expect_error = [&](const std::string& model, std::vector<DenseReprChoice> d, const std::string& needle) {
    auto s = compress_model(options(model, out, std::move(d)), {});
    ASSERT_FALSE(s.is_ok()) << needle;
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().to_string();
    EXPECT_FALSE(fs::exists(out + "/config.json"));
  };
  // Tied embeddings: no lm_head projection of its own.
  expect_error("qwen3_moe", {int4(model::DenseClass::kLmHead)}, "tie_word_embeddings");
  // No shared experts in Qwen3-MoE.
  expect_error("qwen3_moe", {int4(model::DenseClass::kSharedExpert)}, "no projection of this class");
  // A group that does not divide the attention's 64 columns.
  expect_error("qwen3_moe", {int4(model::DenseClass::kAttention, 128)}, "q_proj");
  // The same class twice.
  expect_error("qwen3_moe", {int4(model::DenseClass::kAttention), int4(model::DenseClass::kAttention)}, "twice");
  DenseReprChoice unknown{model::DenseClass::kAttention, runtime::ReprOptions{"nosuch"}, false};
  expect_error("qwen3_moe", {unknown}, "nosuch");
  // "all" skips the classes the model lacks.
  DenseReprChoice all_shared = int4(model::DenseClass::kSharedExpert);
  all_shared.if_present = true;
  auto s = compress_model(options("qwen3_moe", out, {int4(model::DenseClass::kAttention), all_shared}), {});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const json q = read_json(out + "/config.json").at("quantization_config");
  EXPECT_EQ(q.at("dense_weights"), json({{"attention", 1}}));
  fs::remove_all(out);
}

TEST(DenseRepr, ClassNamesParseAndUnknownOnesListTheClasses) {
  for (model::DenseClass c : model::kDenseClasses) {
    auto p = model::parse_dense_class(model::dense_class_name(c));
    ASSERT_TRUE(p.is_ok());
    EXPECT_EQ(*p, c);
  }
  auto bad = model::parse_dense_class("embeddings");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("attention, shared_expert, dense_mlp, lm_head, router"), std::string::npos)
      << bad.status().to_string();
}

}  // namespace
}  // namespace submoe::calib
