// `submoe bench serve`: the continuous-batching scheduler in process (no HTTP, no
// client sharing the cores): S concurrent greedy requests against one, the same
// engine in the same run, interleaved rounds, median aggregate tokens/s.
#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_subcommands.h"
#include "cli/command.h"
#include "cli/model_loading.h"
#include "submoe/core/clock.h"
#include "submoe/core/thread_pool.h"
#include "submoe/serve/engine.h"
#include "submoe/serve/scheduler.h"

namespace submoe::cli {
namespace {

struct BenchServeOptions {
  ModelFlags m;
  std::string streams = "1,8";
  int tokens = 64;
  int prompt_tokens = 16;
  int rounds = 3;
  int threads = 0;
  bool json = false;
};

struct RoundResult {
  double wall_seconds = 0;
  int64_t completion_tokens = 0;
  // Decode only: the tokens after each request's first, over the time from the
  // last first token to the end (all requests are submitted together).
  int64_t decode_tokens = 0;
  double decode_seconds = 0;
  double aggregate() const { return wall_seconds > 0 ? static_cast<double>(completion_tokens) / wall_seconds : 0; }
  double decode() const { return decode_seconds > 0 ? static_cast<double>(decode_tokens) / decode_seconds : 0; }
};

// One round: `streams` requests submitted at once, each with its own prompt
// (token ids of the model's vocabulary, distinct per request), all waited for.
Result<RoundResult> run_round(const serve::Engine& engine, ThreadPool* pool, int streams, const BenchServeOptions& o,
                              int round) {
  serve::SchedulerOptions so;
  so.max_batch = streams;
  so.max_queue = streams;
  serve::Scheduler scheduler(engine, pool, so);
  const int64_t vocab = engine.model().config().vocab_size;
  std::vector<std::shared_ptr<serve::RequestStream>> requests;
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < streams; ++s) {
    std::vector<int32_t> prompt;
    for (int k = 0; k < o.prompt_tokens; ++k)
      prompt.push_back(static_cast<int32_t>(
          (1009u * static_cast<uint64_t>(s + 1) + 7919u * static_cast<uint64_t>(k) +
           104729u * static_cast<uint64_t>(round + 2)) % static_cast<uint64_t>(vocab - 16) + 16));
    serve::GenerationParams p;
    p.max_tokens = o.tokens;
    p.ignore_eos = true;
    p.sampling.temperature = 0;
    SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<serve::RequestStream> r, scheduler.submit(std::move(prompt), p));
    requests.push_back(std::move(r));
  }
  RoundResult out;
  double last_first_token = 0, last_end = 0;
  for (auto& r : requests) {
    const serve::RequestUpdate u = r->wait();
    if (u.reason == serve::FinishReason::kError) return u.error;
    out.completion_tokens += u.completion_tokens;
    out.decode_tokens += std::max(0, u.completion_tokens - 1);
    last_first_token = std::max(last_first_token, u.first_token_seconds);
    last_end = std::max(last_end, u.total_seconds);
  }
  out.wall_seconds = seconds_since(t0);
  out.decode_seconds = last_end - last_first_token;
  return out;
}

Status bench_serve(const BenchServeOptions& o) {
  std::vector<int> counts;
  std::stringstream ss(o.streams);
  for (std::string item; std::getline(ss, item, ',');) {
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return invalid_argument("--streams must be a comma-separated list of integers in [1, 256], got '" + o.streams + "'");
    }
    if (v < 1 || v > 256) return invalid_argument("--streams must be within [1, 256]");
    counts.push_back(v);
  }
  if (counts.empty()) return invalid_argument("--streams is empty");
  if (o.tokens < 1 || o.prompt_tokens < 1 || o.rounds < 1)
    return invalid_argument("--tokens, --prompt-tokens and --rounds must be >= 1");
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<serve::Engine> engine, serve::Engine::load(o.m));
  ThreadPool pool(o.threads > 0 ? o.threads : hardware_threads());
  // rounds x counts, interleaved so drift (frequency, page cache) hits every count alike.
  std::vector<std::vector<double>> rates(counts.size()), decode_rates(counts.size());
  SUBMOE_ASSIGN_OR_RETURN(RoundResult warm, run_round(*engine, &pool, counts[0], o, -1));
  (void)warm;
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t c = 0; c < counts.size(); ++c) {
      SUBMOE_ASSIGN_OR_RETURN(RoundResult res, run_round(*engine, &pool, counts[c], o, r));
      rates[c].push_back(res.aggregate());
      decode_rates[c].push_back(res.decode());
      std::fprintf(stderr, "[bench serve] round %d/%d: %d streams %.1f tok/s (decode %.1f)\n", r + 1, o.rounds,
                   counts[c], res.aggregate(), res.decode());
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(rates[0]);
  const double decode_base = median(decode_rates[0]);
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    std::printf("%-8s %14s %14s %10s %14s %10s   (%d new tokens after %d prompt tokens, median of %d rounds%s)\n",
                "streams", "aggregate t/s", "per stream t/s", "vs first", "decode t/s", "vs first", o.tokens,
                o.prompt_tokens, o.rounds, offload_summary(engine->loaded()).c_str());
  for (size_t c = 0; c < counts.size(); ++c) {
    const double m = median(rates[c]);
    const double d = median(decode_rates[c]);
    rows.push_back({{"streams", counts[c]},
                    {"aggregate_tokens_per_s", m},
                    {"per_stream_tokens_per_s", m / counts[c]},
                    {"ratio_vs_first", base > 0 ? m / base : 0},
                    {"decode_tokens_per_s", d},
                    {"decode_ratio_vs_first", decode_base > 0 ? d / decode_base : 0}});
    if (!o.json)
      std::printf("%-8d %14.1f %14.1f %9.2fx %14.1f %9.2fx\n", counts[c], m, m / counts[c], base > 0 ? m / base : 0, d,
                  decode_base > 0 ? d / decode_base : 0);
  }
  if (o.json) {
    nlohmann::json j = {{"model", o.m.model},   {"tokens", o.tokens},   {"prompt_tokens", o.prompt_tokens},
                        {"rounds", o.rounds},   {"threads", pool.num_threads()}, {"results", rows},
                        {"offload", offload_json(engine->loaded(), o.m)}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  return Status::ok();
}

}  // namespace

void setup_bench_serve(CLI::App& bench) {
  auto o = std::make_shared<BenchServeOptions>();
  auto* cmd = bench.add_subcommand(
      "serve",
      "Continuous batching in process: for each count in --streams, that many concurrent greedy\n"
      "requests (distinct prompts, EOS ignored) through serve::Scheduler with --max-batch equal to\n"
      "the count; prints the median aggregate completion tokens/s over --rounds interleaved rounds\n"
      "and the ratio to the first count (wall time from submit to the last token, prefill included),\n"
      "and decode alone: the tokens after each request's first over the time from the last first\n"
      "token to the end.\n"
      "No HTTP and no client share the cores (tools/serve_load.py measures over loopback).");
  cmd->add_option("--model", o->m.model, "checkpoint or artifact directory")->required();
  cmd->add_option("--streams", o->streams, "comma-separated concurrent request counts")->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "new tokens per request")->capture_default_str();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt tokens per request")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "timed rounds per count (median reported)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads; 0 = all hardware threads")->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object instead of the table");
  add_model_flags(cmd, &o->m);
  cmd->callback([o] { report("bench serve", bench_serve(*o)); });
}

}  // namespace submoe::cli
