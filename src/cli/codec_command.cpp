// `submoe codec synth`: encode i.i.d. ternary data, check the round trip, print
// the ledger. `submoe codec dict`: build, inspect, save or check a dictionary.
// `submoe codec rvq-synth`: the residual vector quantization rate-distortion
// experiment on Gaussian data (docs/rvq.md).
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "cli/codec_subcommands.h"
#include "cli/command.h"
#include "submoe/codec/rvq.h"
#include "submoe/codec/ternary_dict.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"

namespace submoe::cli {
namespace {

using namespace submoe::ternary;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of the whole process: on a loaded machine wall time overstates the
// work, and with one thread this is the encoder's own time.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct SynthOptions {
  double p0 = kQmoeDefaultP0;
  uint32_t rows = 2048;
  uint32_t cols = 8192;
  std::string code = "qmoe";
  bool fit_p0 = false;
  double dict_p0 = kQmoeDefaultP0;
  uint64_t seed = 1;
  int threads = 1;
  uint64_t amortize = 0;
  bool json = false;
};

// i.i.d. symbols with P(0) = p0, P(1) = P(2) = (1 - p0) / 2, and random bf16
// scales w_min in [-0.1, -0.001], w_max in [0.001, 0.1]. The generator is
// spelled out (not std:: distributions) so a seed means the same data anywhere.
void synth_data(const SynthOptions& o, std::vector<uint8_t>& symbols, std::vector<RowScales>& scales) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  symbols.resize(static_cast<size_t>(o.rows) * o.cols);
  for (uint8_t& s : symbols) {
    const uint64_t r = rng();
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    s = u < o.p0 ? kSymbolZero : ((r & 1) ? kSymbolMin : kSymbolMax);
  }
  scales.resize(o.rows);
  for (RowScales& s : scales) {
    s.w_min = float_to_bf16(static_cast<float>(-(0.001 + 0.099 * uniform())));
    s.w_max = float_to_bf16(static_cast<float>(0.001 + 0.099 * uniform()));
  }
}

