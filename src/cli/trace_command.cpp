// `submoe trace record|stats|simulate`: record routing, its statistics and
// expert-cache replay.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/trace_replay_command.h"
#include "submoe/core/thread_pool.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/trace_recorder.h"
#include "submoe/offload/trace_stats.h"
#include "submoe/runtime/quantization_config.h"

namespace submoe::cli {
namespace {

using nlohmann::json;

// "0.25" (contains a '.') = fraction of all slots; "48" = a slot count.
Result<uint64_t> parse_capacity(const std::string& text, uint64_t total_slots) {
  try {
    size_t used = 0;
    if (text.find('.') != std::string::npos) {
      const double f = std::stod(text, &used);
      if (used != text.size() || !(f >= 0.0) || f > 1.0) return invalid_argument("capacity fraction must be in [0, 1]: " + text);
      return static_cast<uint64_t>(std::llround(f * double(total_slots)));
    }
    const long long n = std::stoll(text, &used);
    if (used != text.size() || n < 0) return invalid_argument("capacity must be a slot count >= 0: " + text);
    return static_cast<uint64_t>(n);
  } catch (const std::exception&) {
    return invalid_argument("cannot parse capacity '" + text + "'");
  }
}

void print_stats(const offload::RoutingTrace& trace, const offload::TraceStats& s, bool as_json) {
  if (as_json) {
    json j;
    j["tokens"] = trace.num_tokens();
    j["layers"] = trace.num_layers();
    j["experts"] = trace.num_experts();
    j["top_k"] = trace.top_k();
    j["mean_zipf_exponent"] = s.mean_zipf_exponent;
    j["mean_top_quartile_mass"] = s.mean_top_quartile_mass;
    j["mean_consecutive_reuse"] = s.mean_consecutive_reuse;
    json layers = json::array();
    for (const auto& l : s.layers) {
      json d;
      for (size_t i = 0; i < l.distinct_per_batch.size(); ++i)
        d[std::to_string(offload::kStatsBatchSizes[i])] = l.distinct_per_batch[i];
      layers.push_back({{"popularity", l.counts}, {"zipf_exponent", l.zipf_exponent},
                        {"top_quartile_mass", l.top_quartile_mass}, {"consecutive_reuse", l.consecutive_reuse},
                        {"distinct_experts_per_batch", d}});
    }
    j["per_layer"] = layers;
    std::cout << j.dump() << "\n";
    return;
  }
  std::printf("trace: %llu tokens, %u layers, %u experts, top-%u\n", static_cast<unsigned long long>(trace.num_tokens()),
              trace.num_layers(), trace.num_experts(), trace.top_k());
  std::printf("%5s %8s %9s %7s %8s %8s %8s %8s\n", "layer", "zipf_s", "top25%", "reuse", "B=1", "B=4", "B=16", "B=64");
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const auto& x = s.layers[l];
    std::printf("%5zu %8.3f %8.1f%% %6.1f%%", l, x.zipf_exponent, 100 * x.top_quartile_mass, 100 * x.consecutive_reuse);
    for (double d : x.distinct_per_batch) std::printf(" %8.2f", d);
    std::printf("\n");
  }
  std::printf("mean  %8.3f %8.1f%% %6.1f%%   (B = distinct experts per layer in a batch of B tokens)\n",
              s.mean_zipf_exponent, 100 * s.mean_top_quartile_mass, 100 * s.mean_consecutive_reuse);
}

struct RecordOptions {
  std::string model, text, out;
  size_t context = 512;
  size_t chunk = 128;
  uint64_t max_tokens = 0;
  int threads = 0;
  std::string execution = "fused";
  bool allow_extra_tensors = false;
  bool lossy_text = false;
  bool json = false;
  std::string predictions_out;
};

Status record(const RecordOptions& o) {
  if (o.threads < 0) return invalid_argument("--threads must be >= 0");
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  offload::TraceRecordOptions opt;
  opt.context = o.context;
  opt.prefill_chunk = o.chunk;
  opt.max_tokens = o.max_tokens;
  opt.lossy_text = o.lossy_text;
  opt.predictions_out = o.predictions_out;
  if (!o.predictions_out.empty() && o.predictions_out == o.out)
    return invalid_argument("--predictions-out must differ from --out");
  const bool tty = isatty(STDERR_FILENO) == 1;
  if (tty && !o.json)
    opt.progress = [](uint64_t done, uint64_t total) {
      std::fprintf(stderr, "\r[trace record] %llu / %llu tokens", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(total));
      if (done == total) std::fputc('\n', stderr);
    };
  runtime::ArtifactModelOptions load;
  SUBMOE_ASSIGN_OR_RETURN(load.execution, runtime::parse_execution_mode(o.execution));
  load.allow_unused_tensors = o.allow_extra_tensors;
  SUBMOE_ASSIGN_OR_RETURN(offload::TraceRecordSummary s,
                          offload::record_trace_file(o.model, o.text, o.out, opt, &pool, load));
  if (o.json) {
    const json j{{"out", o.out},           {"tokens", s.tokens},         {"text_tokens", s.text_tokens},
                 {"layers", s.layers},     {"experts", s.experts},       {"top_k", s.top_k},
                 {"windows", s.windows},   {"load_seconds", s.load_seconds}, {"seconds", s.record_seconds},
                 {"threads", threads},     {"artifact", s.artifact}};
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s: %llu tokens (of %llu in the text), %u MoE layers, %u experts, top-%u, %llu windows; "
                "recorded in %.2f s (%.1f tok/s), load %.2f s%s\n",
                o.out.c_str(), static_cast<unsigned long long>(s.tokens),
                static_cast<unsigned long long>(s.text_tokens), s.layers, s.experts, s.top_k, static_cast<unsigned long long>(s.windows), s.record_seconds,
                s.record_seconds > 0 ? static_cast<double>(s.tokens) / s.record_seconds : 0.0, s.load_seconds,
                s.artifact ? (std::string(", artifact with ") + runtime::execution_mode_name(load.execution) +
                              " experts").c_str()
                           : "");
  }
  return Status::ok();
}

