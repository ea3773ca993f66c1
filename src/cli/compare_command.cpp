// `submoe compare`: every requested representation at every requested rate on
// one model, measured side by side (seed 002, 0x0AB: compare at equal
// serialized size). Each step is this binary's own subcommand in a child
// process (compress, eval, run, bench gemv), so each peak RSS is that step's
// and a failing combination becomes a row that says why. Rows are saved as
// they finish (OUT/rows/), so an interrupted comparison continues where it
// stopped; the table is written atomically at the end.
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/repr_entries.h"
#include "cli/child_steps.h"
#include "cli/subprocess.h"
#include "submoe/eval/compare_report.h"
#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"

namespace submoe::cli {
namespace {

namespace fs = std::filesystem;

struct CompareOptions {
  std::string model, calib, text, out;
  std::string reprs = "int,rvq,e8p";
  std::string bits = "2,3,4";
  std::string method = "gptq";
  uint32_t group_size = 128;  // given to every representation that takes one (0: none)
  size_t samples = 0, seq_len = 0, ctx = 256, max_tokens = 0;  // 0: compress's own defaults
  uint32_t bench_iters = 20;
  double bench_llc_factor = 2;      // bench gemv's --llc-factor and --min-matrices defaults
  uint32_t bench_min_matrices = 64;
  bool no_bench = false;
  bool overwrite = false;
  int threads = 0;
};

class Comparison {
 public:
  Comparison(const CompareOptions& o, std::string self, uint32_t rows, uint32_t cols)
      : o_(o), self_(std::move(self)), rows_(rows), cols_(cols) {}

  // The measurements every row shares: eval, run, and (unless --no-bench) the kernels.
  Status measure(const std::string& model_dir, const std::vector<std::string>& bench_repr, eval::CompareRow* row) {
    std::vector<std::string> ev = {self_, "eval", "--model", model_dir, "--text", o_.text, "--ctx",
                                   std::to_string(o_.ctx), "--json", "--threads", std::to_string(o_.threads)};
    if (o_.max_tokens > 0) ev.insert(ev.end(), {"--max-tokens", std::to_string(o_.max_tokens)});
    SUBMOE_ASSIGN_OR_RETURN(nlohmann::json e, run_json(ev, "eval"));
    row->nll = json_number(e, "nll");
    SUBMOE_ASSIGN_OR_RETURN(nlohmann::json r, run_json({self_, "run", "--model", model_dir, "--prompt",
                                                        "The old prince said", "-n", "32", "--ignore-eos", "--json",
                                                        "--threads", std::to_string(o_.threads)},
                                                       "run"));
    row->load_peak_rss_mb = json_number(r, "peak_rss_mb");
    row->decode_tokens_per_s = json_number(r, "decode_tokens_per_s");
    if (o_.no_bench) return Status::ok();
    for (uint32_t batch : {1u, 8u}) {
      std::vector<std::string> b = {self_, "bench", "gemv", "--shape", std::to_string(rows_) + "x" + std::to_string(cols_),
                                    "--batch", std::to_string(batch), "--iters", std::to_string(o_.bench_iters),
                                    "--threads", "1", "--llc-factor", std::to_string(o_.bench_llc_factor),
                                    "--min-matrices", std::to_string(o_.bench_min_matrices), "--json"};
      b.insert(b.end(), bench_repr.begin(), bench_repr.end());
      SUBMOE_ASSIGN_OR_RETURN(nlohmann::json j, run_json(b, "bench gemv"));
      const double us = bench_repr.empty() ? json_number(j, "dense_bf16_us") : json_number(j, "compressed_us");
      (batch == 1 ? row->gemv_b1_us : row->gemv_b8_us) = us;
    }
    return Status::ok();
  }

  eval::CompareRow source() {
    eval::CompareRow row;
    row.repr = "source";
    auto cfg = io::load_hf_config((fs::path(o_.model) / "config.json").string());
    row.effective_bits = cfg.is_ok() && cfg->dtype == "float32" ? 32 : 16;
    uint64_t bytes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(o_.model, ec))
      if (e.path().extension() == ".safetensors") bytes += e.file_size(ec);
    row.artifact_bytes = bytes;
    const Status st = measure(o_.model, {}, &row);
    if (!st.is_ok()) row.error = st.message();
    return row;
  }