Status run_synth(const SynthOptions& o) {
  DictKind kind;
  if (!parse_dict_kind(o.code, &kind)) return invalid_argument("--code must be qmoe or tunstall, got '" + o.code + "'");
  if (!(o.p0 >= 0.0 && o.p0 <= 1.0)) return invalid_argument("--p0 must be in [0, 1]");
  if (o.threads < 1) return invalid_argument("--threads must be >= 1");

  std::vector<uint8_t> symbols;
  std::vector<RowScales> scales;
  synth_data(o, symbols, scales);

  const double dict_p0 = o.fit_p0 ? fit_p0(symbols) : o.dict_p0;
  auto t0 = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(TernaryDictionary dict, build_dictionary(kind, dict_p0));
  const double dict_ms = ms_since(t0);

  ThreadPool pool(o.threads);
  t0 = Clock::now();
  const double cpu0 = process_cpu_ms();
  SUBMOE_ASSIGN_OR_RETURN(PackedTernaryMatrix packed, encode_ternary(symbols, o.rows, o.cols, scales, dict, &pool));
  const double encode_ms = ms_since(t0);
  const double encode_cpu_ms = process_cpu_ms() - cpu0;

  t0 = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(std::vector<uint8_t> decoded, decode_symbols(packed.view()));
  const double decode_ms = ms_since(t0);
  SUBMOE_ASSIGN_OR_RETURN(std::vector<float> values, decode_to_float(packed.view()));
  bool roundtrip_ok = decoded == symbols;
  for (size_t i = 0; roundtrip_ok && i < values.size(); ++i) {
    roundtrip_ok = values[i] == ternary_level(symbols[i], scales[i / o.cols]);
  }

  LedgerOptions lo;
  lo.dictionary_amortization_weights = o.amortize;
  SUBMOE_ASSIGN_OR_RETURN(TernaryLedger l, compute_ledger(packed.view(), lo));
  const double weights = static_cast<double>(l.weights);
  const double encode_mw_s = encode_ms > 0 ? weights / (encode_ms * 1e3) : 0.0;
  const double encode_mw_cpu_s = encode_cpu_ms > 0 ? weights / (encode_cpu_ms * 1e3) : 0.0;

  if (o.json) {
    nlohmann::json j = {
        {"code", o.code},
        {"rows", o.rows},
        {"cols", o.cols},
        {"weights", l.weights},
        {"p0", o.p0},
        {"p0_observed", l.p0_observed},
        {"dict_p0", dict_p0},
        {"fit_p0", o.fit_p0},
        {"seed", o.seed},
        {"threads", o.threads},
        {"num_codes", l.num_codes},
        {"bits_per_weight", l.bits_per_weight},
        {"stream_bits_per_weight", l.stream_bits_per_weight},
        {"metadata_bits_per_weight", l.metadata_bits_per_weight},
        {"dictionary_bits_per_weight", l.dictionary_bits_per_weight},
        {"bits_per_weight_standalone_dict", l.bits_per_weight_standalone_dict},
        {"entropy_bits_per_weight", l.entropy_bits_per_weight},
        {"weights_per_codeword", l.weights_per_codeword},
        {"compression_vs_bf16", l.compression_vs_bf16},
        {"codeword_bytes", l.codeword_bytes},
        {"row_offset_bytes", l.row_offset_bytes},
        {"scale_bytes", l.scale_bytes},
        {"padding_bytes", l.padding_bytes},
        {"dictionary_bytes", l.dictionary_bytes},
        {"dictionary_amortization_weights", o.amortize},
        {"tail_symbols", l.tail_symbols},
        {"dict_build_ms", dict_ms},
        {"encode_ms", encode_ms},
        {"encode_mweights_per_s", encode_mw_s},
        {"encode_cpu_ms", encode_cpu_ms},
        {"encode_mweights_per_cpu_s", encode_mw_cpu_s},
        {"decode_reference_ms", decode_ms},
        {"roundtrip_ok", roundtrip_ok},
    };
    std::cout << j.dump() << "\n";
  } else {
    std::printf("codec synth: %s code, %u x %u i.i.d. ternary weights, p0 %.4f (observed %.4f), seed %llu\n",
                o.code.c_str(), o.rows, o.cols, o.p0, l.p0_observed, static_cast<unsigned long long>(o.seed));
    std::printf("  dictionary        p0 %.6f%s, built in %.1f ms\n", dict_p0, o.fit_p0 ? " (fitted)" : "", dict_ms);
    std::printf("  %-34s %12s %10s\n", "ledger", "bytes", "bits/w");
    auto row = [&](const char* name, double bytes) {
      std::printf("  %-34s %12.0f %10.4f\n", name, bytes, weights > 0 ? 8.0 * bytes / weights : 0.0);
    };
    row("codewords (stream)", static_cast<double>(l.codeword_bytes));
    row("row offsets", static_cast<double>(l.row_offset_bytes));
    row("row scales", static_cast<double>(l.scale_bytes));
    row("padding (64-byte arrays)", static_cast<double>(l.padding_bytes));
    row("dictionary, amortized", l.dictionary_amortized_bytes);
    std::printf("  %-34s %12s %10.4f\n", "total (bits_per_weight)", "", l.bits_per_weight);
    std::printf("  %-34s %12llu %10.4f\n", "total with the dictionary alone", static_cast<unsigned long long>(l.dictionary_bytes),
                l.bits_per_weight_standalone_dict);
    std::printf("  entropy of the symbols   %.4f bits/weight (code is %.1f%% above it)\n", l.entropy_bits_per_weight,
                l.entropy_bits_per_weight > 0 ? 100.0 * (l.stream_bits_per_weight / l.entropy_bits_per_weight - 1) : 0.0);
    std::printf("  weights per codeword     %.3f (%llu symbols past row ends)\n", l.weights_per_codeword,
                static_cast<unsigned long long>(l.tail_symbols));
    std::printf("  compression vs bf16      %.2fx\n", l.compression_vs_bf16);
    std::printf("  encode                   %.1f ms on %d thread(s), %.1f Mweights/s (%.1f per CPU-second)\n", encode_ms,
                o.threads, encode_mw_s, encode_mw_cpu_s);
    std::printf("  reference decode         %.1f ms\n", decode_ms);
    std::printf("  round trip               %s\n", roundtrip_ok ? "ok" : "FAILED");
  }
  if (!roundtrip_ok) return internal_error("round trip through the reference decoder changed the matrix");
  return Status::ok();
}

