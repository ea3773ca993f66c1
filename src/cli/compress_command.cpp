// `submoe compress`: a Hugging Face MoE checkpoint -> a compressed artifact
// (calibration, batched GPTQ over expert groups, sub-1-bit ternary code or
// n-bit packing). The pipeline lives in src/calib; this file parses and prints.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "cli/command.h"
#include "submoe/calib/compress.h"
#include "submoe/runtime/representation.h"

namespace submoe::cli {
namespace {

struct CompressCli {
  calib::CompressOptions o;
  std::string method = "gptq";
  std::string grid, repr, code;
  double bits = 0, dict_p0 = 0;
  uint32_t group_size = 0;
  CLI::Option *method_opt = nullptr, *grid_opt = nullptr, *repr_opt = nullptr, *bits_opt = nullptr, *group_opt = nullptr,
              *code_opt = nullptr, *p0_opt = nullptr, *samples_opt = nullptr;
  std::vector<int32_t> mask_ids;
  bool no_default_mask = false;
  std::vector<std::string> repr_opts;
  std::vector<std::string> dense_reprs;
  std::string alloc = "uniform";
  bool no_rht = false, no_ldl = false;
  std::string outliers;  // --outliers: = --repr-opt outliers=VALUE
  bool json = false;
  bool quiet = false;
};

std::string format_seconds(double s) {
  if (s < 0) return "?";
  char buf[32];
  if (s < 90)
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  else
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

void print_progress(const calib::Progress& p) {
  const double frac = p.layers == 0 ? 1.0
                                    : (static_cast<double>(p.layer) +
                                       (p.experts ? static_cast<double>(p.experts_done) / static_cast<double>(p.experts)
                                                  : 0.0)) /
                                          static_cast<double>(p.layers);
  const int width = 30, filled = static_cast<int>(frac * width + 0.5);
  std::fprintf(stderr, "\r[%.*s%*s] layer %zu/%zu %-8s experts %zu/%zu  elapsed %s  eta %s   ", filled,
               "##############################", width - filled, "", std::min(p.layer + 1, p.layers), p.layers,
               p.stage.c_str(), p.experts_done, p.experts, format_seconds(p.elapsed_s).c_str(),
               format_seconds(p.eta_s).c_str());
  if (p.stage == "assemble") std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

nlohmann::json summary_json(const calib::CompressSummary& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& r : s.layers)
    layers.push_back({{"layer", r.layer},
                      {"sparse", r.sparse},
                      {"seconds", r.seconds},
                      {"tokens_per_expert", {{"min", r.tokens_min}, {"mean", r.tokens_mean}, {"max", r.tokens_max}}},
                      {"natural_sparsity", r.sparsity_mean},
                      {"rtn_fallbacks", r.rtn_fallbacks},
                      {"relative_weight_error", {{"gate_up", r.weight_rel_error[0]}, {"down", r.weight_rel_error[1]}}},
                      {"relative_output_error", {{"gate_up", r.output_rel_error[0]}, {"down", r.output_rel_error[1]}}}});
  return {{"out", s.out_dir},
          {"expert_bits_per_weight", s.expert_bits_per_weight},
          {"model_bits_per_weight", s.model_bits_per_weight},
          {"compression_vs_bf16_experts", s.compression_vs_bf16_experts},
          {"compression_vs_bf16_model", s.compression_vs_bf16_model},
          {"natural_sparsity", s.natural_sparsity},
          {"rtn_fallbacks", s.rtn_fallbacks},
          {"expert_weights", s.expert_weights},
          {"expert_bytes", s.expert_bytes},
          {"dense_weights", s.dense_weights},
          {"dense_bytes", s.dense_bytes},
          {"calibration_tokens", s.calibration_tokens},
          {"masked_tokens", s.masked_tokens},
          {"resumed_layers", s.resumed_layers},
          {"seconds", s.seconds},
          {"peak_rss_mb", s.peak_rss_mb},
          {"layers", layers}};
}

void print_table(const calib::CompressSummary& s) {
  std::printf("%-6s %-7s %10s %22s %10s %9s\n", "layer", "type", "seconds", "tokens/expert min/mean/max",
              "sparsity", "rtn-fb");
  for (const auto& r : s.layers) {
    if (!r.sparse) {
      std::printf("%-6zu %-7s %10.2f\n", r.layer, "dense", r.seconds);
      continue;
    }
    char tok[64];
    std::snprintf(tok, sizeof(tok), "%zu/%.0f/%zu", r.tokens_min, r.tokens_mean, r.tokens_max);
    std::printf("%-6zu %-7s %10.2f %22s %9.1f%% %9zu\n", r.layer, "experts", r.seconds, tok, 100 * r.sparsity_mean,
                r.rtn_fallbacks);
  }
  std::printf("\nartifact            %s\n", s.out_dir.c_str());
  std::printf("experts             %.4f bits/weight, %.2fx smaller than bf16 (%llu weights, %llu bytes)\n",
              s.expert_bits_per_weight, s.compression_vs_bf16_experts,
              static_cast<unsigned long long>(s.expert_weights), static_cast<unsigned long long>(s.expert_bytes));
  std::printf("whole model         %.4f bits/weight, %.2fx smaller than bf16\n", s.model_bits_per_weight,
              s.compression_vs_bf16_model);
  std::printf("natural sparsity    %.2f%%\n", 100 * s.natural_sparsity);
  std::printf("RTN fallbacks       %zu\n", s.rtn_fallbacks);
  std::printf("calibration tokens  %zu (%zu masked)\n", s.calibration_tokens, s.masked_tokens);
  std::printf("time                %.1f s%s, peak RSS %.0f MB\n", s.seconds,
              s.resumed_layers ? (" (" + std::to_string(s.resumed_layers) + " layers resumed)").c_str() : "",
              s.peak_rss_mb);
}

// --repr NAME [--bits R] or the older --grid ternary|int2|int3|int4 spelling.
Result<runtime::ReprOptions> repr_options(const CompressCli& c) {
  runtime::ReprOptions r;
  if (c.grid_opt->count() && c.repr_opt->count())
    return invalid_argument("--grid and --repr are two spellings of one choice: give one");
  if (c.grid_opt->count()) {
    if (c.bits_opt->count()) return invalid_argument("--bits goes with --repr; --grid " + c.grid + " names its bits");
    SUBMOE_ASSIGN_OR_RETURN(r, runtime::options_from_grid_name(c.grid));
  } else {
    r.name = c.repr_opt->count() ? c.repr : "ternary_dict";
    if (c.bits_opt->count()) r.bits = c.bits;
  }
  if (c.group_opt->count()) r.group_size = c.group_size;
  if (c.code_opt->count()) r.code = c.code;
  if (c.p0_opt->count()) r.p0 = c.dict_p0;
  for (const std::string& kv : c.repr_opts) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("--repr-opt takes KEY=VALUE, got '" + kv + "'");
    r.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (c.no_rht) r.extra.emplace_back("rht", "off");
  if (!c.outliers.empty()) r.extra.emplace_back("outliers", c.outliers);
  return r;
}

// --dense-repr CLASS=NAME[,KEY=VALUE...]: NAME a registry name or alias with
// bits=, group_size=, code=, p0= and the representation's own keys; CLASS one
// of the dense classes, or "all" for attention, shared_expert, dense_mlp and
// lm_head (the routers only when named).
Result<std::vector<calib::DenseReprChoice>> dense_repr_choices(const std::vector<std::string>& specs) {
  std::vector<calib::DenseReprChoice> out;
  for (const std::string& spec : specs) {
    const std::string flag = "--dense-repr '" + spec + "'";
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return invalid_argument(flag + ": expected CLASS=REPRESENTATION[,KEY=VALUE...], e.g. attention=int,bits=4,group_size=32");
    runtime::ReprOptions r;
    std::string_view rest = std::string_view(spec).substr(eq + 1);
    for (size_t part = 0; !rest.empty(); ++part) {
      const size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (part == 0) {
        r.name = std::string(item);
        continue;
      }
      const size_t e = item.find('=');
      if (e == std::string_view::npos || e == 0 || e + 1 == item.size())
        return invalid_argument(flag + ": '" + std::string(item) + "' is not KEY=VALUE");
      const std::string key(item.substr(0, e)), value(item.substr(e + 1));
      auto number = [&](double* v) -> Status {
        char* end = nullptr;
        *v = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !std::isfinite(*v))
          return invalid_argument(flag + ": " + key + "=" + value + " is not a number");
        return Status::ok();
      };
      double v = 0;
      if (key == "bits") {
        SUBMOE_RETURN_IF_ERROR(number(&v));
        r.bits = v;
      } else if (key == "group_size" || key == "group-size") {
        SUBMOE_RETURN_IF_ERROR(number(&v));
        if (v < 0 || v != std::floor(v) || v > 1e9) return invalid_argument(flag + ": group_size=" + value + " is not a count");
        r.group_size = static_cast<uint32_t>(v);
      } else if (key == "code") {
        r.code = value;
      } else if (key == "p0" || key == "dict_p0") {
        SUBMOE_RETURN_IF_ERROR(number(&v));
        r.p0 = v;
      } else {
        r.extra.emplace_back(key, value);
      }
    }
    const std::string cls = spec.substr(0, eq);
    std::vector<model::DenseClass> classes;
    if (cls == "all") {
      classes = {model::DenseClass::kAttention, model::DenseClass::kSharedExpert, model::DenseClass::kDenseMlp,
                 model::DenseClass::kLmHead};
    } else {
      auto c = model::parse_dense_class(cls);
      if (!c.is_ok()) return c.status().with_context("--dense-repr");
      classes = {*c};
    }
    for (model::DenseClass c : classes) out.push_back({c, r, cls == "all"});
  }
  return out;
}

Status run_compress(CompressCli& c) {
  if (c.method == "gptq")
    c.o.method = calib::QuantMethod::kGptq;
  else if (c.method == "rtn")
    c.o.method = calib::QuantMethod::kRtn;
  else
    return invalid_argument("--method must be gptq or rtn, got '" + c.method + "'");
  SUBMOE_ASSIGN_OR_RETURN(c.o.repr, repr_options(c));
  SUBMOE_ASSIGN_OR_RETURN(c.o.alloc, calib::parse_rate_alloc(c.alloc));
  SUBMOE_ASSIGN_OR_RETURN(c.o.dense_reprs, dense_repr_choices(c.dense_reprs));
  c.o.require_samples = c.samples_opt != nullptr && c.samples_opt->count() > 0;
  if (c.no_ldl) {
    // Error feedback off: every block rounded from its own values (RTN on the
    // representation's code), the seed's "no LDL" ablation.
    if (c.method_opt->count() && c.method != "rtn") return invalid_argument("--no-ldl is --method rtn; not with --method " + c.method);
    c.o.method = calib::QuantMethod::kRtn;
  }
  c.o.mask_token_ids = c.mask_ids;
  c.o.default_mask = !c.no_default_mask;
  calib::ProgressFn progress;
  if (!c.quiet) progress = print_progress;
  SUBMOE_ASSIGN_OR_RETURN(calib::CompressSummary s, calib::compress_model(c.o, progress));
  if (c.json)
    std::cout << summary_json(s).dump() << "\n";
  else
    print_table(s);
  return Status::ok();
}

void setup(CLI::App& root) {
  auto c = std::make_shared<CompressCli>();
  CLI::App* cmd = root.add_subcommand(
      "compress",
      "Compress the routed experts of a Hugging Face MoE checkpoint into a submoe artifact (QMoE pipeline).\n"
      "Calibration text is run through the model layer by layer; each layer's experts are quantized with\n"
      "GPTQ (batched over expert groups) on the hidden states produced by the already compressed layers,\n"
      "then packed in the chosen representation (--repr): ternary_dict (the sub-1-bit dictionary code, default)\n"
      "or int (packed 2/3/4-bit codes).\n"
      "Attention, norms, routers, shared experts and embeddings keep their original dtype unless --dense-repr\n"
      "stores a class of them packed.\n"
      "Output: OUT/{config.json (with quantization_config), model.safetensors, tokenizer files,\n"
      "submoe_manifest.json (provenance + ledger), compress_report.json (timings)}. Progress is\n"
      "checkpointed after every layer in OUT/.submoe-work; after an interruption, --resume continues and\n"
      "produces a byte-identical artifact. See docs/compress.md.");
  cmd->add_option("--model", c->o.model_dir, "source checkpoint directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("--calib", c->o.calib_path, "UTF-8 calibration text file")->required();
  cmd->add_option("--out", c->o.out_dir, "artifact directory to write")->required();
  c->method_opt = cmd->add_option("--method", c->method, "gptq (Hessian-aware, default) or rtn (round to nearest)")
      ->capture_default_str();
  std::string repr_help = "representation of the routed experts (default ternary_dict); registered:";
  for (const runtime::Representation* r : runtime::representations()) repr_help += "\n  " + std::string(r->help());
  c->repr_opt = cmd->add_option("--repr", c->repr, repr_help);
  c->bits_opt = cmd->add_option("--bits", c->bits, "bits per weight of the representation (int: 2, 3 or 4)");
  c->grid_opt = cmd->add_option("--grid", c->grid,
                                "older spelling: ternary (= --repr ternary_dict) or int2|int3|int4 (= --repr int --bits N)");
  cmd->add_option("--repr-opt", c->repr_opts,
                  "KEY=VALUE option of the representation (repeatable), e.g. rvq's beam=8, train_vectors=65536,\n"
                  "iters=20, seed=1, rht=on|off; a representation refuses keys it does not know");
  cmd->add_option("--dense-repr", c->dense_reprs,
                  "CLASS=REPR[,KEY=VALUE...] (repeatable): store one class of dense projections in a representation\n"
                  "instead of its source dtype, round to nearest; CLASS: attention, shared_expert, dense_mlp, lm_head,\n"
                  "router, or all (those of the first four the model has); REPR and keys as --repr (bits=, group_size=, code=, p0=, its own),\n"
                  "e.g. all=int,bits=4,group_size=32 or attention=ternary_dict. Token embeddings stay in their dtype.\n"
                  "Default: every dense weight in its source dtype (QMoE's choice)");
  cmd->add_option("--alloc", c->alloc,
                  "per-expert rates from routing popularity, on the representation's rate ladder (rvq: 0.5-bit\n"
                  "steps, int: 2/3/4 bits), each layer's mean rate exactly --bits (docs/allocation.md):\n"
                  "  uniform    every expert at --bits (default)\n"
                  "  thirds     most-routed third of each layer +1 step, least-routed third -1 step\n"
                  "  waterfill  r_e = r + 1/2 log2(pi_e / geometric mean), rounded to the ladder")
      ->capture_default_str();
  cmd->add_option("--popularity", c->o.popularity_path,
                  "routing trace (submoe trace record) whose counts drive --alloc; default: the source model's\n"
                  "routing on the calibration windows")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--no-rht", c->no_rht, "ablation: no incoherence rotation (= --repr-opt rht=off; rvq)");
  cmd->add_option("--outliers", c->outliers,
                  "FRACTION of weights kept as fp16 exceptions by magnitude (= --repr-opt outliers=FRACTION;\n"
                  "squeezellm; SqueezeLLM's 0.45% is --outliers 0.004 --repr-opt sensitive=0.0005)");
  cmd->add_flag("--no-ldl", c->no_ldl,
                "ablation: no error feedback, each block rounded from its own values (= --method rtn)");
  c->group_opt = cmd->add_option("--group-size", c->group_size,
                                 "int: columns per scale group (32, 64, 128); 0 = per row (default)");
  c->code_opt = cmd->add_option("--code", c->code,
                                "ternary_dict: dictionary code, qmoe (research-compatible, default) or tunstall");
  c->p0_opt = cmd->add_option("--dict-p0", c->dict_p0,
                              "ternary_dict: zero probability the dictionary is built for (default 0.885)");
  c->samples_opt = cmd->add_option("--samples", c->o.samples,
                                   "calibration samples (windows of --seq-len tokens, evenly spread); given "
                                   "explicitly, a text with fewer windows is an error (by default every window "
                                   "is used when there are fewer)")
                       ->capture_default_str();
  cmd->add_option("--seq-len", c->o.seq_len, "tokens per calibration sample")->capture_default_str();
  cmd->add_option("--damp", c->o.damp, "GPTQ dampening, as a fraction of mean(diag H)")->capture_default_str();
  cmd->add_option("--expert-group", c->o.expert_group, "experts quantized together as one batched computation")
      ->capture_default_str();
  cmd->add_option("--mask-token-ids", c->mask_ids,
                  "token ids kept out of the Hessians (they still run through the model); the config's\n"
                  "BOS/EOS/PAD ids are added unless --no-default-mask")
      ->delimiter(',');
  cmd->add_flag("--no-default-mask", c->no_default_mask, "do not mask the config's BOS/EOS/PAD ids");
  cmd->add_flag("--act-order", c->o.act_order, "GPTQ in order of decreasing Hessian diagonal (off: hurts ternary)");
  cmd->add_flag("--true-sequential", c->o.true_sequential,
                "down's Hessian from the compressed gate/up outputs (off, as in QMoE)");
  cmd->add_flag("--resume", c->o.resume, "continue an interrupted run from OUT/.submoe-work");
  cmd->add_flag("--overwrite", c->o.overwrite, "replace an artifact already in OUT");
  cmd->add_flag("--lossy-text", c->o.lossy_text,
                "read a calibration file that is not valid UTF-8, each bad byte as U+FFFD (default: an error)");
  cmd->add_flag("--allow-extra-tensors", c->o.allow_unused_tensors,
                "compress although the source holds tensors the model does not read (copied as they are)");
  cmd->add_option("--threads", c->o.threads, "worker threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--json", c->json, "print the summary as one JSON object");
  cmd->add_flag("--quiet", c->quiet, "no progress bar");
  cmd->callback([c] { report("compress", run_compress(*c)); });
}

SUBMOE_REGISTER_COMMAND("compress", setup);

}  // namespace
}  // namespace submoe::cli