  eval::CompareRow compressed(const std::string& entry, double bits) {
    eval::CompareRow row;
    row.repr = entry;
    row.requested_bits = bits;
    const fs::path art = fs::path(o_.out) / "artifacts" / file_label(entry + "-" + format_bits(bits));
    auto parsed = parse_repr_entry(entry);  // checked before the first row
    const ReprEntry e = parsed.is_ok() ? *parsed : ReprEntry{entry, {}};
    const std::string& repr = e.name;
    std::vector<std::string> c = {self_, "compress", "--model", o_.model, "--calib", o_.calib, "--out", art.string(),
                                  "--repr", repr, "--method", o_.method, "--json", "--quiet", "--overwrite",
                                  "--threads", std::to_string(o_.threads)};
    if (o_.samples > 0) c.insert(c.end(), {"--samples", std::to_string(o_.samples)});
    if (o_.seq_len > 0) c.insert(c.end(), {"--seq-len", std::to_string(o_.seq_len)});
    std::vector<std::string> bench = {"--repr", repr};
    for (const auto& [k, v] : e.options) {
      c.insert(c.end(), {"--repr-opt", k + "=" + v});
      bench.insert(bench.end(), {"--repr-opt", k + "=" + v});
    }
    if (bits > 0) {
      c.insert(c.end(), {"--bits", format_bits(bits)});
      bench.insert(bench.end(), {"--bits", format_bits(bits)});
    }
    if (takes_group_size(e, bits, o_.group_size)) {
      c.insert(c.end(), {"--group-size", std::to_string(o_.group_size)});
      bench.insert(bench.end(), {"--group-size", std::to_string(o_.group_size)});
    }
    auto s = run_json(c, "compress");
    if (!s.is_ok()) {
      row.error = s.status().message();
      return row;
    }
    row.effective_bits = json_number(*s, "expert_bits_per_weight");
    row.compress_seconds = json_number(*s, "seconds");
    row.compress_peak_rss_mb = json_number(*s, "peak_rss_mb");
    row.artifact_bytes = directory_bytes(art.string());
    const Status st = measure(art.string(), bench, &row);
    if (!st.is_ok()) row.error = st.message();
    return row;
  }

 private:
  const CompareOptions& o_;
  std::string self_;
  uint32_t rows_, cols_;
};

nlohmann::json row_to_json(const eval::CompareRow& r) {
  return {{"repr", r.repr}, {"requested_bits", r.requested_bits}, {"effective_bits", r.effective_bits},
          {"nll", r.nll}, {"artifact_bytes", r.artifact_bytes}, {"load_peak_rss_mb", r.load_peak_rss_mb},
          {"compress_seconds", r.compress_seconds}, {"compress_peak_rss_mb", r.compress_peak_rss_mb},
          {"gemv_b1_us", r.gemv_b1_us}, {"gemv_b8_us", r.gemv_b8_us},
          {"decode_tokens_per_s", r.decode_tokens_per_s}, {"error", r.error}};
}

std::optional<eval::CompareRow> row_from_json(const nlohmann::json& j) {
  try {
    eval::CompareRow r;
    r.repr = j.at("repr").get<std::string>();
    r.requested_bits = j.at("requested_bits").get<double>();
    r.effective_bits = j.at("effective_bits").get<double>();
    r.nll = j.at("nll").get<double>();
    r.artifact_bytes = j.at("artifact_bytes").get<uint64_t>();
    r.load_peak_rss_mb = j.at("load_peak_rss_mb").get<double>();
    r.compress_seconds = j.at("compress_seconds").get<double>();
    r.compress_peak_rss_mb = j.at("compress_peak_rss_mb").get<double>();
    r.gemv_b1_us = j.at("gemv_b1_us").get<double>();
    r.gemv_b8_us = j.at("gemv_b8_us").get<double>();
    r.decode_tokens_per_s = j.at("decode_tokens_per_s").get<double>();
    r.error = j.at("error").get<std::string>();
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged saved row is measured again
  }
}

Status run_compare(const CompareOptions& o) {
  if (o.method != "gptq" && o.method != "rtn") return invalid_argument("--method must be gptq or rtn, got '" + o.method + "'");
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<std::string> reprs, parse_repr_list(o.reprs));
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<double> bits, parse_bits_list(o.bits));  // {0}: each one's default rate
  for (const std::string* f : {&o.calib, &o.text})
    if (!fs::is_regular_file(*f)) return not_found(*f + ": no such file");
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig cfg, io::load_hf_config((fs::path(o.model) / "config.json").string()));
  const auto rows = static_cast<uint32_t>(cfg.moe_intermediate_size > 0 ? cfg.moe_intermediate_size : cfg.intermediate_size);
  const auto cols = static_cast<uint32_t>(cfg.hidden_size);
  SUBMOE_ASSIGN_OR_RETURN(std::string self, self_executable());
  std::error_code ec;
  fs::create_directories(fs::path(o.out) / "rows", ec);
  if (ec) return io_error(o.out + ": " + ec.message());

  Comparison cmp(o, self, rows, cols);
  eval::CompareTable table;
  table.model = o.model;
  table.text = o.text;
  table.expert_rows = rows;
  table.expert_cols = cols;
  struct Item {
    std::string repr;
    double bits;
  };
  std::vector<Item> items = {{"source", 0}};
  for (const std::string& r : reprs)
    for (double b : bits) items.push_back({r, b});
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const std::string label = it.repr == "source" ? "source" : it.repr + "-" + format_bits(it.bits);
    const fs::path saved = fs::path(o.out) / "rows" / (file_label(label) + ".json");
    std::optional<eval::CompareRow> row;
    if (!o.overwrite && fs::exists(saved)) {
      if (auto j = load_saved_json(saved.string())) row = row_from_json(*j);
      if (row && !row->error.empty()) row.reset();  // a failed row is tried again
      if (row) std::cerr << "[" << i + 1 << "/" << items.size() << "] " << label << ": measured earlier (" << saved.string() << ")\n";
    }
    if (!row) {
      std::cerr << "[" << i + 1 << "/" << items.size() << "] " << label << " ..." << std::flush;
      row = it.repr == "source" ? cmp.source() : cmp.compressed(it.repr, it.bits);
      if (row->error.empty()) {
        std::cerr << " " << row->effective_bits << " bits, nll " << row->nll << "\n";
      } else {
        std::cerr << " failed: " << row->error << "\n";
      }
      SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(saved.string(), row_to_json(*row).dump(1) + "\n"));
    }
    table.rows.push_back(*row);
  }
  const fs::path out(o.out);
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / "compare.md").string(), eval::compare_markdown(table)));
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / "compare.json").string(), eval::compare_json(table).dump(1) + "\n"));
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((out / "compare.svg").string(), eval::compare_svg(table)));
  std::cout << eval::compare_markdown(table);
  std::cerr << "wrote " << (out / "compare.md").string() << ", compare.json, compare.svg\n";
  return Status::ok();
}