void setup_synth(CLI::App& codec) {
  auto o = std::make_shared<SynthOptions>();
  auto* cmd = codec.add_subcommand(
      "synth",
      "Encode an i.i.d. ternary matrix (P(0) = p0, P(w_min) = P(w_max) = (1 - p0)/2, random bf16 row scales),\n"
      "decode it with the reference decoder, and print the ledger. Exit status 1 when the round trip fails.\n"
      "Output: a table, or with --json one JSON object with bits_per_weight (codewords + row offsets + scales\n"
      "+ 64-byte padding + the dictionary's amortized share, 0 by default: one table shared by a whole model),\n"
      "stream_bits_per_weight, metadata_bits_per_weight, bits_per_weight_standalone_dict (the 512 KiB table\n"
      "counted in full against this matrix), dictionary_bytes, entropy_bits_per_weight (i.i.d. entropy of the\n"
      "symbol histogram), weights_per_codeword, compression_vs_bf16 (16 / bits_per_weight), encode_ms and\n"
      "encode_mweights_per_s (wall clock), encode_cpu_ms and encode_mweights_per_cpu_s (process CPU time),\n"
      "dict_build_ms, roundtrip_ok and the byte counts.");
  cmd->add_option("--p0", o->p0, "Probability of a zero weight in the generated data")->capture_default_str();
  cmd->add_option("--rows", o->rows, "Rows (output features)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--cols", o->cols, "Columns (input features)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--code", o->code, "Dictionary code: qmoe (QMoE's pair dictionary) or tunstall (single trits)")
      ->capture_default_str()
      ->check(CLI::IsMember({"qmoe", "tunstall"}));
  cmd->add_flag("--fit-p0", o->fit_p0,
                "Build the dictionary for the p0 observed in the data instead of --dict-p0 (it then travels\n"
                "with the data: see bits_per_weight_standalone_dict)");
  cmd->add_option("--dict-p0", o->dict_p0, "p0 the dictionary is built for without --fit-p0 (QMoE's 0.885)")
      ->capture_default_str();
  cmd->add_option("--dict-amortize-weights", o->amortize,
                  "Weights sharing the dictionary; 0 = a whole large model (its share counts as 0)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed of the data")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Encoder threads")->capture_default_str()->check(thread_count(false));
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { report("codec synth", run_synth(*o)); });
}

struct DictOptions {
  std::string code = "qmoe";
  double p0 = kQmoeDefaultP0;
  std::string in;
  std::string out;
  bool raw = false;
  bool json = false;
};