void setup_trace(CLI::App& root) {
  auto* trace = root.add_subcommand("trace", "Routing traces: recording, statistics, expert-cache simulation and replay on an artifact");
  trace->require_subcommand(1);

  auto* rec = trace->add_subcommand("record",
      "Run a text through a model (Hugging Face checkpoint or compressed artifact) and record every\n"
      "token's chosen experts and routing weights in every MoE layer (format: docs/trace-format.md).\n"
      "The text is tokenized with the model's tokenizer.json (special tokens such as BOS added once, at\n"
      "the start), cut into windows of --ctx tokens that each start from an empty KV cache, and\n"
      "prefilled in chunks of --chunk tokens (the routing does not depend on --chunk). The trace is\n"
      "written atomically. Prints tokens, layers and seconds (or one JSON object with --json).");
  auto ro = std::make_shared<RecordOptions>();
  rec->add_option("--model", ro->model,
                  "Hugging Face checkpoint or compressed artifact directory (config.json, safetensors, tokenizer.json)")
      ->required();
  rec->add_option("--text", ro->text, "UTF-8 text file")->required();
  rec->add_option("--out", ro->out, "trace file to write")->required();
  rec->add_option("--ctx", ro->context, "window length in tokens (fresh KV cache per window)")->capture_default_str();
  rec->add_option("--chunk", ro->chunk, "tokens per prefill forward call")->capture_default_str();
  rec->add_option("--max-tokens", ro->max_tokens, "record at most this many tokens of the text; 0 = all")
      ->capture_default_str();
  rec->add_option("--threads", ro->threads, "worker threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  rec->add_option("--predictions-out", ro->predictions_out,
                  "also write pre-gating's predictions as a trace of the same layout: MoE layer m > 0 holds what\n"
                  "layer m's router chose on the hidden state of layer m - 1 (after its attention), layer 0 its\n"
                  "actual routing (for trace replay --prefetch-from pregate --predictions)");
  rec->add_flag("--lossy-text", ro->lossy_text, "read a text that is not valid UTF-8, each bad byte as U+FFFD");
  rec->add_flag("--allow-extra-tensors", ro->allow_extra_tensors,
                "record although the checkpoint holds tensors the model does not read (default: an error)");
  rec->add_option("--execution", ro->execution,
                  "artifacts only: 'fused' runs the experts' fused decode+matmul kernels on the packed codes;\n"
                  "'fused-bf16' the same with the expert inputs rounded to bf16; 'fused-int8' with them\n"
                  "quantized to int8 per token; 'reference' decodes every\n"
                  "expert once at load to dense f32 with the reference decoder")
      ->check(CLI::IsMember({"fused", "fused-bf16", "fused-int8", "reference"}))
      ->capture_default_str();
  rec->add_flag("--json", ro->json,
                "print {out, tokens, text_tokens, layers, experts, top_k, windows, load_seconds, seconds, threads,\n"
                "artifact}");
  rec->callback([ro] { report("trace record", record(*ro)); });

  auto* stats = trace->add_subcommand("stats",
      "Per-layer expert popularity, fitted Zipf exponent, mass of the top quartile of experts,\n"
      "consecutive-token reuse and distinct experts per layer for batches of 1, 4, 16, 64 tokens");
  static std::string stats_path;
  static bool stats_json = false;
  stats->add_option("trace", stats_path, "Trace file (from 'submoe trace record')")->required();
  stats->add_flag("--json", stats_json, "Print one JSON object instead of a table");
  stats->callback([] {
    auto t = offload::RoutingTrace::load(stats_path);
    if (!report("trace stats", t.status())) return;
    print_stats(*t, offload::compute_trace_stats(*t), stats_json);
  });

  setup_trace_replay(trace);

  auto* sim = trace->add_subcommand("simulate",
      "Replay a trace against one expert cache shared by all layers, in the true interleaved\n"
      "access order (token, layer, top-k choice). Pinned slots count a miss on first load.");
  static std::string sim_path, policy_name = "lru", capacity_text, profile_path;
  static bool sim_json = false;
  static double hybrid_fraction = 0.5;
  static uint64_t expert_bytes = 1;
  sim->add_option("trace", sim_path, "Trace file")->required();
  sim->add_option("--policy", policy_name,
                  "lru | lfu | pinned | hybrid | forecast (evicts the slot whose next use is forecast furthest away\n"
                  "from the layer order and the profile's pick and repeat probabilities) | belady (optimal offline bound)")
      ->capture_default_str();
  sim->add_option("--capacity", capacity_text,
                  "Cache size: a fraction of all expert slots if it contains '.', e.g. 0.25, else a slot count")
      ->required();
  sim->add_option("--profile", profile_path, "Trace whose popularity picks the pinned set and gives forecast's probabilities (default: the trace itself)");
  sim->add_option("--hybrid-pinned", hybrid_fraction, "Share of the capacity pinned by the hybrid policy")
      ->capture_default_str();
  sim->add_option("--expert-bytes", expert_bytes, "Bytes fetched per miss (for bytes_fetched)")->capture_default_str();
  sim->add_flag("--json", sim_json, "Print one JSON object: policy, capacity_slots, hit_rate, bytes_fetched, ...");
  sim->callback([] {
    auto t = offload::RoutingTrace::load(sim_path);
    if (!report("trace simulate", t.status())) return;
    auto policy = offload::parse_cache_policy(policy_name);
    if (!report("trace simulate", policy.status())) return;
    const uint64_t slots = uint64_t{t->num_layers()} * t->num_experts();
    auto cap = parse_capacity(capacity_text, slots);
    if (!report("trace simulate", cap.status())) return;
    offload::SimulationOptions opt;
    opt.policy = *policy;
    opt.capacity_slots = *cap;
    opt.hybrid_pinned_fraction = hybrid_fraction;
    opt.expert_bytes = expert_bytes;
    if (!profile_path.empty()) {
      auto profile = offload::RoutingTrace::load(profile_path);
      if (!report("trace simulate", profile.status())) return;
      opt.popularity = offload::expert_popularity(*profile);
      offload::ForecastProbabilities fp = offload::forecast_probabilities(*profile);
      opt.choose_probability = std::move(fp.choose);
      opt.repeat_probability = std::move(fp.repeat);
    }
    auto r = offload::simulate_cache(*t, opt);
    if (!report("trace simulate", r.status())) return;
    auto best_opt = opt;
    best_opt.policy = offload::CachePolicy::kBelady;
    auto best = offload::simulate_cache(*t, best_opt);
    if (!report("trace simulate", best.status())) return;
    if (sim_json) {
      json j{{"policy", policy_name}, {"capacity_slots", *cap}, {"total_slots", slots},
             {"capacity_fraction", slots ? double(*cap) / double(slots) : 0.0}, {"accesses", r->accesses},
             {"hits", r->hits}, {"misses", r->misses}, {"hit_rate", r->hit_rate()}, {"bytes_fetched", r->bytes_fetched},
             {"belady_hit_rate", best->hit_rate()}, {"layer_hits", r->layer_hits}, {"layer_misses", r->layer_misses}};
      std::cout << j.dump() << "\n";
    } else {
      std::printf("policy %s, capacity %llu of %llu slots (%.1f%%): hit rate %.2f%% (belady %.2f%%), %llu misses, %llu bytes fetched\n",
                  policy_name.c_str(), static_cast<unsigned long long>(*cap), static_cast<unsigned long long>(slots),
                  slots ? 100.0 * double(*cap) / double(slots) : 0.0, 100 * r->hit_rate(), 100 * best->hit_rate(),
                  static_cast<unsigned long long>(r->misses), static_cast<unsigned long long>(r->bytes_fetched));
    }
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("trace", setup_trace);
}  // namespace submoe::cli
