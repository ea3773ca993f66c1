// Artifact contracts (runtime/repr_contract.h): every registered
// representation states a complete one; check_contract accepts exactly the
// codec's own and names the key of any difference (value, type, missing,
// unknown, nested operator keys); an artifact whose recorded contract this
// build does not execute is refused on open, one without contracts (written
// before them) still opens.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>

#include "artifact_builder.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

using nlohmann::json;

std::shared_ptr<const MatrixCodec> codec_of(const std::string& name) {
  ReprOptions o{name};
  if (name == "int" || name == "rvq" || name == "aqlm" || name == "vptq") o.bits = 2;
  if (name == "squeezellm") o.bits = 3;
  if (name == "rvq") o.extra = {{"train_vectors", "2048"}, {"iters", "2"}};  // small codebooks: quick
  auto c = make_codec(o);
  EXPECT_TRUE(c.is_ok()) << name << ": " << c.status().to_string();
  return c.is_ok() ? *c : nullptr;
}

TEST(ReprContract, EveryRepresentationStatesACompleteContract) {
  std::set<std::string> layouts;
  for (const Representation* r : representations()) {
    SCOPED_TRACE(std::string(r->name()));
    const auto c = codec_of(std::string(r->name()));
    ASSERT_NE(c, nullptr);
    const ReprContract k = c->contract();
    EXPECT_FALSE(k.family.empty());
    EXPECT_FALSE(k.packing_layout.empty());
    EXPECT_FALSE(k.required_kernel.empty());
    EXPECT_GE(k.decoder_version, 1);
    EXPECT_TRUE(k.sparse_semantics == "none" || k.sparse_semantics == "correction" || k.sparse_semantics == "replacement");
    EXPECT_EQ(k.duplicate_coordinate_policy, "reject");
    EXPECT_TRUE(layouts.insert(k.packing_layout).second) << "two representations share a packing layout";
    EXPECT_TRUE(check_contract(k.to_json(), k, "c").is_ok());
  }
  EXPECT_EQ(codec_of("rvq")->contract().vector_dim, 16u);
  EXPECT_NE(codec_of("rvq")->contract().input_transform, "none");
}

TEST(ReprContract, DifferencesAreRefusedByKey) {
  const ReprContract mine = codec_of("nf4")->contract();
  const json good = mine.to_json();
  struct Case {
    std::function<void(json&)> edit;
    std::string needle;
    ErrorCode code;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["decoder_version"] = 2; }, "c.decoder_version is 2; this reader executes 1", ErrorCode::kUnsupported},
      {[](json& j) { j["required_kernel"] = "nf4_lut_v9"; }, "c.required_kernel is \"nf4_lut_v9\"", ErrorCode::kUnsupported},
      {[](json& j) { j["sparse_semantics"] = "correction"; }, "c.sparse_semantics", ErrorCode::kUnsupported},
      {[](json& j) { j["operator"]["accumulator"] = "f16"; }, "c.operator.accumulator is \"f16\"", ErrorCode::kUnsupported},
      {[](json& j) { j["vector_dim"] = "1"; }, "c.vector_dim is \"1\"", ErrorCode::kUnsupported},
      {[](json& j) { j["tile"] = 16; }, "c.tile is not a contract key", ErrorCode::kUnsupported},
      {[](json& j) { j["operator"]["layout"] = "x"; }, "c.operator.layout is not a contract key", ErrorCode::kUnsupported},
      {[](json& j) { j.erase("combine_order"); }, "c.combine_order is missing", ErrorCode::kCorruptData},
      {[](json& j) { j["operator"] = 3; }, "c.operator must be an object", ErrorCode::kCorruptData},
      {[](json& j) { j = json::array(); }, "c must be an object", ErrorCode::kCorruptData},
  };
  for (const Case& c : cases) {
    json j = good;
    c.edit(j);
    const Status st = check_contract(j, mine, "c");
    EXPECT_EQ(st.code(), c.code) << c.needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << st.message();
  }
}

struct TempArtifact {
  std::string dir;
  explicit TempArtifact(const testing::ArtifactParts& parts) {
    auto d = testing::write_artifact(parts);
    EXPECT_TRUE(d.is_ok()) << d.status().to_string();
    if (d.is_ok()) dir = *d;
  }
  ~TempArtifact() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

TEST(ReprContract, AnArtifactsRecordedContractsAreCheckedOnOpen) {
  testing::ArtifactSpec spec;
  spec.mixed_v2 = true;  // records: ternary_dict, int
  auto built = testing::build_artifact_parts(spec);
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  {
    TempArtifact a(*built);  // no contracts: written before them, still opens
    EXPECT_TRUE(Artifact::open(a.dir).is_ok());
  }
  json& qc = built->config["quantization_config"];
  qc["contracts"] = {codec_of("ternary_dict")->contract().to_json(), codec_of("int")->contract().to_json()};
  {
    TempArtifact a(*built);
    auto art = Artifact::open(a.dir);
    EXPECT_TRUE(art.is_ok()) << art.status().to_string();
  }
  {
    testing::ArtifactParts p = *built;
    p.config["quantization_config"]["contracts"][1]["packing_layout"] = "int-msb-v2";
    TempArtifact a(p);
    auto art = Artifact::open(a.dir);
    ASSERT_FALSE(art.is_ok());
    EXPECT_EQ(art.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(art.status().message().find("quantization_config.contracts[1].packing_layout is \"int-msb-v2\""),
              std::string::npos)
        << art.status().message();
  }
  {
    testing::ArtifactParts p = *built;
    p.config["quantization_config"]["contracts"].erase(1);
    TempArtifact a(p);
    auto art = Artifact::open(a.dir);
    ASSERT_FALSE(art.is_ok());
    EXPECT_NE(art.status().message().find("contracts must be an array of 2 objects"), std::string::npos)
        << art.status().message();
  }
}

}  // namespace
}  // namespace submoe::runtime
