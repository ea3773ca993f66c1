// Expert byte ranges and expert_from_bytes: the range read back with plain file
// I/O builds the same ops as the memory-mapped tensors (both modes); ranges
// tile the expert section in (layer, expert) order; accessors and describe().
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "artifact_builder.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/codec/ternary_dictionary.h"

namespace submoe::runtime {
namespace {

using testing::ArtifactSpec;

std::vector<std::byte> read_range(const ExpertByteRange& r) {
  std::ifstream f(r.path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(r.offset));
  std::vector<std::byte> out(r.length);
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  EXPECT_EQ(static_cast<uint64_t>(f.gcount()), r.length);
  return out;
}

void expect_same_outputs(const LoadedExpert& a, const LoadedExpert& b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  const model::LinearOp* pa[3] = {a.gate.get(), a.up.get(), a.down.get()};
  const model::LinearOp* pb[3] = {b.gate.get(), b.up.get(), b.down.get()};
  for (int p = 0; p < 3; ++p) {
    ASSERT_EQ(pa[p]->in_features(), pb[p]->in_features());
    ASSERT_EQ(pa[p]->out_features(), pb[p]->out_features());
    EXPECT_EQ(pa[p]->describe(), pb[p]->describe());
    EXPECT_EQ(pa[p]->weight_bytes(), pb[p]->weight_bytes());
    const size_t n = 5, in = pa[p]->in_features(), out = pa[p]->out_features();
    std::vector<float> x(n * in), ya(n * out), yb(n * out);
    for (float& v : x) v = nd(rng);
    pa[p]->forward(x.data(), n, ya.data(), nullptr);
    pb[p]->forward(x.data(), n, yb.data(), nullptr);
    for (size_t i = 0; i < ya.size(); ++i) ASSERT_EQ(ya[i], yb[i]) << pa[p]->describe();
  }
}

class ArtifactExperts : public ::testing::TestWithParam<ArtifactSpec> {};

std::vector<ArtifactSpec> specs() {
  ArtifactSpec t;
  ArtifactSpec i;
  i.fixture = "mixtral";
  i.ternary = false;
  i.bits = 3;
  i.group_size = 32;
  ArtifactSpec m;
  m.mixed_v2 = true;
  m.bits = 2;
  return {t, i, m};
}

TEST_P(ArtifactExperts, FromBytesOfTheByteRangeEqualsResident) {
  const testing::BuiltArtifact& built = testing::cached_artifact(GetParam());
  auto art = Artifact::open(built.dir);
  ASSERT_TRUE(art.is_ok()) << art.status().to_string();
  const Artifact& a = **art;
  uint64_t expected_next = 0;
  for (int l = 0; l < a.num_layers(); ++l) {
    for (int e = 0; e < a.num_experts(); ++e) {
      ASSERT_TRUE(a.has_expert(l, e));
      auto range = a.expert_byte_range(l, e);
      ASSERT_TRUE(range.is_ok());
      // Experts follow each other in (layer, expert) order.
      if (expected_next != 0) {
        EXPECT_EQ(range->offset, expected_next);
      }
      expected_next = range->offset + range->length;
      const std::vector<std::byte> bytes = read_range(*range);
      for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kFusedBf16, ExecutionMode::kFusedInt8,
                                 ExecutionMode::kReferenceDecode}) {
        auto fetched = a.expert_from_bytes(l, e, bytes, mode);
        ASSERT_TRUE(fetched.is_ok()) << fetched.status().to_string();
        auto resident = a.expert_resident(l, e, mode);
        ASSERT_TRUE(resident.is_ok()) << resident.status().to_string();
        expect_same_outputs(**fetched, **resident, static_cast<uint32_t>(l * 100 + e));
        EXPECT_GT((*fetched)->weight_bytes(), 0u);
      }
      // The fused expert streams its packed bytes, about the range's size.
      auto fused = a.expert_from_bytes(l, e, bytes);
      ASSERT_TRUE(fused.is_ok());
      EXPECT_LE((*fused)->weight_bytes(), range->length);
      EXPECT_GE((*fused)->weight_bytes() + 16, range->length);  // codes padding only
    }
  }
  // The last expert ends the file.
  EXPECT_EQ(expected_next, a.tensors()->files().front()->file_size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArtifactExperts, ::testing::ValuesIn(specs()),
                         [](const auto& p) {
                           return p.param.mixed_v2 ? std::string("v2_mixed")
                                                   : p.param.ternary ? std::string("ternary") : std::string("int3");
                         });

TEST(ArtifactExpertsApi, AccessorsAndOutOfRangeExperts) {
  const testing::BuiltArtifact& built = testing::cached_artifact(ArtifactSpec{});
  auto art = Artifact::open(built.dir);
  ASSERT_TRUE(art.is_ok());
  const Artifact& a = **art;
  EXPECT_EQ(a.num_layers(), 2);
  EXPECT_EQ(a.num_experts(), 8);
  EXPECT_EQ(a.expert_hidden(), 64u);
  EXPECT_EQ(a.expert_inner(), 16u);
  ASSERT_EQ(a.codecs().size(), 1u);
  EXPECT_EQ(a.codecs()[0]->representation().name(), "ternary_dict");
  EXPECT_EQ(&a.expert_codec(1, 3, artifact::Projection::kDown), a.codecs()[0].get());
  EXPECT_EQ(a.shared_tensor_bytes(), ternary::kDictEntries * 8u);
  EXPECT_EQ(a.summary(), "ternary_dict (qmoe, p0 0.885), rtn, grid ternary");
  EXPECT_EQ(a.directory(), built.dir);
  for (auto [l, e] : {std::pair{-1, 0}, {2, 0}, {0, -1}, {0, 8}}) {
    EXPECT_FALSE(a.has_expert(l, e));
    EXPECT_EQ(a.expert_byte_range(l, e).status().code(), ErrorCode::kInvalidArgument);
    EXPECT_FALSE(a.expert_resident(l, e).is_ok());
    EXPECT_FALSE(a.expert_from_bytes(l, e, {}).is_ok());
  }
  auto x = a.expert_resident(1, 3);
  ASSERT_TRUE(x.is_ok());
  EXPECT_NE((*x)->gate->describe().find("ternary_dict qmoe [16, 64]"), std::string::npos) << (*x)->gate->describe();
  EXPECT_NE((*x)->down->describe().find("[64, 16]"), std::string::npos);
  auto r = a.expert_resident(1, 3, ExecutionMode::kReferenceDecode);
  ASSERT_TRUE(r.is_ok());
  EXPECT_NE((*r)->up->describe().find("reference-decoded to dense f32 [16, 64]"), std::string::npos)
      << (*r)->up->describe();
  EXPECT_EQ((*r)->weight_bytes(), 3u * 16 * 64 * 4);
}

TEST(ArtifactExpertsApi, ExecutionModeNames) {
  EXPECT_EQ(*parse_execution_mode("fused"), ExecutionMode::kFused);
  EXPECT_EQ(*parse_execution_mode("reference"), ExecutionMode::kReferenceDecode);
  EXPECT_EQ(*parse_execution_mode("fused-bf16"), ExecutionMode::kFusedBf16);
  EXPECT_STREQ(execution_mode_name(ExecutionMode::kFusedBf16), "fused-bf16");
  EXPECT_EQ(*parse_execution_mode("fused-int8"), ExecutionMode::kFusedInt8);
  EXPECT_STREQ(execution_mode_name(ExecutionMode::kFusedInt8), "fused-int8");
  EXPECT_STREQ(execution_mode_name(ExecutionMode::kFused), "fused");
  EXPECT_STREQ(execution_mode_name(ExecutionMode::kReferenceDecode), "reference");
  EXPECT_FALSE(parse_execution_mode("Fused").is_ok());
}

TEST(ArtifactExpertsApi, IsArtifact) {
  EXPECT_TRUE(is_artifact(testing::cached_artifact(ArtifactSpec{}).dir));
  EXPECT_FALSE(is_artifact(testing::fixture_dir("qwen3_moe")));
  EXPECT_FALSE(is_artifact("/nonexistent/dir"));
}

}  // namespace
}  // namespace submoe::runtime
