// `submoe run`: generate text from a prompt with a Hugging Face MoE checkpoint or
// a compressed submoe artifact.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <span>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_loading.h"
#include "submoe/core/clock.h"
#include "submoe/offload/routing_trace_collector.h"
#include "submoe/core/memory_usage.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/model/moe_model.h"
#include "submoe/serve/engine.h"
#include "submoe/serve/generate_one.h"
#include "submoe/serve/generation.h"

namespace submoe::cli {
namespace {

struct RunOptions {
  ModelFlags m;
  std::string prompt;
  std::string prompt_file;
  int prefill_chunk = 512;
  int max_new_tokens = 128;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  int threads = 0;
  bool ignore_eos = false;
  bool allow_long_context = false;
  bool json = false;
  std::string trace_out;
  bool prompt_given = false;  // --prompt was on the command line (it may be "")
  bool profile = false;
  bool lossy_text = false;
  bool chat = false;
  std::string system;
};

using Clock = std::chrono::steady_clock;

Status run(const RunOptions& o) {
  if (o.max_new_tokens < 0) return invalid_argument("-n must be >= 0");
  if (o.threads < 0) return invalid_argument("--threads must be >= 0");
  if (o.prefill_chunk < 1) return invalid_argument("--prefill-chunk must be at least 1");
  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(prompt, io::read_text_file(o.prompt_file, o.lossy_text));
  } else if (o.prompt.empty() && !o.prompt_given) {
    return invalid_argument("give the prompt with --prompt TEXT or --prompt-file FILE");
  }
  serve::GenerationParams params;
  params.max_tokens = o.max_new_tokens;
  params.sampling = {o.temperature, o.top_k, o.top_p, o.seed};
  params.ignore_eos = o.ignore_eos;
  params.allow_long_context = o.allow_long_context;
  SUBMOE_RETURN_IF_ERROR(serve::validate(params));

  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<serve::Engine> engine, serve::Engine::load(o.m));
  const serve::LoadedModel& loaded = engine->loaded();
  const model::MoeModel& m = engine->model();
  // The model's context (max_position_embeddings; 0 when config.json has none):
  // a prompt beyond it is refused, generation stops when it is full, unless
  // --allow-long-context.
  std::vector<int32_t> ids;
  if (o.chat) {
    // As /v1/chat/completions: the prompt is one user message (after --system),
    // rendered by the chat template with the generation prompt.
    const serve::ChatTemplate* t = engine->chat_template();
    if (!t) return engine->chat_template_status().with_context("--chat");
    serve::ChatTemplateInput input;
    if (!o.system.empty()) input.messages.push_back({{"role", "system"}, {"content", o.system}});
    input.messages.push_back({{"role", "user"}, {"content", prompt}});
    SUBMOE_ASSIGN_OR_RETURN(const std::string rendered, t->render(input));
    SUBMOE_ASSIGN_OR_RETURN(ids, engine->encode_chat_prompt(rendered, o.allow_long_context,
                                                            "; pass --allow-long-context to run it anyway"));
  } else {
    if (!o.system.empty()) return invalid_argument("--system needs --chat");
    SUBMOE_ASSIGN_OR_RETURN(ids, engine->encode_prompt(prompt, o.allow_long_context,
                                                       "; pass --allow-long-context to run it anyway"));
  }
  serve::Sequence sequence(*engine, ids, params);

  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  model::Session session(m, &pool);
  std::unique_ptr<offload::RoutingTraceCollector> collector;
  if (!o.trace_out.empty()) {
    collector = std::make_unique<offload::RoutingTraceCollector>(m.config());
    session.set_routing_observer([c = collector.get()](int layer, size_t first, const model::Routing& r) {
      c->observe(layer, first, r);
    });
  }
  // Up front for what is likely needed; the cache grows by doubling past it.
  session.reserve(ids.size() + std::min<size_t>(static_cast<size_t>(sequence.token_budget()), size_t{1} << 16));

