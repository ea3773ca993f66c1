// `submoe run`: generate text from a prompt with a Hugging Face MoE checkpoint or
// a compressed submoe artifact.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_loading.h"
#include "submoe/offload/routing_trace_collector.h"
#include "submoe/core/memory_usage.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"
#include "submoe/model/sampler.h"
#include "submoe/runtime/artifact_model.h"

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
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// generation_config.json's eos_token_id (int or list), which is what HF generate()
// stops on; absent file or key adds nothing.
Status add_generation_config_eos(const std::string& dir, std::set<int64_t>* eos) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  if (!std::filesystem::exists(path)) return Status::ok();
  SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_file_to_string(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt_data(path + ": not a JSON object");
  if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) return Status::ok();
  const nlohmann::json& e = j["eos_token_id"];
  if (e.is_number_integer()) {
    eos->insert(e.get<int64_t>());
  } else if (e.is_array()) {
    for (const auto& x : e) {
      if (!x.is_number_integer()) return corrupt_data(path + ": eos_token_id list holds a non-integer");
      eos->insert(x.get<int64_t>());
    }
  } else {
    return corrupt_data(path + ": eos_token_id must be an integer or a list of integers");
  }
  return Status::ok();
}

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
  const model::SamplerOptions sampling{o.temperature, o.top_k, o.top_p, o.seed};
  SUBMOE_RETURN_IF_ERROR(model::validate(sampling));

  const auto t_load = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_for_command(o.m));
  const std::unique_ptr<model::MoeModel>& m = loaded.model;
  SUBMOE_ASSIGN_OR_RETURN(io::Tokenizer tok, io::Tokenizer::load(o.m.model));
  const double load_s = seconds_since(t_load);

  std::set<int64_t> eos(m->eos_token_ids().begin(), m->eos_token_ids().end());
  if (tok.eos_id()) eos.insert(*tok.eos_id());
  SUBMOE_RETURN_IF_ERROR(add_generation_config_eos(o.m.model, &eos));

  SUBMOE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode_lossless(prompt, /*add_special_tokens=*/true));
  if (ids.empty()) {
    if (!tok.bos_id()) return invalid_argument("the prompt is empty and the tokenizer has no BOS token to start from");
    ids.push_back(*tok.bos_id());
  }

  // The model's context (max_position_embeddings; 0 when config.json has none):
  // a prompt beyond it is refused, generation stops when it is full, unless
  // --allow-long-context.
  const int64_t context = m->config().max_position_embeddings;
  const bool bounded = context > 0 && !o.allow_long_context;
  if (bounded && static_cast<int64_t>(ids.size()) > context)
    return invalid_argument("the prompt has " + std::to_string(ids.size()) + " tokens, beyond the model's context of " +
                            std::to_string(context) +
                            " positions (max_position_embeddings); pass --allow-long-context to run it anyway");
  const int64_t room = bounded ? context - static_cast<int64_t>(ids.size()) : INT64_MAX;
  const int max_new = static_cast<int>(std::min<int64_t>(o.max_new_tokens, room));

  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  model::Session session(*m, &pool);
  std::unique_ptr<offload::RoutingTraceCollector> collector;
  if (!o.trace_out.empty()) {
    collector = std::make_unique<offload::RoutingTraceCollector>(m->config());
    session.set_routing_observer([c = collector.get()](int layer, size_t first, const model::Routing& r) {
      c->observe(layer, first, r);
    });
  }
  auto end_forward = [&]() -> Status { return collector ? collector->end_forward() : Status::ok(); };
  // Up front for what is likely needed; the cache grows by doubling past it.
  session.reserve(ids.size() + std::min<size_t>(static_cast<size_t>(max_new), size_t{1} << 16));
  model::Sampler sampler(sampling);
  io::DecodeStream stream(tok, /*skip_special_tokens=*/true);

  // The prompt in chunks of --prefill-chunk tokens: activation memory stays
  // bounded by the chunk (the KV cache holds the rest), and a long prompt
  // shows progress on a terminal.
  // --profile: the prefill and the decode steps timed by op class, apart.
  model::OpProfile prefill_profile, decode_profile;
  if (o.profile) {
    prefill_profile.attach_pool(&pool);
    session.set_profile(&prefill_profile);
  }
  std::vector<float> logits;
  const auto t_prefill = Clock::now();
  const size_t chunk = static_cast<size_t>(o.prefill_chunk);
  const bool progress = !o.json && ids.size() > chunk && isatty(STDERR_FILENO) == 1;
  for (size_t first = 0; first < ids.size(); first += chunk) {
    const size_t n = std::min(chunk, ids.size() - first);
    SUBMOE_RETURN_IF_ERROR(session.forward(std::span<const int32_t>(ids).subspan(first, n), model::LogitsMode::kLast,
                                           &logits));
    SUBMOE_RETURN_IF_ERROR(end_forward());
    if (progress)
      std::fprintf(stderr, "\r[run] prefill %zu / %zu tokens (%.1f s)%s", first + n, ids.size(),
                   seconds_since(t_prefill), first + n == ids.size() ? "\n" : "");
  }
  const double prefill_s = seconds_since(t_prefill);

  // Non-finite logits (a NaN or infinite weight or activation) stop generation
  // with an error instead of sampling from garbage.
  auto check_logits = [&](size_t position) -> Status {
    for (float v : logits)
      if (!std::isfinite(v))
        return numerical_error("run: non-finite logits at position " + std::to_string(position) +
                               " (a NaN or infinite weight or activation)");
    return Status::ok();
  };
  SUBMOE_RETURN_IF_ERROR(check_logits(ids.size() - 1));
  int generated = 0, decode_steps = 0;
  std::string text;
  bool hit_eos = false;
  if (o.profile) {
    decode_profile.attach_pool(&pool);
    session.set_profile(&decode_profile);
  }
  model::OpProfile* const sampling_profile = o.profile ? &decode_profile : nullptr;
  const auto t_decode = Clock::now();
  while (generated < max_new) {
    int32_t next = 0;
    {
      model::ScopedOpTimer timer(sampling_profile, model::OpClass::kSampling);
      next = sampler.sample(logits);
    }
    if (!o.ignore_eos && eos.count(next)) {
      hit_eos = true;
      break;
    }
    ++generated;
    const std::string piece = stream.step(next);
    if (o.json) {
      text += piece;
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    if (generated == max_new) break;
    const int32_t one[1] = {next};
    SUBMOE_RETURN_IF_ERROR(session.forward(one, model::LogitsMode::kLast, &logits));
    SUBMOE_RETURN_IF_ERROR(end_forward());
    SUBMOE_RETURN_IF_ERROR(check_logits(ids.size() + static_cast<size_t>(generated) - 1));
    ++decode_steps;
  }
  const double decode_s = seconds_since(t_decode);
  const char* stop = hit_eos ? "eos" : max_new < o.max_new_tokens ? "context" : "length";
  auto rate = [](double n, double s) { return s > 0 ? n / s : 0.0; };
  if (collector) SUBMOE_RETURN_IF_ERROR(collector->trace().save(o.trace_out));
  if (o.json) {
    nlohmann::json j = {{"model", o.m.model},
                         {"artifact", loaded.artifact},
                         {"execution", loaded.artifact ? nlohmann::json(loaded.execution) : nlohmann::json(nullptr)},
                         {"text", text},
                         {"prompt_tokens", ids.size()},
                         {"generated", generated},
                         {"stop", stop},
                         {"load_seconds", load_s},
                         {"prefill_seconds", prefill_s},
                         {"prefill_tokens_per_s", rate(static_cast<double>(ids.size()), prefill_s)},
                         {"decode_steps", decode_steps},
                         {"decode_seconds", decode_s},
                         {"decode_tokens_per_s", rate(decode_steps, decode_s)},
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
               o.m.model.c_str(), load_s, ids.size(), prefill_s, rate(static_cast<double>(ids.size()), prefill_s),
               decode_steps, decode_s, rate(decode_steps, decode_s), generated, stop, threads,
               loaded.artifact ? (" | artifact, " + loaded.execution + " experts").c_str() : "",
               offload_summary(loaded).c_str());
  return Status::ok();
}

void setup_run(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = root.add_subcommand(
      "run",
      "Generate text from a prompt with a Hugging Face MoE checkpoint (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE)\n"
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
                "print one JSON object (text, prefill/decode tokens/s, peak RSS, expert-cache figures) instead of\n"
                "streaming the text");
  cmd->callback([o, prompt] {
    o->prompt_given = prompt->count() > 0;
    report("run", run(*o));
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("run", setup_run);
}  // namespace submoe::cli
