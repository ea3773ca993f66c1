// `submoe synth-model`: a random checkpoint in the real Hugging Face layout.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/architecture.h"
#include "submoe/model/synth_checkpoint.h"

namespace submoe::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct SynthOptions {
  std::string arch;
  model::SynthSpec spec;
  std::string out;
  std::string dtype = "bf16";
  uint64_t shard_mb = 2048;
  std::string tokenizer_from;
  int threads = 0;
  bool force = false;
  bool json = false;
};

// Bytes done / total, rate and ETA on stderr, at most twice a second; on a
// terminal the line is redrawn, otherwise one line every 5 s.
class ProgressLine {
 public:
  ProgressLine() : start_(Clock::now()), last_(start_), tty_(isatty(STDERR_FILENO) == 1) {}

  void update(uint64_t done, uint64_t total) {
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (done < total && since < (tty_ ? 0.5 : 5.0)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    std::fprintf(stderr, "%s[synth-model] %.2f / %.2f GB (%.0f%%), %.0f MB/s, ETA %.0f s%s", tty_ ? "\r" : "",
                 static_cast<double>(done) / 1e9, static_cast<double>(total) / 1e9,
                 total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, rate / 1e6, eta,
                 tty_ ? (done >= total ? "\n" : "") : "\n");
    std::fflush(stderr);
  }

 private:
  Clock::time_point start_, last_;
  bool tty_;
};

Status run(SynthOptions& o) {
  SUBMOE_ASSIGN_OR_RETURN(o.spec.architecture, io::parse_model_type(o.arch));
  if (o.dtype == "bf16") {
    o.spec.dtype = io::DType::kBF16;
  } else if (o.dtype == "f32") {
    o.spec.dtype = io::DType::kF32;
  } else {
    return invalid_argument("--dtype must be bf16 or f32, got '" + o.dtype + "'");
  }
  if (o.shard_mb == 0 || o.shard_mb > (uint64_t{1} << 40)) return invalid_argument("--shard-mb must be positive");
  if (o.threads < 0) return invalid_argument("--threads must be >= 0");

  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  model::SynthWriteOptions w;
  w.shard_bytes = o.shard_mb << 20;
  w.tokenizer_from = o.tokenizer_from;
  w.overwrite = o.force;
  w.pool = &pool;
  // A progress line only when the write takes noticeable time.
  ProgressLine line;
  w.progress = [&line](uint64_t done, uint64_t total) {
    if (total >= (uint64_t{256} << 20)) line.update(done, total);
  };

  const auto t0 = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(model::SynthResult r, model::write_synth_checkpoint(o.spec, o.out, w));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  if (o.json) {
    const nlohmann::json j{{"out", o.out},          {"parameters", r.parameters}, {"bytes", r.bytes_written},
                           {"files", r.files},      {"seconds", seconds},        {"model_type", r.config.model_type},
                           {"vocab_size", r.config.vocab_size}};
    std::cout << j.dump() << "\n";
    return Status::ok();
  }
  const auto& c = r.config;
  std::printf("%s: %s, %lld layers, %lld experts (top-%lld), hidden %lld, expert ffn %lld, heads %lld/%lld x %lld, "
              "vocab %lld\n",
              o.out.c_str(), c.model_type.c_str(), static_cast<long long>(c.num_hidden_layers),
              static_cast<long long>(c.num_experts), static_cast<long long>(c.num_experts_per_tok),
              static_cast<long long>(c.hidden_size), static_cast<long long>(c.moe_intermediate_size),
              static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.num_key_value_heads),
              static_cast<long long>(c.head_dim), static_cast<long long>(c.vocab_size));
  std::printf("%lld parameters, %zu files, %.3f GB written in %.2f s (%.0f MB/s)%s\n",
              static_cast<long long>(r.parameters), r.files.size(), static_cast<double>(r.bytes_written) / 1e9,
              seconds, seconds > 0 ? static_cast<double>(r.bytes_written) / seconds / 1e6 : 0.0,
              o.tokenizer_from.empty() ? "; no tokenizer (see --tokenizer-from)" : "");
  return Status::ok();
}

