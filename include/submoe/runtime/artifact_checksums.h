// The integrity record of a compressed artifact (docs/format.md 9.4,
// submoe_manifest.json "checksums"): an XXH3-64 checksum (core/checksum.h) of
// every byte the loader reads, so that corruption which still parses (a
// flipped code, scale, offset or codebook entry) is an error, not a silently
// different answer.
//
//   files                the small files: config.json and the tokenizer files
//   safetensors_header   model.safetensors bytes [0, data offset): length + JSON
//   tensors              every tensor that is not part of a routed expert's
//                        byte range (shared codebooks, dense weights)
//   experts              per layer, per routed expert, over its byte range
//                        (Artifact::expert_byte_range); [] for dense layers
//
// Since the safetensors tensors tile the data section exactly, these cover
// every byte of model.safetensors once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::runtime {

struct ArtifactChecksums {
  std::map<std::string, uint64_t> files;
  uint64_t safetensors_header = 0;
  std::map<std::string, uint64_t, std::less<>> tensors;
  std::vector<std::vector<uint64_t>> experts;

  bool operator==(const ArtifactChecksums&) const = default;
};

// {"algorithm": "xxh3_64", "files": {...}, "safetensors_header": "...",
//  "tensors": {...}, "experts": [[...], ...]}, checksums as 16 hex digits.
nlohmann::json checksums_to_json(const ArtifactChecksums& c);
// The inverse, strict: an unknown algorithm, a missing or extra key, or a
// malformed checksum is kCorruptData (kUnsupported for the algorithm) naming it.
Result<ArtifactChecksums> checksums_from_json(const nlohmann::json& j);

// kCorruptData "<what>: checksum mismatch (xxh3_64 stored S, computed C): the
// bytes are corrupt; re-copy or re-create the artifact" when they differ.
Status check_checksum(uint64_t stored, uint64_t computed, const std::string& what);

}  // namespace submoe::runtime
