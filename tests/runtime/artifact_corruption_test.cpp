// Corrupt artifacts fail cleanly with an error naming what is wrong: broken
// quantization_config keys, missing / misshaped / mistyped / misplaced tensors,
// a bad dictionary or metadata (Artifact::open); truncated expert ranges,
// flipped bytes in row_offsets, nonzero padding and random damage
// (expert_from_bytes). Nothing may crash (this binary also runs under ASan).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "artifact_builder.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::runtime {
namespace {

using testing::ArtifactParts;
using testing::ArtifactSpec;

struct TempArtifact {
  std::string dir;
  explicit TempArtifact(const ArtifactParts& parts) {
    auto d = testing::write_artifact(parts);
    EXPECT_TRUE(d.is_ok()) << d.status().to_string();
    if (d.is_ok()) dir = *d;
  }
  ~TempArtifact() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const ArtifactParts& base_parts(bool ternary) {
  static const ArtifactParts t = *testing::build_artifact_parts(ArtifactSpec{});
  static const ArtifactParts i = [] {
    ArtifactSpec s;
    s.ternary = false;
    s.bits = 3;
    s.group_size = 32;
    return *testing::build_artifact_parts(s);
  }();
  return ternary ? t : i;
}

// Opens a copy of the base parts after `edit`; expects an error containing `needle`.
void expect_open_error(bool ternary, const std::function<void(ArtifactParts&)>& edit, const std::string& needle,
                       ErrorCode code = ErrorCode::kCorruptData) {
  ArtifactParts p = base_parts(ternary);
  edit(p);
  TempArtifact a(p);
  auto art = Artifact::open(a.dir);
  ASSERT_FALSE(art.is_ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(art.status().message().find(needle), std::string::npos) << art.status().to_string();
  EXPECT_EQ(art.status().code(), code) << art.status().to_string();
  // The model loader reports the same problem.
  auto m = load_artifact_model(a.dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().to_string();
}

void edit_qc(ArtifactParts& p, const std::function<void(nlohmann::json&)>& f) { f(p.config["quantization_config"]); }

TEST(ArtifactCorruption, BadQuantizationConfigNamesTheKey) {
  using J = nlohmann::json;
  struct Case {
    bool ternary;
    std::function<void(J&)> edit;
    std::string needle;
    ErrorCode code = ErrorCode::kCorruptData;
  };
  const std::vector<Case> cases = {
      {true, [](J& q) { q.erase("format_version"); }, "quantization_config.format_version is missing"},
      {true, [](J& q) { q["format_version"] = 4; }, "format_version is 4, this reader handles 1 to 3",
       ErrorCode::kUnsupported},
      {true, [](J& q) { q["format_version"] = 0; }, "format_version is 0", ErrorCode::kUnsupported},
      {true, [](J& q) { q["format_version"] = "1"; }, "format_version must be an integer, got string"},
      {true, [](J& q) { q["quant_method"] = "gptq"; }, "quant_method is 'gptq'", ErrorCode::kUnsupported},
      {true, [](J& q) { q.erase("experts"); }, "quantization_config.experts is missing"},
      {true, [](J& q) { q["experts"] = J::array(); }, "experts must be an object"},
      {true, [](J& q) { q["experts"]["representation"] = "hqq"; }, "experts.representation 'hqq' is not a representation this reader knows",
       ErrorCode::kUnsupported},
      {true, [](J& q) { q["experts"]["representation"] = "ternary"; }, "experts.representation 'ternary'",
       ErrorCode::kUnsupported},  // command-line aliases are not record names
      {true, [](J& q) { q["experts"].erase("representation"); }, "experts.representation is missing"},
      {true, [](J& q) { q["experts"]["code"] = "huffman"; }, "experts.code 'huffman'"},
      {true, [](J& q) { q["experts"]["p0"] = 1.5; }, "experts.p0 = 1.5"},
      {true, [](J& q) { q["experts"]["p0"] = "0.885"; }, "experts.p0 must be a number"},
      {true, [](J& q) { q["experts"].erase("dictionary_tensor"); }, "experts.dictionary_tensor is missing"},
      {true, [](J& q) { q["experts"]["bits"] = 4; }, "experts.bits is not a key of this representation"},
      {true, [](J& q) { q["experts"]["dictionary_tensor"] = "nope"; }, "no dictionary tensor 'nope'",
       ErrorCode::kNotFound},
      {true, [](J& q) { q["grid"] = "int4"; }, "quantization_config.grid 'int4' does not match"},
      {true, [](J& q) { q["damp"] = "0.1"; }, "quantization_config.damp must be a number"},
      {true, [](J& q) { q["act_order"] = 1; }, "quantization_config.act_order must be a boolean"},
      {true, [](J& q) { q["tensor_names"] = "model.layers.{layer}.experts"; }, "quantization_config.tensor_names"},
      {true, [](J& q) { q["modules_not_converted"] = {1, 2}; }, "modules_not_converted must be an array of strings"},
      {false, [](J& q) { q["experts"]["bits"] = 5; }, "experts.bits = 5"},
      {false, [](J& q) { q["experts"]["bits"] = 4.0; }, "experts.bits must be an integer"},
      {false, [](J& q) { q["experts"]["group_size"] = 16; }, "experts.group_size = 16"},
      {false, [](J& q) { q["experts"].erase("group_size"); }, "experts.group_size is missing"},
      {false, [](J& q) { q["experts"]["p0"] = 0.9; }, "experts.p0 is not a key of this representation"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    expect_open_error(c.ternary, [&](ArtifactParts& p) { edit_qc(p, c.edit); }, c.needle, c.code);
  }
  // dense_weights (format 3): only with format_version 3, known classes, record indices.
  expect_open_error(true, [](ArtifactParts& p) { edit_qc(p, [](J& q) { q["dense_weights"] = {{"attention", 0}}; }); },
                    "dense_weights needs format_version 3");
  auto v3 = [](J dense) {
    return [dense](ArtifactParts& p) {
      p.metadata["submoe_format_version"] = "3";
      edit_qc(p, [&](J& q) {
        if (q.contains("experts")) {  // the builder's version 1 record
          q["representations"] = J::array({q["experts"]});
          q.erase("experts");
        }
        q["format_version"] = 3;
        q["dense_weights"] = dense;
      });
    };
  };
  expect_open_error(true, v3({{"embeddings", 0}}), "dense_weights.embeddings: 'embeddings' is not a dense weight class");
  expect_open_error(true, v3({{"attention", 7}}), "dense_weights.attention = 7 is not an index into the 1 representations");
  expect_open_error(true, v3(J::array()), "dense_weights must be an object");
  {
    // A packed class whose fields are not there: opens, the loader names the field.
    ArtifactParts p = base_parts(true);
    v3({{"attention", 0}})(p);
    TempArtifact a(p);
    ASSERT_TRUE(Artifact::open(a.dir).is_ok());
    auto m = load_artifact_model(a.dir);
    ASSERT_FALSE(m.is_ok());
    EXPECT_NE(m.status().message().find("no field tensor 'model.layers.0.self_attn.q_proj.weight."), std::string::npos)
        << m.status().to_string();
  }
  // A quantization_config that is not an object, or is absent.
  expect_open_error(true, [](ArtifactParts& p) { p.config["quantization_config"] = 3; }, "must be an object");
  expect_open_error(true, [](ArtifactParts& p) { p.config.erase("quantization_config"); }, "no quantization_config",
                    ErrorCode::kNotFound);
  // Unknown top-level keys are provenance a later writer may add: accepted.
  ArtifactParts p = base_parts(true);
  p.config["quantization_config"]["calibration"] = "wikitext";
  TempArtifact a(p);
  EXPECT_TRUE(Artifact::open(a.dir).is_ok());
}

TEST(ArtifactCorruption, MissingMistypedMisshapedAndMisplacedTensors) {
  const std::string codes = "model.layers.1.mlp.experts.2.down_proj.codes";
  expect_open_error(true, [&](ArtifactParts& p) { p.tensors.erase(p.tensors.begin() + testing::find_part(p, codes)); },
                    "no tensor '" + codes + "' (layer 1 expert 2)", ErrorCode::kNotFound);
  expect_open_error(true, [&](ArtifactParts& p) { p.tensors[testing::find_part(p, codes)].dtype = io::DType::kI16; },
                    "tensor '" + codes + "' has dtype I16, the format stores codes as U16");
  expect_open_error(true,
                    [&](ArtifactParts& p) {
                      auto& t = p.tensors[testing::find_part(p, codes)];
                      t.bytes.resize(t.bytes.size() - 2);
                      t.shape[0] -= 1;
                    },
                    "the format pads codes to a multiple of 2");
  const std::string offsets = "model.layers.0.mlp.experts.5.up_proj.row_offsets";
  expect_open_error(true,
                    [&](ArtifactParts& p) {
                      auto& t = p.tensors[testing::find_part(p, offsets)];
                      t.bytes.resize(t.bytes.size() + 4);
                      t.shape[0] += 1;
                    },
                    "tensor '" + offsets + "' has shape [18], the config implies [17]");
  // One expert's tensor moved to the end of the file.
  expect_open_error(true,
                    [&](ArtifactParts& p) {
                      const int i = testing::find_part(p, offsets);
                      testing::TensorPart t = p.tensors[static_cast<size_t>(i)];
                      p.tensors.erase(p.tensors.begin() + i);
                      p.tensors.push_back(t);
                    },
                    "must be contiguous");
  expect_open_error(true,
                    [](ArtifactParts& p) {
                      p.tensors.push_back({"model.layers.0.mlp.experts.0.gate_proj.weight", io::DType::kF32, {1},
                                           std::vector<uint8_t>(4, 0)});
                    },
                    "unexpected tensor 'model.layers.0.mlp.experts.0.gate_proj.weight'");
  expect_open_error(true, [](ArtifactParts& p) { p.tensors.erase(p.tensors.begin()); },
                    "no dictionary tensor 'submoe.ternary_dict.entries'", ErrorCode::kNotFound);
  expect_open_error(true, [](ArtifactParts& p) { p.tensors[0].dtype = io::DType::kI64; }, "the format stores U64 [65536]");
  expect_open_error(true, [](ArtifactParts& p) { std::memset(p.tensors[0].bytes.data() + 8 * 77, 0, 8); },
                    "dictionary entry 77");
  // int fields.
  const std::string qweight = "model.layers.1.mlp.experts.0.gate_proj.qweight";
  expect_open_error(false,
                    [&](ArtifactParts& p) {
                      auto& t = p.tensors[testing::find_part(p, qweight)];
                      t.bytes.resize(t.bytes.size() + 16);
                      t.shape[1] += 1;
                    },
                    "has shape [16, 25], the config implies [16, 24]");
  expect_open_error(false,
                    [](ArtifactParts& p) {
                      p.tensors[testing::find_part(p, "model.layers.0.mlp.experts.7.down_proj.scales")].dtype =
                          io::DType::kBF16;
                    },
                    "has dtype BF16, the format stores scales as F16");
}

TEST(ArtifactCorruption, DenseTensorsGoThroughTheCheckpointLoadersChecks) {
  ArtifactParts p = base_parts(true);
  p.tensors.erase(p.tensors.begin() + testing::find_part(p, "model.norm.weight"));
  TempArtifact a(p);
  ASSERT_TRUE(Artifact::open(a.dir).is_ok());  // experts alone are fine
  auto m = load_artifact_model(a.dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("no tensor 'model.norm.weight'"), std::string::npos) << m.status().to_string();
  EXPECT_NE(m.status().message().find(a.dir), std::string::npos) << m.status().to_string();
}

TEST(ArtifactCorruption, MetadataAndFiles) {
  expect_open_error(true, [](ArtifactParts& p) { p.metadata.erase("submoe_format_version"); },
                    "__metadata__ has no submoe_format_version");
  expect_open_error(true, [](ArtifactParts& p) { p.metadata["submoe_format_version"] = "2"; },
                    "submoe_format_version is '2'", ErrorCode::kUnsupported);
  {
    TempArtifact a(base_parts(true));
    std::filesystem::remove(a.dir + "/model.safetensors");
    EXPECT_FALSE(Artifact::open(a.dir).is_ok());
    std::filesystem::remove(a.dir + "/config.json");
    EXPECT_EQ(Artifact::open(a.dir).status().code(), ErrorCode::kNotFound);
  }
}

// expert_from_bytes on damaged copies of a real range.
class ExpertBytes : public ::testing::Test {
 protected:
  void open(bool ternary) {
    tmp_ = std::make_unique<TempArtifact>(base_parts(ternary));
    auto a = Artifact::open(tmp_->dir);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    art_ = std::move(a).value();
  }
  std::vector<std::byte> range_bytes(int l, int e) const {
    const ExpertByteRange r = *art_->expert_byte_range(l, e);
    // Any mapped tensor locates the start of the mapped file.
    const io::TensorView* first = art_->tensors()->tensors().front();
    const uint8_t* file0 = first->data - first->file_offset;
    std::vector<std::byte> out(r.length);
    std::memcpy(out.data(), file0 + r.offset, r.length);
    return out;
  }
  // Byte offset of a tensor inside its expert's range.
  uint64_t field_offset(int l, int e, const std::string& name) const {
    return art_->tensors()->find(name)->file_offset - art_->expert_byte_range(l, e)->offset;
  }
  std::unique_ptr<TempArtifact> tmp_;
  std::shared_ptr<const Artifact> art_;
};

TEST_F(ExpertBytes, TruncatedOrOversizedRanges) {
  open(true);
  std::vector<std::byte> b = range_bytes(1, 4);
  ASSERT_TRUE(art_->expert_from_bytes(1, 4, b).is_ok());
  for (size_t len : {size_t{0}, size_t{1}, b.size() / 2, b.size() - 1}) {
    auto x = art_->expert_from_bytes(1, 4, std::span<const std::byte>(b).first(len));
    ASSERT_FALSE(x.is_ok());
    EXPECT_NE(x.status().message().find("bytes given, its byte range holds"), std::string::npos);
  }
  b.push_back(std::byte{0});
  EXPECT_FALSE(art_->expert_from_bytes(1, 4, b).is_ok());
}

TEST_F(ExpertBytes, EveryFlippedRowOffsetByteIsRejected) {
  open(true);
  const std::vector<std::byte> good = range_bytes(0, 3);
  const uint64_t at = field_offset(0, 3, "model.layers.0.mlp.experts.3.up_proj.row_offsets");
  const size_t n = 4 * 17;
  size_t rejected = 0;
  for (size_t i = 0; i < n; ++i) {
    for (int bit : {0, 2, 5, 7}) {
      std::vector<std::byte> b = good;
      b[at + i] ^= std::byte(1u << bit);
      for (ExecutionMode mode : {ExecutionMode::kFused, ExecutionMode::kReferenceDecode}) {
        auto x = art_->expert_from_bytes(0, 3, b, mode);
        ASSERT_FALSE(x.is_ok()) << "byte " << i << " bit " << bit;
        EXPECT_NE(x.status().message().find("layer 0 expert 3 up_proj"), std::string::npos) << x.status().to_string();
        EXPECT_EQ(x.status().code(), ErrorCode::kCorruptData) << x.status().to_string();
        ++rejected;
      }
    }
  }
  EXPECT_EQ(rejected, n * 4 * 2);
}

TEST_F(ExpertBytes, NonzeroCodePaddingIsRejected) {
  open(true);
  // Find a projection whose codes tensor carries a padding codeword.
  const ArtifactParts& p = base_parts(true);
  int found = 0;
  for (int l = 0; l < 2; ++l)
    for (int e = 0; e < 8; ++e)
      for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const std::string prefix = "model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + proj;
        const auto& offs = p.tensors[testing::find_part(p, prefix + ".row_offsets")];
        const auto& codes = p.tensors[testing::find_part(p, prefix + ".codes")];
        int32_t used;
        std::memcpy(&used, offs.bytes.data() + offs.bytes.size() - 4, 4);
        if (static_cast<size_t>(used) * 2 == codes.bytes.size()) continue;
        std::vector<std::byte> b = range_bytes(l, e);
        b[field_offset(l, e, prefix + ".codes") + codes.bytes.size() - 1] = std::byte{1};
        auto x = art_->expert_from_bytes(l, e, b);
        ASSERT_FALSE(x.is_ok());
        EXPECT_NE(x.status().message().find("padding codeword"), std::string::npos) << x.status().to_string();
        ++found;
      }
  EXPECT_GT(found, 0);
}

TEST_F(ExpertBytes, IntPaddingZerosAndScalesAreChecked) {
  open(false);
  // down_proj: 16 columns of 3 bits = 48 bits in 8 bytes per row, 16 padding bits.
  const std::string prefix = "model.layers.1.mlp.experts.6.down_proj";
  const std::vector<std::byte> good = range_bytes(1, 6);
  ASSERT_TRUE(art_->expert_from_bytes(1, 6, good).is_ok());
  {
    std::vector<std::byte> b = good;
    b[field_offset(1, 6, prefix + ".qweight") + 8 * 5 + 7] = std::byte{0x10};
    auto x = art_->expert_from_bytes(1, 6, b);
    ASSERT_FALSE(x.is_ok());
    EXPECT_NE(x.status().message().find("layer 1 expert 6 down_proj: int matrix row 5: padding"), std::string::npos)
        << x.status().to_string();
  }
  {
    std::vector<std::byte> b = good;
    b[field_offset(1, 6, prefix + ".zeros") + 9] = std::byte{8};
    auto x = art_->expert_from_bytes(1, 6, b);
    ASSERT_FALSE(x.is_ok());
    EXPECT_NE(x.status().message().find("row 9 group 0: zero 8"), std::string::npos) << x.status().to_string();
  }
  {
    std::vector<std::byte> b = good;
    const uint64_t at = field_offset(1, 6, prefix + ".scales") + 2 * 3;
    b[at] = std::byte{0x00};
    b[at + 1] = std::byte{0x7c};  // +inf
    auto x = art_->expert_from_bytes(1, 6, b, ExecutionMode::kReferenceDecode);
    ASSERT_FALSE(x.is_ok());
    EXPECT_NE(x.status().message().find("row 3 group 0: scale is NaN or infinite"), std::string::npos)
        << x.status().to_string();
  }
}

TEST_F(ExpertBytes, RandomDamageNeverCrashesAndBuiltExpertsRun) {
  for (bool ternary : {true, false}) {
    open(ternary);
    const std::vector<std::byte> good = range_bytes(1, 1);
    std::mt19937_64 rng(ternary ? 1 : 2);
    size_t rejected = 0, accepted = 0;
    std::vector<float> x(64 * 3, 0.5f), y(64 * 3);
    for (int trial = 0; trial < 400; ++trial) {
      std::vector<std::byte> b = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= std::byte(1u << (rng() % 8));
      auto e = art_->expert_from_bytes(1, 1, b, trial % 2 ? ExecutionMode::kFused : ExecutionMode::kReferenceDecode);
      if (!e.is_ok()) {
        EXPECT_NE(e.status().message().find("layer 1 expert 1"), std::string::npos) << e.status().to_string();
        ++rejected;
        continue;
      }
      ++accepted;
      // A build that passed validation is safe to run (values may differ).
      (*e)->gate->forward(x.data(), 3, y.data(), nullptr);
      (*e)->down->forward(y.data(), 1, x.data(), nullptr);
      std::fill(x.begin(), x.end(), 0.5f);
    }
    EXPECT_GT(rejected, 0u);
    EXPECT_GT(accepted, 0u);
  }
}

}  // namespace
}  // namespace submoe::runtime

namespace submoe::runtime {
namespace {

// Format version 2: the per-matrix representation table is checked against the
// records, the model's layers and experts, and each matrix's own fields.
TEST(ArtifactCorruption, VersionTwoExpertMatricesAreChecked) {
  ArtifactSpec spec;
  spec.mixed_v2 = true;
  spec.bits = 3;
  spec.group_size = 32;
  const ArtifactParts base = *testing::build_artifact_parts(spec);
  {
    TempArtifact a(base);
    auto art = Artifact::open(a.dir);
    ASSERT_TRUE(art.is_ok()) << art.status().to_string();
    EXPECT_EQ((*art)->codecs().size(), 2u);
    EXPECT_EQ((*art)->summary(), "ternary_dict (qmoe, p0 0.885) + int (3 bits, group 32), rtn, grid mixed");
    // Expert 1: gate int, up ternary, down int.
    EXPECT_EQ((*art)->expert_codec(0, 1, artifact::Projection::kGate).representation().name(), "int");
    EXPECT_EQ((*art)->expert_codec(0, 1, artifact::Projection::kUp).representation().name(), "ternary_dict");
    auto x = (*art)->expert_resident(0, 1);
    ASSERT_TRUE(x.is_ok()) << x.status().to_string();
    EXPECT_NE((*x)->up->describe().find("ternary_dict"), std::string::npos) << (*x)->up->describe();
    EXPECT_EQ((*x)->gate->describe().find("ternary_dict"), std::string::npos) << (*x)->gate->describe();
  }
  using J = nlohmann::json;
  struct Case {
    std::function<void(J&)> edit;
    std::string needle;
    ErrorCode code = ErrorCode::kCorruptData;
  };
  const std::vector<Case> cases = {
      {[](J& q) { q["expert_matrices"][0][3][1] = 2; }, "expert_matrices[0][3][1] = 2 is not an index into the 2"},
      {[](J& q) { q["expert_matrices"][0][3][1] = -1; }, "expert_matrices[0][3][1] = -1"},
      {[](J& q) { q["expert_matrices"][0][3] = {0, 1}; }, "expert_matrices[0][3] must be [gate, up, down]"},
      {[](J& q) { q["expert_matrices"][1].erase(7); }, "expert_matrices[1] has 7 experts, layer 1 has 8"},
      {[](J& q) { q["expert_matrices"].erase(1); }, "expert_matrices has 1 layers, the model 2"},
      {[](J& q) { q["expert_matrices"] = 5; }, "expert_matrices must be an array"},
      {[](J& q) { q["representations"] = J::array(); }, "representations must be a non-empty array"},
      {[](J& q) { q.erase("representations"); }, "quantization_config.representations is missing"},
      {[](J& q) { q["representations"][1]["representation"] = "rvq9"; },
       "representations[1].representation 'rvq9' is not a representation this reader knows", ErrorCode::kUnsupported},
      {[](J& q) { q["representations"][1]["bits"] = 7; }, "representations[1].bits = 7"},
      {[](J& q) { q["representations"][0]["p0"] = "x"; }, "representations[0].p0 must be a number"},
      // Record 1's fields where record 0's are stored: the tensors do not match.
      {[](J& q) { q["expert_matrices"][0][0] = {1, 1, 0}; },
       "no tensor 'model.layers.0.mlp.experts.0.gate_proj.qweight'", ErrorCode::kNotFound},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    ArtifactParts p = base;
    c.edit(p.config["quantization_config"]);
    TempArtifact a(p);
    auto art = Artifact::open(a.dir);
    ASSERT_FALSE(art.is_ok());
    EXPECT_NE(art.status().message().find(c.needle), std::string::npos) << art.status().to_string();
    EXPECT_EQ(art.status().code(), c.code) << art.status().to_string();
  }
  // Without the table, every matrix is record 0's (ternary_dict): the int fields are then foreign.
  ArtifactParts p = base;
  p.config["quantization_config"].erase("expert_matrices");
  TempArtifact a(p);
  auto art = Artifact::open(a.dir);
  ASSERT_FALSE(art.is_ok());
  EXPECT_NE(art.status().message().find("no tensor 'model.layers.0.mlp.experts.0.up_proj.row_offsets'"),
            std::string::npos)
      << art.status().to_string();
}

}  // namespace
}  // namespace submoe::runtime