Status run_dict(const DictOptions& o) {
  Result<TernaryDictionary> dict = invalid_argument("no dictionary");
  double build_ms = 0;
  if (!o.in.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(std::string bytes, io::read_file_to_string(o.in));
    auto t0 = Clock::now();
    dict = deserialize_dictionary({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    build_ms = ms_since(t0);
    if (!dict.is_ok()) return dict.status().with_context(o.in);
  } else {
    DictKind kind;
    if (!parse_dict_kind(o.code, &kind)) return invalid_argument("--code must be qmoe or tunstall");
    auto t0 = Clock::now();
    dict = build_dictionary(kind, o.p0);
    build_ms = ms_since(t0);
    SUBMOE_RETURN_IF_ERROR(dict.status());
  }
  const TernaryDictionary& d = *dict;
  uint64_t length_hist[kMaxWeightsPerEntry + 1] = {};
  for (const DictEntry& e : d.entry_span()) length_hist[entry_length(e)]++;
  if (!o.out.empty()) {
    std::vector<uint8_t> blob = serialize_dictionary(d);
    // --raw: the research layout, the table alone (drop the 32-byte header).
    const size_t skip = o.raw ? kDictHeaderBytes : 0;
    SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(
        o.out, std::string_view(reinterpret_cast<const char*>(blob.data()) + skip, blob.size() - skip)));
  }
  if (o.json) {
    nlohmann::json hist = nlohmann::json::object();
    for (uint32_t n = 1; n <= kMaxWeightsPerEntry; ++n) {
      if (length_hist[n]) hist[std::to_string(n)] = length_hist[n];
    }
    nlohmann::json j = {{"code", dict_kind_name(d.kind())}, {"p0", d.p0()},          {"entries", kDictEntries},
                        {"table_bytes", kDictTableBytes},    {"build_ms", build_ms}, {"trie_nodes", d.trie().size()},
                        {"max_entry_length", d.max_entry_length()}, {"entry_length_histogram", hist},
                        {"written", o.out}};
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s dictionary, p0 %.6f: %u entries (%zu bytes), %zu trie nodes, %s in %.1f ms\n", dict_kind_name(d.kind()),
                d.p0(), kDictEntries, kDictTableBytes, d.trie().size(), o.in.empty() ? "built" : "loaded and checked",
                build_ms);
    std::printf("  entries by length (weights):");
    for (uint32_t n = 1; n <= kMaxWeightsPerEntry; ++n) {
      if (length_hist[n]) std::printf(" %u:%llu", n, static_cast<unsigned long long>(length_hist[n]));
    }
    std::printf("\n");
    if (!o.out.empty()) std::printf("  written to %s%s\n", o.out.c_str(), o.raw ? " (raw table, no header)" : "");
  }
  return Status::ok();
}

void setup_dict(CLI::App& codec) {
  auto o = std::make_shared<DictOptions>();
  auto* cmd = codec.add_subcommand(
      "dict",
      "Build a dictionary (or load and check one with --in), print its size, build time and entry-length\n"
      "histogram (or one JSON object with --json), and optionally write it with --out: a dictionary blob\n"
      "(docs/format.md section 4: 32-byte header + 65536 entries), or with --raw the bare 512 KiB table as\n"
      "in QMoE's research format. Files are written atomically.");
  cmd->add_option("--code", o->code, "qmoe or tunstall")->capture_default_str()->check(CLI::IsMember({"qmoe", "tunstall"}));
  cmd->add_option("--p0", o->p0, "Zero probability the code is built for")->capture_default_str();
  cmd->add_option("--in", o->in, "Load and validate this dictionary blob instead of building one");
  cmd->add_option("--out", o->out, "Write the dictionary to this file");
  cmd->add_flag("--raw", o->raw, "With --out: write only the 65536 x 8-byte table");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { report("codec dict", run_dict(*o)); });
}

struct RvqSynthCliOptions {
  double bits = 0;
  uint32_t rows = 128;
  uint32_t cols = 4096;
  size_t train_vectors = 131072;
  size_t eval_train_vectors = 65536;
  uint32_t beam = 8;
  uint32_t train_beam = 1;
  uint32_t iters = 20;
  double tolerance = 1e-4;
  uint64_t seed = 1;
  int threads = 1;
  bool curve = false;
  bool json = false;
};

