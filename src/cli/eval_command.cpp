// `submoe eval`: next-token loss and perplexity of a checkpoint or a compressed
// artifact over a text file.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_loading.h"
#include "submoe/core/thread_pool.h"
#include "submoe/eval/next_token_loss.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::cli {
namespace {

struct EvalOptions {
  ModelFlags m;
  std::string text;
  size_t context = 512;
  size_t max_tokens = 0;
  size_t chunk = 256;
  int threads = 0;
  bool json = false;
  bool profile = false;
  bool lossy_text = false;
};

Status run_eval(const EvalOptions& o) {
  if (o.threads < 0) return invalid_argument("--threads must be >= 0");
  if (o.context < 2) return invalid_argument("--ctx must be at least 2");
  if (o.chunk < 1) return invalid_argument("--chunk must be at least 1");
  SUBMOE_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_for_command(o.m));
  const std::unique_ptr<model::MoeModel>& m = loaded.model;
  const bool artifact = loaded.artifact;
  SUBMOE_ASSIGN_OR_RETURN(io::Tokenizer tok, io::Tokenizer::load(o.m.model));
  SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_text_file(o.text, o.lossy_text));
  const auto t0 = std::chrono::steady_clock::now();
  auto encoded = tok.encode_lossless(text, /*add_special_tokens=*/false);
  if (!encoded.is_ok()) return encoded.status().with_context(o.text);
  const std::vector<int32_t> ids = std::move(*encoded);
  const double tokenize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  eval::LossOptions lo;
  lo.context = o.context;
  lo.max_tokens = o.max_tokens;
  lo.chunk = o.chunk;
  model::OpProfile profile;
  if (o.profile) {
    profile.attach_pool(&pool);
    lo.profile = &profile;
  }
  auto last = std::chrono::steady_clock::now();
  SUBMOE_ASSIGN_OR_RETURN(
      eval::LossResult r,
      eval::next_token_loss(*m, ids, lo, &pool, [&](size_t done, size_t total, double nll) {
        const auto now = std::chrono::steady_clock::now();
        if (done < total && std::chrono::duration<double>(now - last).count() < 2.0) return;
        last = now;
        std::fprintf(stderr, "[eval] window %zu/%zu  nll %.4f\n", done, total, nll);
      }));

  if (o.json) {
    nlohmann::json j;
    j["model"] = o.m.model;
    j["text"] = o.text;
    j["ctx"] = o.context;
    j["chunk"] = o.chunk;
    j["tokens_in_file"] = ids.size();
    j["tokens"] = r.tokens_scored;
    j["tokens_processed"] = r.tokens_processed;
    j["windows"] = r.windows;
    j["nll"] = r.nll;
    j["ppl"] = r.ppl;
    j["seconds"] = r.seconds;
    j["tokens_per_s"] = r.tokens_per_s;
    j["tokenize_seconds"] = tokenize_s;
    j["threads"] = threads;
    j["artifact"] = artifact;
    j["execution"] = loaded.execution;
    j["expert_cache"] = offload_json(loaded, o.m);
    if (o.profile) j["profile"] = profile.to_json();
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s on %s: %zu tokens scored in %zu windows of %zu\n", o.m.model.c_str(), o.text.c_str(),
                r.tokens_scored, r.windows, o.context);
    std::printf("nll %.4f nats/token  ppl %.3f  (%.2f s, %.1f tokens/s, %d threads%s)\n", r.nll, r.ppl, r.seconds,
                r.tokens_per_s, threads,
                artifact ? (", artifact, " + loaded.execution + " experts").c_str()
                         : (loaded.execution == "fused-bf16" ? ", inputs rounded to bf16" : ""));
    if (loaded.offload) std::printf("%s\n", offload_summary(loaded).substr(3).c_str());
    if (o.profile) std::fputs(profile.table("eval").c_str(), stderr);
  }
  return Status::ok();
}

void setup_eval(CLI::App& root) {
  auto o = std::make_shared<EvalOptions>();
  auto* cmd = root.add_subcommand(
      "eval",
      "Next-token loss and perplexity of a checkpoint, or of a compressed artifact written by\n"
      "`submoe compress` (detected by its config.json quantization_config), over a text file.\n"
      "The file is tokenized whole (no special tokens added), cut into non-overlapping windows of\n"
      "--ctx tokens, and each window is run from an empty KV cache. Within a window every token but\n"
      "the first is scored by -log p(token | earlier tokens of the window); the first token of a\n"
      "window has no context and is not scored. Prints the mean NLL (nats/token) and perplexity\n"
      "exp(NLL); --json prints one object: tokens (scored), nll, ppl, seconds, tokens_per_s (tokens\n"
      "run through the model per second), windows, ctx, chunk, tokens_in_file, tokens_processed, threads,\n"
      "artifact (true/false) and execution (fused/fused-bf16/fused-int8/reference; a checkpoint: fused or fused-bf16).\n"
      "Progress goes to stderr every ~2 s.");
  cmd->add_option("--model", o->m.model,
                  "checkpoint or artifact directory: config.json, *.safetensors, tokenizer.json")
      ->required();
  cmd->add_option("--text", o->text, "UTF-8 text file to score")->required();
  cmd->add_option("--ctx", o->context, "window length in tokens")->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "use only the first N tokens of the file; 0 = all")
      ->capture_default_str();
  cmd->add_option("--chunk", o->chunk,
                  "tokens per forward call inside a window (the KV cache carries the rest); 1 scores the text "
                  "token by token through the batch-1 kernels generation runs, larger values through the "
                  "batched (prefill) kernels. The loss differs only by those kernels' roundings")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  add_model_flags(cmd, &o->m);
  cmd->add_flag("--lossy-text", o->lossy_text,
                "read a text that is not valid UTF-8, each bad byte as U+FFFD (default: an error)");
  cmd->add_flag("--profile", o->profile,
                "time every forward by op class (as run --profile): a table on stderr, or \"profile\" in --json");
  cmd->add_flag("--json", o->json, "print one JSON object instead of text");
  cmd->callback([o] { report("eval", run_eval(*o)); });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("eval", setup_eval);
}  // namespace submoe::cli
