// The equal-size comparison of representations (seed 002, 0x0AB; `submoe
// compare`): one row per (representation, requested rate) with what the
// artifact, the held-out text, the loader, the compressor and the kernels
// measured, written as a markdown table, JSON and an SVG of held-out loss
// against effective bits (one line per representation).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace submoe::eval {

struct CompareRow {
  std::string repr;           // registry name, or "source" for the uncompressed model
  double requested_bits = 0;  // --bits given (0: the representation's default, or the source)
  double effective_bits = 0;  // the experts' ledger bits per weight (16 for a bf16 source)
  double nll = 0;             // held-out next-token loss, nats per token
  uint64_t artifact_bytes = 0;
  double load_peak_rss_mb = 0;      // `run`: load + a few decode steps
  double compress_seconds = 0;      // 0 for the source
  double compress_peak_rss_mb = 0;  // 0 for the source
  double gemv_b1_us = 0, gemv_b8_us = 0;  // the expert shape, batch 1 and 8 (0: not measured)
  double decode_tokens_per_s = 0;
  std::string error;  // non-empty: this row failed, and why (the other fields are 0)
};

struct CompareTable {
  std::string model, text;
  uint32_t expert_rows = 0, expert_cols = 0;  // the shape the kernels were timed at
  std::vector<CompareRow> rows;
};

std::string compare_markdown(const CompareTable& t);
nlohmann::json compare_json(const CompareTable& t);
// Held-out loss (y) against effective bits (x): a polyline and points per
// representation in rate order, the source as a dashed line; a legend. Failed
// rows are left out. A complete standalone SVG document.
std::string compare_svg(const CompareTable& t);

}  // namespace submoe::eval