Status run_rvq_synth_command(const RvqSynthCliOptions& o) {
  const double half_steps = o.bits * 2.0;
  if (!(o.bits >= 0.5 && o.bits <= 4.0) || std::fabs(half_steps - std::round(half_steps)) > 1e-9) {
    return invalid_argument("--bits must be a multiple of 0.5 in [0.5, 4] (0.5 bits per stage), got " +
                            std::to_string(o.bits));
  }
  if (o.cols == 0 || o.cols % rvq::kRvqDim != 0) {
    return invalid_argument("--cols must be a positive multiple of 16 (the subvector size), got " +
                            std::to_string(o.cols));
  }
  if (o.rows == 0) return invalid_argument("--rows must be >= 1");
  if (o.train_vectors < rvq::kRvqEntries) return invalid_argument("--train-vectors must be >= 256");
  if (o.beam < 1 || o.beam > rvq::kRvqEntries) return invalid_argument("--beam must be in 1..256");
  if (o.train_beam < 1 || o.train_beam > rvq::kRvqEntries) return invalid_argument("--train-beam must be in 1..256");
  if (o.iters < 1) return invalid_argument("--iters must be >= 1");
  if (o.threads < 1) return invalid_argument("--threads must be >= 1");

  ThreadPool pool(o.threads);
  rvq::RvqSynthOptions so;
  so.stages = static_cast<uint32_t>(std::lround(half_steps));
  so.rows = o.rows;
  so.cols = o.cols;
  so.train_vectors = o.train_vectors;
  so.eval_train_vectors = o.eval_train_vectors;
  so.beam_width = o.beam;
  so.train_beam_width = o.train_beam;
  so.max_iterations = o.iters;
  so.tolerance = o.tolerance;
  so.seed = o.seed;
  so.curve = o.curve;
  so.pool = &pool;
  so.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  SUBMOE_ASSIGN_OR_RETURN(rvq::RvqSynthResult r, rvq::run_rvq_synth(so));

  auto point_json = [&](const rvq::RvqSynthPoint& p) {
    return nlohmann::json{
        {"stages", p.stages},
        {"bits_per_weight", p.bits_per_weight},
        {"code_bits_per_weight", p.code_bits_per_weight},
        {"mse", p.mse},
        {"mse_raw", p.mse_raw},
        {"mse_train", p.mse_train},
        {"gaussian_bound", p.gaussian_bound},
        {"lloyd_max_scalar_mse",
         p.lloyd_max_scalar_mse < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.lloyd_max_scalar_mse)},
        {"roundtrip_ok", p.roundtrip_ok},
        {"encode_seconds", p.encode_seconds},
    };
  };
  const rvq::RvqSynthPoint& last = r.points.back();
  const rvq::RvqLedger l = rvq::rvq_ledger(o.rows, o.cols, last.stages);
  bool roundtrip_ok = true;
  for (const rvq::RvqSynthPoint& p : r.points) roundtrip_ok = roundtrip_ok && p.roundtrip_ok;
  if (o.json) {
    nlohmann::json j = point_json(last);
    j["bits"] = o.bits;
    j["scale_bits_per_weight"] = l.scale_bits_per_weight;
    j["codebook_bytes"] = l.codebook_bytes;
    j["rows"] = o.rows;
    j["cols"] = o.cols;
    j["beam"] = o.beam;
    j["train_beam"] = o.train_beam;
    j["train_vectors"] = o.train_vectors;
    j["iters"] = o.iters;
    j["tolerance"] = o.tolerance;
    j["seed"] = o.seed;
    j["threads"] = o.threads;
    j["roundtrip_ok"] = roundtrip_ok;
    j["train_seconds"] = r.train_seconds;
    j["seconds"] = r.seconds;
    nlohmann::json stages = nlohmann::json::array();
    for (const rvq::RvqStageStats& st : r.train_stages) {
      stages.push_back({{"iterations", st.iterations},
                        {"empty_reseeds", st.empty_reseeds},
                        {"mse_before", st.mse_before},
                        {"mse_after", st.mse_after}});
    }
    j["train_stages"] = stages;
    if (o.curve) {
      nlohmann::json curve = nlohmann::json::array();
      for (const rvq::RvqSynthPoint& p : r.points) curve.push_back(point_json(p));
      j["curve"] = curve;
    }
    std::cout << j.dump() << "\n";
  } else {
    std::printf("codec rvq-synth: %u x %u N(0,1) matrix, codebooks trained on %zu vectors (%u Lloyd iterations max),\n"
                "  beam %u, seed %llu, %d thread(s); training %.1f s, total %.1f s\n",
                o.rows, o.cols, o.train_vectors, o.iters, o.beam, static_cast<unsigned long long>(o.seed), o.threads,
                r.train_seconds, r.seconds);
    std::printf("  %6s %8s %10s %10s %10s %10s %12s %6s\n", "bits", "bits/w", "mse", "mse_raw", "mse_train", "2^-2R",
                "lloyd-max", "rt");
    for (const rvq::RvqSynthPoint& p : r.points) {
      char lm[32] = "-";
      if (p.lloyd_max_scalar_mse >= 0) std::snprintf(lm, sizeof lm, "%.6f", p.lloyd_max_scalar_mse);
      std::printf("  %6.1f %8.4f %10.6f %10.6f %10.6f %10.6f %12s %6s\n", p.code_bits_per_weight, p.bits_per_weight,
                  p.mse, p.mse_raw, p.mse_train, p.gaussian_bound, lm, p.roundtrip_ok ? "ok" : "FAILED");
    }
  }
  if (!roundtrip_ok) return internal_error("the reference decoder disagrees with the encoder's reconstruction");
  return Status::ok();
}