void setup(CLI::App& root) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = root.add_subcommand(
      "compare",
      "Compare representations at equal serialized size on one model (seed 002, 0x0AB): compress with each of\n"
      "--reprs at each of --bits (every combination; one the representation refuses becomes a row saying\n"
      "why), then per artifact: effective bits from its ledger, held-out loss on --text, artifact bytes,\n"
      "peak RSS of loading it and decoding 32 tokens (`run`), compression time and peak memory, the fused\n"
      "kernel's time at the model's expert shape (rows = expert width, cols = hidden) for batch 1 and 8\n"
      "(`bench gemv --repr`, one thread), and decode tokens/s; the source model is the first row.\n"
      "Every step runs as its own child process (this binary's compress / eval / run / bench). Rows are\n"
      "saved in OUT/rows/ as they finish, so an interrupted comparison continues (rows that failed, and\n"
      "with --overwrite every row, are measured again). Writes OUT/compare.md, OUT/compare.json and OUT/compare.svg (loss against effective bits,\n"
      "one line per representation); artifacts stay in OUT/artifacts/.");
  cmd->add_option("--model", o->model, "source checkpoint directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--calib", o->calib, "calibration text")->required();
  cmd->add_option("--text", o->text, "held-out text for the loss")->required();
  cmd->add_option("--out", o->out, "output directory")->required();
  cmd->add_option("--reprs", o->reprs,
                  "comma-separated registry names, each optionally with its own options as NAME:KEY=VALUE[:KEY=VALUE] "
                  "(given to compress and bench as --repr-opt; e.g. aqlm:shape=3x5)")->capture_default_str();
  cmd->add_option("--bits", o->bits, "comma-separated requested rates (empty: each representation's default)")
      ->capture_default_str();
  cmd->add_option("--method", o->method, "gptq or rtn")->capture_default_str();
  cmd->add_option("--group-size", o->group_size,
                  "columns per scale group, given to every representation whose options take a group size at\n"
                  "that rate (int: GPTQ int g128 is the usual reference; nf4: its block); 0 = each one's default")
      ->capture_default_str();
  cmd->add_option("--samples", o->samples, "calibration samples per compress (default: compress's)");
  cmd->add_option("--seq-len", o->seq_len, "tokens per calibration sample (default: compress's)");
  cmd->add_option("--ctx", o->ctx, "eval context")->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "eval at most this many tokens (0 = the whole text)")->capture_default_str();
  cmd->add_option("--bench-iters", o->bench_iters, "rounds of bench gemv per kernel")->capture_default_str()->check(CLI::Range(1u, 100000u));
  cmd->add_option("--bench-llc-factor", o->bench_llc_factor,
                  "bench gemv's working set: at least this many times the last-level cache, so weights stream\n"
                  "from DRAM as an MoE layer's experts do (below 1 they come from cache: a quick check only)")
      ->capture_default_str()->check(CLI::Range(0.0, 64.0));
  cmd->add_option("--bench-min-matrices", o->bench_min_matrices, "bench gemv's working set: at least this many distinct matrices")
      ->capture_default_str()->check(CLI::Range(1u, 100000u));
  cmd->add_flag("--no-bench", o->no_bench, "skip the kernel timings");
  cmd->add_flag("--overwrite", o->overwrite, "measure every row again (else rows saved in OUT/rows/ are reused)");
  cmd->add_option("--threads", o->threads, "worker threads of each step; 0 = all hardware threads")
      ->capture_default_str()->check(thread_count(true));
  cmd->callback([o] { report("compare", run_compare(*o)); });
}

SUBMOE_REGISTER_COMMAND("compare", setup);

}  // namespace
}  // namespace submoe::cli