  // --profile: the prefill and the decode steps timed by op class, apart.
  model::OpProfile prefill_profile, decode_profile;
  if (o.profile) {
    prefill_profile.attach_pool(&pool);
    session.set_profile(&prefill_profile);
  }
  std::string text;
  serve::GenerateOneOptions g;
  g.prefill_chunk = static_cast<size_t>(o.prefill_chunk);
  g.after_forward = [&]() -> Status { return collector ? collector->end_forward() : Status::ok(); };
  // The prompt in chunks of --prefill-chunk tokens: activation memory stays
  // bounded by the chunk (the KV cache holds the rest), and a long prompt
  // shows progress on a terminal.
  const auto t_prefill = Clock::now();
  if (!o.json && ids.size() > g.prefill_chunk && isatty(STDERR_FILENO) == 1)
    g.on_prefill_progress = [&](size_t done, size_t total) {
      std::fprintf(stderr, "\r[run] prefill %zu / %zu tokens (%.1f s)%s", done, total, seconds_since(t_prefill),
                   done == total ? "\n" : "");
    };
  g.on_decode_start = [&] {
    if (!o.profile) return;
    decode_profile.attach_pool(&pool);
    session.set_profile(&decode_profile);
  };
  g.sampling_profile = o.profile ? &decode_profile : nullptr;
  g.on_text = [&](std::string_view piece) {
    if (o.json) {
      text += piece;
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };
  SUBMOE_ASSIGN_OR_RETURN(serve::GenerateOneStats stats, serve::generate_one(session, sequence, g));
  const double load_s = engine->load_seconds();
  const char* stop = serve::finish_reason_name(sequence.finish_reason());
  const int generated = sequence.completion_tokens();
  auto rate = [](double n, double s) { return s > 0 ? n / s : 0.0; };
  if (collector) SUBMOE_RETURN_IF_ERROR(collector->trace().save(o.trace_out));
  if (o.json) {
    nlohmann::json j = {{"model", o.m.model},
                         {"artifact", loaded.artifact},
                         {"execution", loaded.execution},
                         {"text", text},
                         {"token_ids", sequence.output_ids()},
                         {"prompt_tokens", ids.size()},
                         {"generated", generated},
                         {"stop", stop},
                         {"load_seconds", load_s},
                         {"prefill_seconds", stats.prefill_seconds},
                         {"prefill_tokens_per_s", rate(static_cast<double>(ids.size()), stats.prefill_seconds)},
                         {"decode_steps", stats.decode_steps},
                         {"decode_seconds", stats.decode_seconds},
                         {"decode_tokens_per_s", rate(stats.decode_steps, stats.decode_seconds)},
                         {"threads", threads},
                         {"peak_rss_mb", peak_rss_mb()},
                         {"expert_cache", offload_json(loaded, o.m)}};
    if (o.profile) j["profile"] = {{"prefill", prefill_profile.to_json()}, {"decode", decode_profile.to_json()}};
    std::cout << j.dump() << "\n";
    return Status::ok();
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (o.profile) {
    std::fputs(prefill_profile.table("prefill").c_str(), stderr);
    std::fputs(decode_profile.table("decode").c_str(), stderr);
  }
  std::fprintf(stderr,
               "[run] %s: load %.2f s | prefill %zu tokens in %.3f s (%.1f tok/s) | decode %d tokens in %.3f s "
               "(%.1f tok/s) | %d generated, stop: %s | %d threads%s%s\n",
               o.m.model.c_str(), load_s, ids.size(), stats.prefill_seconds,
               rate(static_cast<double>(ids.size()), stats.prefill_seconds), stats.decode_steps, stats.decode_seconds,
               rate(stats.decode_steps, stats.decode_seconds), generated, stop, threads,
               loaded.artifact ? (" | artifact, " + loaded.execution + " experts").c_str()
                               : (loaded.execution == "fused-bf16" ? " | inputs rounded to bf16" : ""),
               offload_summary(loaded).c_str());
  return Status::ok();
}

void setup_run(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = root.add_subcommand(
      "run",
      "Generate text from a prompt with a Hugging Face MoE checkpoint (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE,\n"
      "DeepSeek-V2/V3, Kimi-K2; FP8 block-scaled hub checkpoints are dequantized as they are read)\n"
      "or a compressed artifact written by `submoe compress` (detected by its config.json\n"
      "quantization_config; its routed experts run compressed, see --execution).\n"
      "The prompt is tokenized with the checkpoint's tokenizer.json (special tokens added as its\n"
      "post-processor says, e.g. BOS), prefilled in chunks of --prefill-chunk tokens (progress on a\n"
      "terminal), then tokens are sampled one at a time with\n"
      "the KV cache. Generated text streams to stdout as it is produced (special tokens skipped);\n"
      "generation stops after -n tokens, at an EOS token (config.json / generation_config.json\n"
      "eos_token_id, or the tokenizer's EOS) or when the model's context (max_position_embeddings) is\n"
      "full; a prompt longer than the context is refused (--allow-long-context lifts both). A summary goes to stderr: load time, prefill and\n"
      "decode tokens/s (decode counts the forward passes after the prompt), stop reason, and for an\n"
      "artifact the execution mode.");
  cmd->add_option("--model", o->m.model,
                  "checkpoint or artifact directory: config.json, *.safetensors, tokenizer.json")
      ->required();
  auto* prompt = cmd->add_option("--prompt", o->prompt, "prompt text");
  cmd->add_option("--prompt-file", o->prompt_file, "read the prompt from this UTF-8 text file (instead of --prompt)")
      ->excludes(prompt);
  cmd->add_flag("--chat", o->chat,
                "send the prompt as one user message through the model's chat template (as\n"
                "/v1/chat/completions does; the template's special tokens become their ids)");
  cmd->add_option("--system", o->system, "with --chat: a system message before the prompt");
  add_chat_template_flag(cmd, &o->m);
  cmd->add_flag("--lossy-text", o->lossy_text,
                "read a --prompt-file that is not valid UTF-8, each bad byte as U+FFFD (default: an error)");
  cmd->add_option("--prefill-chunk", o->prefill_chunk,
                  "prompt tokens per prefill forward; bounds activation memory, shows progress on long prompts")
      ->capture_default_str();
  cmd->add_option("-n,--max-new-tokens", o->max_new_tokens, "tokens to generate at most")->capture_default_str();
  cmd->add_option("--temp,--temperature", o->temperature, "sampling temperature; 0 = greedy (argmax)")
      ->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "sample only among the k most likely tokens; 0 = no limit")
      ->capture_default_str();
  cmd->add_option("--top-p", o->top_p,
                  "nucleus sampling: the smallest set of most likely tokens whose probability reaches p; 1 = off")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed of the sampler (same seed, same text)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  add_model_flags(cmd, &o->m);
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating through EOS tokens (exactly -n tokens; for benchmarks)");
  cmd->add_flag("--allow-long-context", o->allow_long_context,
                "run past the model's context (max_position_embeddings): a longer prompt is accepted and generation "
                "does not stop when the context is full (quality past the trained length is the model's)");
  cmd->add_option("--trace-out", o->trace_out,
                  "write the routing of the prompt and of every generated token (docs/trace-format.md), e.g.\n"
                  "for `submoe trace simulate`");
  cmd->add_flag("--profile", o->profile,
                "time the prefill and every decode step by op class (attention projections and core, router, expert\n"
                "fetch and kernels by representation, MoE combine, lm_head, norms, sampling, thread-pool hand-offs\n"
                "and waits): a table on stderr, or \"profile\" {prefill, decode} in the --json object");
  cmd->add_flag("--json", o->json,
                "print one JSON object (text, the generated token_ids, prefill/decode tokens/s, peak RSS,\n"
                "expert-cache figures) instead of streaming the text");
  cmd->callback([o, prompt] {
    o->prompt_given = prompt->count() > 0;
    report("run", run(*o));
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("run", setup_run);
}  // namespace submoe::cli