void setup_rvq_synth(CLI::App& codec) {
  auto o = std::make_shared<RvqSynthCliOptions>();
  auto* cmd = codec.add_subcommand(
      "rvq-synth",
      "Residual vector quantization on Gaussian data (docs/rvq.md): train the global codebooks (k-means, 256\n"
      "entries of 16 weights per stage, stage by stage on residuals) on --train-vectors i.i.d. N(0,1) vectors\n"
      "(seed S), then code a fresh --rows x --cols N(0,1) matrix (seed S+1) with fp16 RMS row scales and\n"
      "S = 2 x bits stages, decode it with the reference decoder, and report the error. Progress goes to\n"
      "stderr. Exit status 1 when the reference decoder disagrees with the encoder.\n"
      "Output: a table, or with --json one JSON object for the requested rate: bits_per_weight (codes + fp16\n"
      "row scales: S/2 + 16/cols, the exact ledger; the codebooks, codebook_bytes, are shared by a whole\n"
      "artifact and not counted), code_bits_per_weight, scale_bits_per_weight, mse (||W - W'||^2 / ||W||^2 of\n"
      "the held-out matrix), mse_raw (mean squared error per weight of as many held-out raw vectors, seed S+2,\n"
      "without row scales), mse_train (the same on the first 65536 training vectors), gaussian_bound\n"
      "(2^(-2 R), the rate-distortion bound of a unit Gaussian), lloyd_max_scalar_mse (the optimal scalar\n"
      "quantizer at an integer rate, null otherwise), roundtrip_ok, the options (beam, train_beam,\n"
      "train_vectors, iters, tolerance, seed, threads, rows, cols), train_stages (per stage: iterations,\n"
      "empty_reseeds, mse_before, mse_after), train_seconds, seconds (whole run, wall clock) and, with\n"
      "--curve, curve: the same keys for every rate 0.5 .. bits from one training.");
  cmd->add_option("--bits", o->bits, "Code rate in bits per weight: a multiple of 0.5 in [0.5, 4] (stages = 2 x bits)")
      ->required();
  cmd->add_option("--rows", o->rows, "Rows of the held-out matrix")->capture_default_str();
  cmd->add_option("--cols", o->cols, "Columns of the held-out matrix, a multiple of 16")->capture_default_str();
  cmd->add_option("--train-vectors", o->train_vectors, "16-dim N(0,1) vectors the codebooks are trained on")
      ->capture_default_str();
  cmd->add_option("--beam", o->beam,
                  "Encoder beam width, 1..256 (1 = greedy; B keeps the B best partial sums per stage)")
      ->capture_default_str();
  cmd->add_option("--train-beam", o->train_beam,
                  "Encoder beam width that computes the training residuals (1 = greedy, measured as good)")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "Maximum Lloyd iterations per stage")->capture_default_str();
  cmd->add_option("--tol", o->tolerance, "Lloyd stops when the relative error improvement is below this")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the training data and k-means++ (held-out data: seed+1, seed+2)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (results are identical for any count)")
      ->capture_default_str()
      ->check(thread_count(false));
  cmd->add_flag("--curve", o->curve, "Report every rate from 0.5 to --bits (one training)");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { report("codec rvq-synth", run_rvq_synth_command(*o)); });
}

void setup_codec(CLI::App& root) {
  auto* codec = root.add_subcommand("codec", "Codecs: ternary dictionary rate checks and dictionaries, RVQ rate-distortion");
  codec->require_subcommand(1);
  setup_synth(*codec);
  setup_dict(*codec);
  setup_rvq_synth(*codec);
  setup_rvq_fit(*codec);
}

}  // namespace
SUBMOE_REGISTER_COMMAND("codec", setup_codec);
}  // namespace submoe::cli
