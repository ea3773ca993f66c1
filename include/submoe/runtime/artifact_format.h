// The compressed-artifact layout (docs/format.md section 9), declared once for the
// writer (calib), the loader (runtime), the offload store and the tests.
//
// An artifact is a Hugging Face style directory: config.json (the source config
// plus "quantization_config"), model.safetensors, the tokenizer files, and
// submoe_manifest.json. In model.safetensors come, in this order: the shared
// ternary dictionary (ternary_dict only), every dense tensor of the source under
// its source name and dtype, then the routed experts ordered by (layer, expert),
// each expert's tensors contiguous (gate, up, down; fields in the order below),
// so one byte range read loads one expert.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace submoe::artifact {

// Version 2 records the representation of every expert matrix
// (quantization_config.representations + expert_matrices); version 1 had one
// "experts" record for all. Version 3 adds "dense_weights": classes of dense
// projections stored packed, each tensor <name> as fields <name>.<field>
// (docs/format.md 9.5). Readers handle 1 to 3; writers write 2, or 3 when some
// dense class is packed (so readers of 2 still open every other artifact).
inline constexpr int kArtifactFormatVersion = 3;
inline constexpr int kDenseBf16FormatVersion = 2;
inline constexpr int kOldestReadableFormatVersion = 1;
inline constexpr std::string_view kQuantMethod = "submoe";  // quantization_config.quant_method
inline constexpr std::string_view kManifestFile = "submoe_manifest.json";
inline constexpr std::string_view kWeightsFile = "model.safetensors";

// Files copied from the source checkpoint when present (tokenizer and
// generation settings); with config.json they are the manifest's checksummed
// "files".
inline constexpr std::string_view kCopiedSourceFiles[] = {
    "tokenizer.json",         "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
    "tokenizer.model",        "vocab.json",            "merges.txt"};
inline constexpr std::string_view kConfigFile = "config.json";
// Held (flock) by the compress writing the directory; not part of the artifact.
inline constexpr std::string_view kCompressLockFile = ".submoe-compress.lock";

// The shared dictionary: U64 [65536], entry i = word[0] | word[1] << 32.
inline constexpr std::string_view kDictionaryTensor = "submoe.ternary_dict.entries";


enum class Projection { kGate = 0, kUp = 1, kDown = 2 };
inline constexpr Projection kProjections[3] = {Projection::kGate, Projection::kUp, Projection::kDown};

inline std::string_view projection_name(Projection p) {
  switch (p) {
    case Projection::kGate: return "gate_proj";
    case Projection::kUp: return "up_proj";
    case Projection::kDown: return "down_proj";
  }
  return "?";
}

// Fields of one packed projection, in file order (declared by each
// representation, runtime/representation.h; the two original ones:)
//   ternary_dict: row_offsets I32 [rows+1]; scales BF16 [rows, 2] (w_min, w_max);
//                 codes U16 [n] with n >= row_offsets[rows], n even; codes past
//                 row_offsets[rows] are zero padding (counted in the ledger).
//   int:          qweight U8 [rows, row_bytes]: row r's codes, bits each, packed
//                 LSB-first into a bit stream, row_bytes = ceil(cols*bits/32)*4;
//                 scales F16 [rows, groups]; zeros U8 [rows, groups] (integer
//                 zero point, value = scale * (code - zero)). groups = 1 for a
//                 per-row grid, else ceil(cols / group_size).
inline constexpr std::string_view kFieldRowOffsets = "row_offsets";
inline constexpr std::string_view kFieldScales = "scales";
inline constexpr std::string_view kFieldCodes = "codes";
inline constexpr std::string_view kFieldQweight = "qweight";
inline constexpr std::string_view kFieldZeros = "zeros";

// "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}",
// the same for every architecture (mixtral's w1/w3/w2 map to gate/up/down).
inline std::string expert_tensor_name(int layer, int expert, Projection p, std::string_view field) {
  std::string s = "model.layers." + std::to_string(layer) + ".mlp.experts." + std::to_string(expert) + ".";
  s += projection_name(p);
  s += '.';
  s += field;
  return s;
}

}  // namespace submoe::artifact
