// `submoe codec rvq-fit`: global (Gaussian-trained) against per-layer RVQ
// codebooks on a real checkpoint (runtime/rvq_codebook_fit.h).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/codec_subcommands.h"
#include "cli/command.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/rvq_codebook_fit.h"

namespace submoe::cli {
namespace {

struct RvqFitCli {
  std::string model;
  runtime::RvqCodebookFitOptions o;
  bool no_rht = false;
  int threads = 0;
  bool json = false;
};

Status run_rvq_fit(RvqFitCli& c) {
  if (c.threads < 0 || c.threads > 4096) return invalid_argument("--threads must be 0..4096");
  ThreadPool pool(c.threads > 0 ? c.threads : hardware_threads());
  c.o.pool = &pool;
  c.o.rotate = !c.no_rht;
  c.o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  SUBMOE_ASSIGN_OR_RETURN(runtime::RvqCodebookFitReport r, runtime::fit_rvq_codebooks(c.model, c.o));
  if (c.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : r.layers)
      layers.push_back({{"layer", l.layer},
                        {"train_vectors", l.train_vectors},
                        {"test_vectors", l.test_vectors},
                        {"mse_global", l.mse_global},
                        {"mse_layer", l.mse_layer},
                        {"mse_layer_train", l.mse_layer_train}});
    std::cout << nlohmann::json{{"bits", c.o.bits},
                                {"stages", r.stages},
                                {"rotation", c.o.rotate ? "rht" : "none"},
                                {"beam", c.o.beam},
                                {"train_vectors", c.o.train_vectors},
                                {"iters", c.o.iters},
                                {"seed", c.o.seed},
                                {"mse_global", r.mse_global},
                                {"mse_layer", r.mse_layer},
                                {"layers", layers},
                                {"seconds", r.seconds}}
                     .dump()
              << "\n";
    return Status::ok();
  }
  std::printf("codec rvq-fit: %s, %.1f bits (%u stages), rotation %s, beam %u, %u training vectors per set\n",
              c.model.c_str(), c.o.bits, r.stages, c.o.rotate ? "rht" : "none", c.o.beam, c.o.train_vectors);
  std::printf("  %6s %10s %10s %12s %12s %16s\n", "layer", "train", "test", "mse global", "mse layer",
              "layer on train");
  for (const auto& l : r.layers)
    std::printf("  %6zu %10llu %10llu %12.6f %12.6f %16.6f\n", l.layer,
                static_cast<unsigned long long>(l.train_vectors), static_cast<unsigned long long>(l.test_vectors),
                l.mse_global, l.mse_layer, l.mse_layer_train);
  std::printf("  %6s %10s %10s %12.6f %12.6f\n", "all", "", "", r.mse_global, r.mse_layer);
  std::printf("  %.1f s\n", r.seconds);
  return Status::ok();
}

}  // namespace

void setup_rvq_fit(CLI::App& codec) {
  auto c = std::make_shared<RvqFitCli>();
  auto* cmd = codec.add_subcommand(
      "rvq-fit",
      "Global against per-layer RVQ codebooks on a checkpoint (docs/rvq.md, \"Global or per-layer codebooks\").\n"
      "Each MoE layer's expert matrices are rotated as compress --repr rvq rotates them (randomized Hadamard on\n"
      "both sides) and their rows scaled to RMS 1. The even-numbered experts train that layer's own codebooks\n"
      "(the trainer and options of the global set); the odd-numbered experts are held out, and both the global\n"
      "codebooks (trained on N(0,1) vectors, what artifacts store) and the layer's code them with the same beam.\n"
      "Output: per layer and over all layers the held-out relative mse ||x - x_hat||^2 / ||x||^2 under each set\n"
      "(mse_global, mse_layer) and the layer set's error on its own training data (mse_layer_train); --json\n"
      "prints one object with those keys, the options and seconds. Progress goes to stderr.");
  cmd->add_option("--model", c->model, "Hugging Face MoE checkpoint directory")->required();
  cmd->add_option("--bits", c->o.bits, "Code rate: 0.5 .. 4 in steps of 0.5 (stages = 2 x bits)")->capture_default_str();
  cmd->add_option("--train-vectors", c->o.train_vectors, "16-weight training vectors per codebook set")
      ->capture_default_str();
  cmd->add_option("--test-vectors", c->o.test_vectors, "held-out vectors per layer, at most")->capture_default_str();
  cmd->add_option("--iters", c->o.iters, "Lloyd iterations per stage, at most")->capture_default_str();
  cmd->add_option("--beam", c->o.beam, "encoder beam width, 1..256")->capture_default_str();
  cmd->add_option("--seed", c->o.seed, "seed of the Gaussian training data and k-means++")->capture_default_str();
  cmd->add_flag("--no-rht", c->no_rht, "scale rows without rotating (the ablation)");
  cmd->add_option("--threads", c->threads, "threads; 0 = all hardware threads")->capture_default_str()
      ->check(thread_count(true));
  cmd->add_flag("--json", c->json, "print one JSON object");
  cmd->callback([c] { report("codec rvq-fit", run_rvq_fit(*c)); });
}

}  // namespace submoe::cli