void setup_synth_model(CLI::App& root) {
  auto o = std::make_shared<SynthOptions>();
  auto* cmd = root.add_subcommand(
      "synth-model",
      "Write a random checkpoint in the real Hugging Face layout of an MoE architecture: config.json\n"
      "with the architecture's own field names (loadable by transformers and 'submoe run'), hub tensor\n"
      "names, safetensors shards plus model.safetensors.index.json when the weights exceed --shard-mb.\n"
      "Values: linear weights and lm_head N(0, 0.02); token embedding N(0, 1); router\n"
      "N(0, max(0.02, 1/sqrt(hidden))), so routing is decisive and spread over the experts in every\n"
      "layer (see include/submoe/model/synth_checkpoint.h); RMSNorm weights 1; biases 0. The bytes\n"
      "depend only on the options and --seed (not on --threads). Memory stays bounded (tens of MB)\n"
      "for any model size; progress goes to stderr for models over 256 MB.\n"
      "deepseek_v2 / deepseek_v3 get DeepSeek-V3's proportions per head of d = hidden / heads: multi-head\n"
      "latent attention with qk_nope = v = d, qk_rope = d / 2, kv_lora_rank 4d, q_lora_rank 12d; one dense\n"
      "first layer (--dense-ffn wide), shared experts of --ffn width (--shared-ffn / --ffn of them), up to\n"
      "8 expert groups of which half are kept; d must be a multiple of 4.\n"
      "gpt_oss gets the hub layout: fused, transposed experts with biases (experts.gate_up_proj\n"
      "[E, H, 2I], down_proj [E, I, H]), a biased router, attention sinks, sliding (128) and full layers\n"
      "alternating, YaRN RoPE (factor 32, original 4096), clamped SwiGLU.\n"
      "Output (stdout): a summary line, or with --json one object\n"
      "{out, parameters, bytes, files, seconds, model_type, vocab_size}.");
  static const std::string arch_help = "one of: " + io::supported_model_types();
  cmd->add_option("--arch", o->arch, arch_help)->required();
  cmd->add_option("--layers", o->spec.layers, "decoder layers")->required();
  cmd->add_option("--experts", o->spec.experts, "routed experts per MoE layer")->required();
  cmd->add_option("--hidden", o->spec.hidden, "hidden size H")->required();
  cmd->add_option("--ffn", o->spec.ffn, "routed expert intermediate size")->required();
  cmd->add_option("--out", o->out, "output directory (created if missing)")->required();
  cmd->add_option("--top-k", o->spec.top_k, "experts per token")->capture_default_str();
  cmd->add_option("--heads", o->spec.heads, "attention heads; 0 = max(1, hidden / 128)")->capture_default_str();
  cmd->add_option("--kv-heads", o->spec.kv_heads, "key/value heads; 0 = heads / 4 when divisible, else heads")
      ->capture_default_str();
  cmd->add_option("--head-dim", o->spec.head_dim,
                  "head dimension; 0 = hidden / heads (qwen2_moe and olmoe always use hidden / heads)")
      ->capture_default_str();
  cmd->add_option("--vocab", o->spec.vocab,
                  "vocabulary size; 0 = the tokenizer's size, or 32000 without one; must cover the tokenizer")
      ->capture_default_str();
  cmd->add_option("--shared-ffn", o->spec.shared_ffn, "qwen2_moe shared expert width (deepseek: total width of the shared experts); 0 = 4 * ffn")
      ->capture_default_str();
  cmd->add_option("--dense-ffn", o->spec.dense_ffn, "qwen dense-layer MLP width (intermediate_size); 0 = 4 * ffn")
      ->capture_default_str();
  cmd->add_option("--mlp-only-layers", o->spec.mlp_only_layers,
                  "qwen only: layers with a dense MLP instead of experts (config mlp_only_layers)")
      ->delimiter(',');
  cmd->add_option("--max-position", o->spec.max_position_embeddings, "max_position_embeddings")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "bf16 | f32")->capture_default_str();
  cmd->add_option("--shard-mb", o->shard_mb, "largest shard in MiB (transformers' max_shard_size)")
      ->capture_default_str();
  cmd->add_option("--seed", o->spec.seed, "random seed")->capture_default_str();
  cmd->add_option("--tokenizer-from", o->tokenizer_from,
                  "directory with tokenizer.json: its tokenizer files are copied, bos/eos ids taken from it and\n"
                  "the vocabulary checked against it. There is no default: without it no tokenizer is written\n"
                  "(e.g. pass models/default-moe of the source tree)");
  cmd->add_option("--threads", o->threads, "threads generating values; 0 = all hardware threads")
      ->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--force", o->force,
                "overwrite a checkpoint already in --out (stale weight and tokenizer files are removed)");
  cmd->add_flag("--json", o->json, "print one JSON object instead of the summary");
  cmd->callback([o] { report("synth-model", run(*o)); });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("synth-model", setup_synth_model);
}  // namespace submoe::cli
