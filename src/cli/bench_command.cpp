// `submoe bench gemv`: dense f32, dense bf16 and a compressed kernel (the ternary
// dictionary code on synthetic ternary data, or with --repr NAME any registered
// representation through its LinearOp, runtime/repr_bench.h) on working sets
// larger than the last-level cache (src/kernels/gemv_bench.cpp).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/bench_subcommands.h"
#include "cli/command.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/thread_pool.h"
#include "submoe/codec/int_packed.h"
#include "submoe/kernels/gemv_bench.h"
#include "submoe/runtime/repr_bench.h"

namespace submoe::cli {
namespace {

using kernels::GemvBenchConfig;
using kernels::GemvBenchResult;
using kernels::GemvTiming;

struct GemvOptions {
  std::string shape = "2080x6144";
  uint32_t batch = 1;
  int threads = 1;
  double p0 = ternary::kQmoeDefaultP0;
  double dict_p0 = ternary::kQmoeDefaultP0;
  bool fit_p0 = false;
  std::string code = "qmoe";
  uint32_t iters = 100;
  uint32_t min_matrices = 64;
  double llc_factor = 2.0;
  std::string isa;
  bool no_dense = false;
  std::vector<uint32_t> int_bits = {2, 3, 4};
  uint32_t int_group = 128;
  bool no_int = false;
  std::string repr;  // empty: the built-in ternary dictionary bench
  std::optional<double> bits;
  std::optional<uint32_t> group_size;
  std::vector<std::string> repr_opts;
  std::string execution = "fused";  // --repr: the op's execution mode
  uint64_t seed = 1;
  bool json = false;
};

bool parse_shape(const std::string& s, uint32_t* rows, uint32_t* cols) {
  unsigned long r = 0, c = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%lux%lu%c", &r, &c, &tail) != 2 || r == 0 || c == 0 || r > (1ul << 24) ||
      c > (1ul << 24)) {
    return false;
  }
  *rows = static_cast<uint32_t>(r);
  *cols = static_cast<uint32_t>(c);
  return true;
}

nlohmann::json timing_json(const GemvTiming& t) {
  return {{"kernel", t.kernel},         {"median_us", t.median_us}, {"min_us", t.min_us},
          {"p90_us", t.p90_us},         {"cpu_median_us", t.cpu_median_us}, {"samples", t.samples},     {"matrices", t.matrices},
          {"bytes_per_matrix", t.bytes_per_matrix}};
}

Status run_gemv(const GemvOptions& o) {
  GemvBenchConfig c;
  if (!parse_shape(o.shape, &c.rows, &c.cols)) {
    return invalid_argument("--shape must be RxC with positive rows and cols, got '" + o.shape + "'");
  }
  if (!ternary::parse_dict_kind(o.code, &c.code)) return invalid_argument("--code must be qmoe or tunstall");
  if (!(o.p0 >= 0.0 && o.p0 <= 1.0) || !(o.dict_p0 >= 0.0 && o.dict_p0 <= 1.0)) {
    return invalid_argument("--p0 and --dict-p0 must be in [0, 1]");
  }
  if (o.batch < 1 || o.batch > kernels::kMaxKernelBatch) return invalid_argument("--batch must be in 1..64");
  if (!(o.llc_factor >= 0.0)) return invalid_argument("--llc-factor must be >= 0");
  c.isa = best_isa();
  if (!o.isa.empty()) {
    if (!parse_isa(o.isa, &c.isa)) return invalid_argument("--isa must be scalar, avx2 or avx512");
    const CpuFeatures& f = cpu_features();
    if ((c.isa == Isa::kAvx512 && !f.avx512) || (c.isa == Isa::kAvx2 && !f.avx2)) {
      return unsupported(std::string("this CPU does not support ") + isa_name(c.isa));
    }
  }
  c.batch = o.batch;
  c.p0 = o.p0;
  c.dict_p0 = o.fit_p0 ? -1.0 : o.dict_p0;
  c.iters = o.iters;
  c.min_matrices = o.min_matrices;
  c.llc_factor = o.llc_factor;
  c.dense = !o.no_dense;
  c.int_bits = o.no_int ? std::vector<uint32_t>{} : o.int_bits;
  c.int_group = o.int_group;
  for (uint32_t b : c.int_bits) SUBMOE_RETURN_IF_ERROR(intn::check_int_params(b, c.int_group));
  c.seed = o.seed;
  const bool external = !o.repr.empty();
  if (!external && (o.bits || o.group_size || !o.repr_opts.empty() || o.execution != "fused"))
    return invalid_argument("--bits, --group-size, --repr-opt and --execution need --repr NAME");
  if (external && !o.isa.empty())
    return invalid_argument("--isa applies to the built-in ternary and dense kernels; --repr runs the "
                            "representation's LinearOp, which picks the best ISA itself");
  ThreadPool pool(o.threads);
  auto progress = [&](const std::string& s) {
    if (!o.json) std::cerr << "bench gemv: " << s << "\n";
  };
  if (external) {
    runtime::ReprBenchOptions ro;
    ro.repr.name = o.repr;
    ro.repr.bits = o.bits;
    ro.repr.group_size = o.group_size;
    for (const std::string& kv : o.repr_opts) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return invalid_argument("--repr-opt must be KEY=VALUE, got '" + kv + "'");
      ro.repr.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    ro.rows = c.rows;
    ro.cols = c.cols;
    ro.min_matrices = c.min_matrices;
    ro.llc_factor = c.llc_factor;
    ro.seed = c.seed;
    SUBMOE_ASSIGN_OR_RETURN(ro.mode, runtime::parse_execution_mode(o.execution));
    if (ro.mode == runtime::ExecutionMode::kReferenceDecode)
      return invalid_argument("--execution reference decodes to dense f32: the dense kernels are timed already");
    SUBMOE_ASSIGN_OR_RETURN(c.external, runtime::make_repr_bench_set(ro, progress));
    c.repr = kernels::BenchRepr::kExternal;
  }
  SUBMOE_ASSIGN_OR_RETURN(GemvBenchResult r, kernels::run_gemv_bench(c, &pool, progress));

  const double weights = static_cast<double>(c.rows) * c.cols;
  const double comp = r.compressed.median_us;
  nlohmann::json j;
  j["shape"] = o.shape;
  j["rows"] = c.rows;
  j["cols"] = c.cols;
  j["batch"] = c.batch;
  j["threads"] = r.threads;
  j["isa"] = isa_name(c.isa);
  if (!external) {
    j["code"] = o.code;
    j["p0"] = c.p0;
    j["dictionary_p0"] = r.dictionary_p0;
  }
  j["iters"] = c.iters;
  j["llc_bytes"] = r.llc_bytes;
  j["compressed_us"] = comp;
  j["compressed_kernel"] = r.compressed.kernel;
  j["compressed"] = timing_json(r.compressed);
  // The same matrices with bf16 activations (the dtype of a bf16 model's hidden
  // states): batch 1 takes the word-permute kernel where the CPU has VBMI.
  const double comp_bf16act = r.compressed_bf16act.median_us;
  j["repr"] = external ? o.repr : "ternary";
  // Weights of W streamed and decoded per second (a batch decodes each once).
  j["gweights_per_s"] = comp > 0 ? weights / comp * 1e-3 : 0.0;
  const double comp_i8act = r.compressed_i8act.median_us;
  if (external) {
    if (o.bits) j["bits"] = *o.bits;
    j["bits_per_weight"] = c.external->bits_per_weight;  // every packed field (shared tensors not counted)
  } else {
    j["compressed_bf16act_us"] = comp_bf16act;
    j["compressed_bf16act_kernel"] = r.compressed_bf16act.kernel;
    j["compressed_bf16act"] = timing_json(r.compressed_bf16act);
    // The same with the f32 activations quantized to int8 per token (one scale,
    // ActivationQuant::kInt8; the quantization is part of the timed call).
    j["compressed_i8act_us"] = comp_i8act;
    j["compressed_i8act_kernel"] = r.compressed_i8act.kernel;
    j["compressed_i8act"] = timing_json(r.compressed_i8act);
    j["bits_per_weight"] = r.ledger.bits_per_weight;
    j["stream_bits_per_weight"] = r.ledger.stream_bits_per_weight;
    j["weights_per_codeword"] = r.ledger.weights_per_codeword;
  }
  if (c.dense) {
    j["dense_f32_us"] = r.dense_f32.median_us;
    j["dense_bf16_us"] = r.dense_bf16.median_us;
    j["dense_f32"] = timing_json(r.dense_f32);
    j["dense_bf16"] = timing_json(r.dense_bf16);
    j["ratio_vs_bf16"] = r.dense_bf16.median_us > 0 ? comp / r.dense_bf16.median_us : 0.0;
    j["ratio_vs_f32"] = r.dense_f32.median_us > 0 ? comp / r.dense_f32.median_us : 0.0;
    if (!external) {
      j["ratio_vs_bf16_bf16act"] = r.dense_bf16.median_us > 0 ? comp_bf16act / r.dense_bf16.median_us : 0.0;
      j["ratio_vs_bf16_i8act"] = r.dense_bf16.median_us > 0 ? comp_i8act / r.dense_bf16.median_us : 0.0;
    }
    j["dense_bf16_gb_per_s"] = r.dense_bf16.median_us > 0 ? weights * 2 / r.dense_bf16.median_us * 1e-3 : 0.0;
  }
  nlohmann::json ints = nlohmann::json::array();
  for (const GemvBenchResult::IntTiming& it : r.ints) {
    nlohmann::json e = timing_json(it.timing);
    e["bits"] = it.bits;
    e["group_size"] = c.int_group;
    e["bits_per_weight"] = it.bits_per_weight;
    if (c.dense && r.dense_bf16.median_us > 0) e["ratio_vs_bf16"] = it.timing.median_us / r.dense_bf16.median_us;
    e["i8act"] = timing_json(it.timing_i8act);
    if (c.dense && r.dense_bf16.median_us > 0)
      e["i8act"]["ratio_vs_bf16"] = it.timing_i8act.median_us / r.dense_bf16.median_us;
    ints.push_back(e);
  }
  j["int"] = ints;
  if (c.batch > 1) {
    j["compressed_per_token_us"] = comp / c.batch;
    j["compressed_batch1_us"] = r.compressed_batch1.median_us;
    j["compressed_batch1"] = timing_json(r.compressed_batch1);
    j["per_token_ratio_vs_batch1"] =
        r.compressed_batch1.median_us > 0 ? comp / c.batch / r.compressed_batch1.median_us : 0.0;
    if (c.dense) {
      j["dense_f32_per_token_us"] = r.dense_f32.median_us / c.batch;
      j["dense_bf16_per_token_us"] = r.dense_bf16.median_us / c.batch;
    }
  }

  if (o.json) {
    std::cout << j.dump() << "\n";
    return Status::ok();
  }
  if (external) {
    std::printf("bench gemv %ux%u batch %u, %u thread(s), %s: %s, %.3f bits/weight (packed fields)\n", c.rows,
                c.cols, c.batch, r.threads, o.repr.c_str(), c.external->kernel.c_str(), c.external->bits_per_weight);
  } else {
    std::printf(
        "bench gemv %ux%u batch %u, %u thread(s), %s, %s code, data p0 %.3f (dictionary %.3f), %.3f bits/weight\n",
        c.rows, c.cols, c.batch, r.threads, isa_name(c.isa), o.code.c_str(), c.p0, r.dictionary_p0,
        r.ledger.bits_per_weight);
  }
  auto line = [&](const char* name, const GemvTiming& t) {
    std::printf("  %-11s %-36s median %8.1f us  min %8.1f  p90 %8.1f  cpu %8.1f us  (%u x %.1f MiB)\n", name,
                t.kernel.c_str(), t.median_us, t.min_us, t.p90_us, t.cpu_median_us, t.matrices,
                static_cast<double>(t.bytes_per_matrix) / (1 << 20));
  };
  if (c.dense) {
    line("dense f32", r.dense_f32);
    line("dense bf16", r.dense_bf16);
  }
  line("compressed", r.compressed);
  if (!external) {
    line("  bf16 x", r.compressed_bf16act);
    line("  int8 x", r.compressed_i8act);
  }
  for (const GemvBenchResult::IntTiming& it : r.ints) {
    line(("int" + std::to_string(it.bits) + " g" + std::to_string(c.int_group)).c_str(), it.timing);
    line("  int8 x", it.timing_i8act);
  }
  if (c.batch > 1) line("batch 1", r.compressed_batch1);
  std::printf("  compressed: %.2f Gweights/s", comp > 0 ? weights / comp * 1e-3 : 0.0);
  if (c.dense) {
    if (external) {
      std::printf(", %.3f x dense bf16, %.3f x dense f32", j["ratio_vs_bf16"].get<double>(),
                  j["ratio_vs_f32"].get<double>());
    } else {
      std::printf(", %.3f x dense bf16 (%.3f with bf16 activations, %.3f with int8), %.3f x dense f32",
                  j["ratio_vs_bf16"].get<double>(), j["ratio_vs_bf16_bf16act"].get<double>(),
                  j["ratio_vs_bf16_i8act"].get<double>(), j["ratio_vs_f32"].get<double>());
    }
  }
  if (c.batch > 1) std::printf(", per token %.3f x its batch-1 time", j["per_token_ratio_vs_batch1"].get<double>());
  std::printf("\n");
  return Status::ok();
}

void setup_gemv(CLI::App& bench) {
  auto o = std::make_shared<GemvOptions>();
  auto* cmd = bench.add_subcommand(
      "gemv",
      "Time Y = W X on a working set of distinct matrices larger than the last-level cache (cycled through,\n"
      "so every call streams its weights from DRAM, as the experts of an MoE layer do): dense f32, dense\n"
      "bf16 (random weights) and the compressed ternary kernel (i.i.d. ternary data at --p0, encoded with the\n"
      "--code dictionary), the compressed kernel with f32 activations, with bf16 activations, and with the\n"
      "f32 activations quantized to int8 per token in the call (one scale per token). The kernels\n"
      "are timed interleaved: --iters rounds (after 3 untimed ones) that each call every kernel once, so\n"
      "ratios compare calls made side by side; times are wall clock. The dense kernels take f32 activations\n"
      "(they are bound by streaming the weights; the activation type does not change their speed).\n"
      "Output: a table, or with --json one JSON object with dense_f32_us, dense_bf16_us, compressed_us\n"
      "(medians, microseconds per call of the whole batch), ratio_vs_bf16 (compressed / dense bf16),\n"
      "compressed_bf16act_us and ratio_vs_bf16_bf16act (the compressed kernel with bf16 activations),\n"
      "compressed_i8act_us and ratio_vs_bf16_i8act (with int8-quantized activations),\n"
      "ratio_vs_f32, gweights_per_s (rows x cols / compressed time), bits_per_weight (all metadata, the\n"
      "shared dictionary amortized), isa, threads, batch, kernel names, working-set sizes, min/p90,\n"
      "cpu_median_us (CPU time of the calling thread: on a shared machine it leaves out time spent\n"
      "descheduled; with several threads it covers the caller's share of the rows), and for\n"
      "batch > 1 compressed_per_token_us, compressed_batch1_us and per_token_ratio_vs_batch1\n"
      "(compressed per-token time / compressed batch-1 time); \"int\": one entry per --int-bits with the\n"
      "n-bit kernel's timing, bits, group_size, bits_per_weight and ratio_vs_bf16, and under i8act the same\n"
      "matrices with the activations quantized to int8 in the call.\n"
      "--repr NAME [--bits R] [--group-size G] [--repr-opt KEY=VALUE ...]: the compressed kernel is\n"
      "that registered representation's fused LinearOp, as run and eval execute it (rotations included,\n"
      "the best ISA): one N(0, 0.02^2) matrix is encoded round-to-nearest as `compress --method rtn`\n"
      "would (codebooks trained first where the codec has them), then copied into a working set of\n"
      "distinct ops; f32 activations only (no bf16 / int8 variants, no n-bit kernels); the same keys,\n"
      "plus repr, bits and bits_per_weight (every packed field; shared tensors such as codebooks not\n"
      "counted). Unknown names and options the representation does not take are errors naming them.");
  cmd->add_option("--shape", o->shape, "Matrix shape RxC: rows (outputs) x cols (inputs)")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Tokens per call, 1..64")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (rows split across them)")
      ->capture_default_str()
      ->check(thread_count(false));
  cmd->add_option("--p0", o->p0, "Probability of a zero weight in the generated ternary data")->capture_default_str();
  cmd->add_option("--dict-p0", o->dict_p0, "p0 the dictionary is built for (QMoE's one table: 0.885)")
      ->capture_default_str();
  cmd->add_flag("--fit-p0", o->fit_p0, "Build the dictionary for --p0 instead of --dict-p0");
  cmd->add_option("--code", o->code, "Dictionary code: qmoe or tunstall")
      ->capture_default_str()
      ->check(CLI::IsMember({"qmoe", "tunstall"}));
  cmd->add_option("--iters", o->iters, "Timed calls per kernel")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--min-matrices", o->min_matrices, "Working set: at least this many distinct matrices")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--llc-factor", o->llc_factor, "Working set: at least this many times the last-level cache")
      ->capture_default_str();
  cmd->add_option("--isa", o->isa, "Kernels to time: scalar, avx2 or avx512 (default: the best this CPU runs)");
  cmd->add_flag("--no-dense", o->no_dense, "Skip the dense baselines (they need 64 x rows x cols x 6 bytes)");
  cmd->add_option("--int-bits", o->int_bits, "n-bit kernels (GPTQ grids) to time next to the others: 2, 3, 4")
      ->capture_default_str()
      ->check(CLI::Range(2, 4));
  cmd->add_option("--int-group", o->int_group, "Group size of the n-bit grids (0 = one scale per row)")
      ->capture_default_str();
  cmd->add_flag("--no-int", o->no_int, "Skip the n-bit kernels");
  cmd->add_option("--repr", o->repr,
                  "A registered representation to time through its LinearOp instead of the built-in ternary "
                  "kernel bench (" + runtime::representation_names() + ", or an alias)");
  cmd->add_option("--bits", o->bits, "--repr: the representation's rate option (as compress --bits)");
  cmd->add_option("--group-size", o->group_size, "--repr: the representation's group size (as compress --group-size)");
  cmd->add_option("--repr-opt", o->repr_opts, "--repr: KEY=VALUE options of the representation (as compress --repr-opt)");
  cmd->add_option("--execution", o->execution,
                  "--repr: the op's execution mode, fused | fused-bf16 | fused-int8 (as run --execution)");
  cmd->add_option("--seed", o->seed, "Random seed of the data")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { report("bench gemv", run_gemv(*o)); });
}

void setup_bench(CLI::App& root) {
  auto* bench = root.add_subcommand("bench", "Kernel benchmarks with ratios against dense baselines in the same run");
  bench->require_subcommand(1);
  setup_gemv(*bench);
  setup_bench_serve(*bench);
  setup_bench_layer(*bench);
}

}  // namespace

SUBMOE_REGISTER_COMMAND("bench", setup_bench);

}  // namespace submoe::cli
