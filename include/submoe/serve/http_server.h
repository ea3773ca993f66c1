// `submoe serve`'s HTTP front: the OpenAI-compatible routes over a Scheduler.
//   POST /v1/completions     (stream: server-sent events, data: [DONE])
//   GET  /v1/models
//   GET  /health             503 {"status":"loading"} until set_ready, then 200
//   GET  /metrics            Prometheus text: requests, tokens, batch, queue, expert cache
//   POST /tokenize, /detokenize
// Errors are OpenAI error objects ({"error": {message, type, param, code}}).
// With an API key, every /v1 route needs "Authorization: Bearer KEY" (401).
// A streaming client that disconnects cancels its generation.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "submoe/core/status.h"
#include "submoe/serve/engine.h"
#include "submoe/serve/scheduler.h"

namespace submoe::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port (see HttpServer::port)
  std::string api_key;                  // "" = no authentication
  std::string model_name;               // the id /v1/models lists and requests may name
  size_t max_body_bytes = size_t{8} << 20;  // larger bodies are 413
  int http_threads = 64;                // connections served at once
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port; kUnavailable when the address is in use or cannot be bound.
  Status bind();
  int port() const;
  // Serves until stop() (blocks the calling thread).
  Status serve();
  void stop();

  // From here on requests reach the model (both must outlive the server).
  void set_ready(const Engine* engine, Scheduler* scheduler);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace submoe::serve
