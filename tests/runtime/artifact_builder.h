// Test support: compressed artifacts built by hand from the tiny HF fixtures,
// following docs/format.md section 9 independently of the loader (and, for the
// int representation, of the codec's packer): dense tensors copied, routed
// experts replaced by RTN ternary or n-bit versions of the fixture's weights.
// The parts are returned before writing so tests can corrupt them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/status.h"
#include "submoe/io/safetensors.h"

namespace submoe::runtime::testing {

std::string fixture_dir(const std::string& name);  // tests/fixtures/<name>

struct ArtifactSpec {
  std::string fixture = "qwen3_moe";
  bool ternary = true;
  ternary::DictKind code = ternary::DictKind::kQmoe;
  double p0 = ternary::kQmoeDefaultP0;
  uint32_t bits = 4;
  uint32_t group_size = 0;
  // Format version 2 with two representation records, ternary_dict (record 0)
  // and int `bits`/`group_size` (record 1): matrix (layer, expert, projection)
  // uses record (expert + projection) % 2. `ternary` is ignored.
  bool mixed_v2 = false;
};

struct TensorPart {
  std::string name;
  io::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// (layer, expert, projection 0/1/2 = gate/up/down)
using ExpertKey = std::tuple<int, int, int>;

struct ArtifactParts {
  std::string fixture;
  nlohmann::json config;  // config.json including quantization_config
  std::vector<TensorPart> tensors;  // file order
  std::map<std::string, std::string> metadata;
  // What each expert projection decodes to, computed by the builder from the
  // grid it chose (not through any packed format): rows x cols.
  std::map<ExpertKey, std::vector<float>> decoded;
  std::map<ExpertKey, std::array<uint32_t, 2>> shapes;  // rows, cols
};

Result<ArtifactParts> build_artifact_parts(const ArtifactSpec& spec);
// A fresh temporary directory holding config.json, model.safetensors and the
// fixture's tokenizer files.
Result<std::string> write_artifact(const ArtifactParts& parts);

// Parts plus the written directory, built once per spec per test binary; the
// directory is removed at exit.
struct BuiltArtifact {
  ArtifactParts parts;
  std::string dir;
  BuiltArtifact() = default;
  BuiltArtifact(const BuiltArtifact&) = delete;
  BuiltArtifact& operator=(const BuiltArtifact&) = delete;
  ~BuiltArtifact();
};
const BuiltArtifact& cached_artifact(const ArtifactSpec& spec);
std::string spec_name(const ArtifactSpec& spec);  // "qwen3_moe-ternary-qmoe", "mixtral-int3-g32"

// Index of the tensor named `name` in parts.tensors, or -1.
int find_part(const ArtifactParts& parts, const std::string& name);

// golden.json prompts' input_ids of a fixture.
std::vector<std::vector<int32_t>> fixture_prompts(const std::string& fixture);

}  // namespace submoe::runtime::testing
