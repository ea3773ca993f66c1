// libFuzzer target: the JSON an artifact's loader reads before any tensor
// (docs/format.md 9.2 and 9.4): the manifest's "checksums" record
// (runtime/artifact_checksums.h, checksums_from_json) and config.json's
// "quantization_config" (runtime/quantization_config.h,
// parse_quantization_config). The input is JSON text; the checksum reader
// gets the parsed document and, when it is an object holding "checksums"
// (a whole submoe_manifest.json), that member too. Beyond "no crash":
//   - accepted checksums survive checksums_to_json, dump and parse back to an
//     equal ArtifactChecksums, and the JSON itself is accepted unchanged;
//   - an accepted quantization_config has a readable format_version (1 to 3),
//     one record path per representation record, every record a JSON object,
//     version 1 exactly one record and no expert_matrices, and every
//     expert_matrices index (record_of) inside the records; dense_weights
//     only in version 3, each class a known name, once, its index inside the records.
// Any crash, sanitizer report, uncaught exception or broken invariant (abort)
// is a finding.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "submoe/model/dense_class.h"
#include "submoe/runtime/artifact_checksums.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/quantization_config.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::runtime;

namespace {

using nlohmann::json;
using submoe::fuzz::require;

void check_checksums(const json& j) {
  auto c = checksums_from_json(j);
  if (!c.is_ok()) {
    const ErrorCode code = c.status().code();
    require(code == ErrorCode::kCorruptData || code == ErrorCode::kUnsupported);
    return;
  }
  const json out = checksums_to_json(*c);
  auto again = checksums_from_json(out);
  require(again.is_ok() && *again == *c);
  const json reparsed = json::parse(out.dump(), nullptr, /*allow_exceptions=*/false);
  require(!reparsed.is_discarded() && reparsed == out);
  auto from_text = checksums_from_json(reparsed);
  require(from_text.is_ok() && *from_text == *c);
  // The reader is strict: what it accepts is exactly what the writer writes.
  require(out == j);
}

void check_quantization_config(std::string_view text) {
  auto q = parse_quantization_config(text, "fuzz/config.json");
  if (!q.is_ok()) return;
  require(q->format_version >= artifact::kOldestReadableFormatVersion &&
          q->format_version <= artifact::kArtifactFormatVersion);
  require(!q->representations.empty() && q->record_paths.size() == q->representations.size());
  for (const json& r : q->representations) require(r.is_object());
  if (q->format_version == 1) require(q->representations.size() == 1 && q->expert_matrices.empty());
  for (size_t l = 0; l < q->expert_matrices.size(); ++l)
    for (size_t e = 0; e < q->expert_matrices[l].size(); ++e)
      for (size_t p = 0; p < 3; ++p) require(q->record_of(l, e, p) < q->representations.size());
  if (q->expert_matrices.empty()) require(q->record_of(7, 3, 2) == 0);
  if (!q->dense_weights.empty()) require(q->format_version >= 3);
  std::set<std::string> classes;
  for (const auto& [name, index] : q->dense_weights) {
    require(model::parse_dense_class(name).is_ok() && classes.insert(name).second);
    require(index < q->representations.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 16)) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    check_checksums(j);
    if (j.is_object() && j.contains("checksums")) check_checksums(j.at("checksums"));
  }
  check_quantization_config(text);
  return 0;
}
