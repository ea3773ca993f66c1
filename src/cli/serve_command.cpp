// `submoe serve`: an OpenAI-compatible HTTP server over one model, its requests
// batched continuously (serve::Scheduler, serve::HttpServer).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/model_loading.h"
#include "submoe/core/thread_pool.h"
#include "submoe/serve/engine.h"
#include "submoe/serve/http_server.h"
#include "submoe/serve/scheduler.h"

namespace submoe::cli {
namespace {

struct ServeOptions {
  ModelFlags m;
  serve::ServerOptions server;
  serve::SchedulerOptions scheduler;
  int threads = 0;
  double max_body_mb = 8;
};

// SIGINT / SIGTERM end the server. A handler (not a blocked-signal wait: the
// process has threads it did not create, OpenBLAS's among them, that would take
// the default action) records the signal; a watcher thread sees it and calls
// `stop`.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void record_stop_signal(int sig) { g_stop_signal.store(sig); }

class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void()> stop) : stop_(std::move(stop)) {
    struct sigaction action {};
    action.sa_handler = record_stop_signal;
    sigemptyset(&action.sa_mask);
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &action, nullptr);
    thread_ = std::thread([this] {
      while (!done_.load()) {
        if (const int sig = g_stop_signal.load()) {
          std::fprintf(stderr, "[serve] %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
          stop_();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~SignalWatcher() {
    done_.store(true);
    thread_.join();
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &action, nullptr);
  }

 private:
  std::function<void()> stop_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

Status serve_main(ServeOptions o) {
  if (o.threads < 0) return invalid_argument("--threads must be >= 0");
  SUBMOE_RETURN_IF_ERROR(serve::Scheduler::validate(o.scheduler));
  if (!(o.max_body_mb > 0) || !std::isfinite(o.max_body_mb) || o.max_body_mb > 4096)
    return invalid_argument("--max-body-mb must be within (0, 4096]");
  if (o.server.http_threads < 1 || o.server.http_threads > 4096)
    return invalid_argument("--http-threads must be within [1, 4096]");
  o.server.max_body_bytes = static_cast<size_t>(o.max_body_mb * 1024 * 1024);
  if (o.server.model_name.empty())
    o.server.model_name = std::filesystem::path(o.m.model).lexically_normal().filename().string();
  if (o.server.model_name.empty()) o.server.model_name = std::filesystem::absolute(o.m.model).filename().string();
  // A client that closes its connection must not kill the server with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  serve::HttpServer server(o.server);
  SUBMOE_RETURN_IF_ERROR(server.bind());
  std::unique_ptr<serve::Scheduler> scheduler;
  std::atomic<serve::Scheduler*> scheduler_ptr{nullptr};
  SignalWatcher signals([&] {
    if (serve::Scheduler* s = scheduler_ptr.load()) s->shutdown();
    server.stop();
  });
  Status served;
  std::thread http([&] { served = server.serve(); });
  std::fprintf(stderr, "[serve] listening on http://%s:%d (GET /health is 503 until the model is loaded)\n",
               o.server.host.c_str(), server.port());
  Result<std::unique_ptr<serve::Engine>> engine = serve::Engine::load(o.m);
  if (!engine.is_ok()) {
    server.stop();
    http.join();
    return engine.status();
  }
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  scheduler = std::make_unique<serve::Scheduler>(*engine.value(), &pool, o.scheduler);
  scheduler_ptr.store(scheduler.get());
  server.set_ready(engine.value().get(), scheduler.get());
  std::fprintf(stderr, "[serve] ready: '%s' loaded in %.2f s (%s), max batch %d, queue %d, %d threads%s\n",
               o.server.model_name.c_str(), engine.value()->load_seconds(),
               engine.value()->loaded().artifact ? ("artifact, " + engine.value()->loaded().execution + " experts").c_str()
                                                 : "checkpoint",
               o.scheduler.max_batch, o.scheduler.max_queue, threads,
               o.server.api_key.empty() ? "" : ", API key required on /v1");
  if (const serve::ChatTemplate* t = engine.value()->chat_template()) {
    std::fprintf(stderr, "[serve] chat template: %s\n", t->origin().c_str());
  } else {
    std::fprintf(stderr, "[serve] /v1/chat/completions unavailable: %s\n",
                 engine.value()->chat_template_status().message().c_str());
  }
  http.join();
  scheduler->shutdown();
  return served;
}

void setup_serve(CLI::App& root) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = root.add_subcommand(
      "serve",
      "Serve a checkpoint or artifact over HTTP with the OpenAI API (docs/serving.md):\n"
      "POST /v1/chat/completions (the model's chat template, or --chat-template) and /v1/completions\n"
      "(stream: server-sent events), GET /v1/models, GET /health (503 while the model loads, then 200),\n"
      "GET /metrics (Prometheus text), POST /tokenize and /detokenize, and a chat page at GET /.\n"
      "Concurrent requests are batched continuously: one forward per step runs every active sequence\n"
      "(each routed expert fetched once for the batch), new requests join between steps, prompts are\n"
      "prefilled in chunks while the others decode; past --max-batch running and --max-queue waiting,\n"
      "requests get 503. A streaming client that disconnects cancels its generation.\n"
      "Binds 127.0.0.1 unless --host says otherwise; with --api-key every /v1 route needs\n"
      "'Authorization: Bearer KEY'. SIGINT or SIGTERM stops it.");
  cmd->add_option("--model", o->m.model, "checkpoint or artifact directory: config.json, *.safetensors, tokenizer.json")
      ->required();
  cmd->add_option("--host", o->server.host, "address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cmd->add_option("--port", o->server.port, "TCP port; 0 = any free port (printed on stderr)")->capture_default_str();
  cmd->add_option("--api-key", o->server.api_key, "require 'Authorization: Bearer KEY' on every /v1 route")
      ->envname("SUBMOE_API_KEY");
  cmd->add_option("--model-name", o->server.model_name,
                  "the model id of /v1/models and of requests' \"model\" (default: the directory's name)");
  cmd->add_option("--max-batch", o->scheduler.max_batch, "sequences decoded together per step")->capture_default_str();
  cmd->add_option("--max-queue", o->scheduler.max_queue, "requests waiting for a slot before new ones get 503")
      ->capture_default_str();
  cmd->add_option("--prefill-chunk", o->scheduler.prefill_chunk,
                  "prompt tokens per step, shared by the prompts being prefilled (bounds a step's latency)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads of the forward pass; 0 = all hardware threads")
      ->capture_default_str()
      ->check(thread_count(true));
  add_chat_template_flag(cmd, &o->m);
  cmd->add_option("--http-threads", o->server.http_threads, "connections served at once (each stream holds one)")
      ->capture_default_str();
  cmd->add_option("--max-body-mb", o->max_body_mb, "request bodies beyond this many MiB get 413")->capture_default_str();
  add_model_flags(cmd, &o->m);
  cmd->callback([o] { report("serve", serve_main(*o)); });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("serve", setup_serve);
}  // namespace submoe::cli
