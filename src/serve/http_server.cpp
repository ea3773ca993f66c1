#include "submoe/serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "submoe/serve/metrics.h"
#include "submoe/serve/openai_protocol.h"
#include "submoe/serve/web_assets.h"
#include "serve/connection_watch.h"

namespace submoe::serve {
namespace {

using nlohmann::json;

// Equal-time comparison: the time taken does not tell how much of a key matched.
bool same_secret(const std::string& given, const std::string& key) {
  if (key.empty() || given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  httplib::Server server;
  int bound_port = 0;
  // serve() and stop() may race (a stop right after the serving thread starts):
  // each announces itself before looking at the other, so either serve() sees
  // the stop and returns, or stop() sees serve() and waits until httplib runs.
  std::atomic<bool> serve_entered{false};
  std::atomic<bool> serve_returned{false};
  std::atomic<bool> stop_requested{false};
  std::atomic<const Engine*> engine{nullptr};
  std::atomic<Scheduler*> scheduler{nullptr};
  std::mutex counters_mutex;
  HttpCounters counters;
  std::atomic<uint64_t> next_id{1};
  uint64_t id_salt = std::random_device{}();
  // The listening socket, seen by the socket-options hook (httplib creates it
  // in bind_to_port), so bind() can raise its backlog.
  socket_t listen_socket = INVALID_SOCKET;

  explicit Impl(ServerOptions o) : options(std::move(o)) { setup(); }

  void count(const std::string& route, int status) {
    std::lock_guard<std::mutex> lock(counters_mutex);
    ++counters.responses[{route, status}];
  }

  void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param = {},
                  const std::string& code = {}) {
    res.status = status;
    res.set_content(error_body(status, message, param, code).dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  }

  void send_json(httplib::Response& res, const json& j) {
    res.status = 200;
    res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  }

  // The parsed body, or an error response sent (false).
  // Request bodies keep their key order (openai_protocol.h).
  bool parse_body(const httplib::Request& req, httplib::Response& res, nlohmann::ordered_json* out) {
    try {
      *out = nlohmann::ordered_json::parse(req.body);
    } catch (const nlohmann::ordered_json::parse_error& e) {
      send_error(res, 400, std::string("the request body is not valid JSON: ") + e.what());
      return false;
    }
    return true;
  }

  // The engine and scheduler, or a 503 sent while the model loads.
  bool ready(httplib::Response& res, const Engine** e, Scheduler** s) {
    *e = engine.load();
    *s = scheduler.load();
    if (*e && *s) return true;
    send_error(res, 503, "the model is still loading; retry when GET /health answers 200", "", "loading");
    return false;
  }

  std::string new_id(const char* prefix) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s-%016llx%08llx", prefix, static_cast<unsigned long long>(id_salt),
                  static_cast<unsigned long long>(next_id.fetch_add(1)));
    return buf;
  }

  void setup() {
    server.set_payload_max_length(options.max_body_bytes);
    // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let
    // a second server bind a port that is already serving.
    server.set_socket_options([this](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_socket = sock;
    });
    const int threads = std::max(1, options.http_threads);
    server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      const std::string bearer = "Bearer ";
      if (auth.rfind(bearer, 0) == 0 && same_secret(auth.substr(bearer.size()), options.api_key))
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, 401, "a valid API key is required: send the header 'Authorization: Bearer KEY'", "",
                 "invalid_api_key");
      count(req.path, 401);
      return httplib::Server::HandlerResponse::Handled;
    });
    // Errors httplib answers itself (no route, body too large, bad request line)
    // get an OpenAI error object too.
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) -> httplib::Server::HandlerResponse {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      std::string message = res.status == 404   ? "no route " + req.method + " " + req.path
                            : res.status == 413 ? "the request body is larger than " +
                                                      std::to_string(options.max_body_bytes) + " bytes"
                                                : "the request could not be served (HTTP " +
                                                      std::to_string(res.status) + ")";
      send_error(res, res.status, message);
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, 500, "internal error: " + what);
    });
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      if (req.path.rfind("/v1/", 0) == 0 && res.status == 401) return;  // counted by the auth check
      count(req.path, res.status);
    });

    // The chat page (web/, compiled in): GET / is index.html.
    for (const WebAsset& asset : web_assets()) {
      auto handler = [asset](const httplib::Request&, httplib::Response& res) {
        res.set_content(asset.body.data(), asset.body.size(), asset.content_type.data());
        res.set_header("Cache-Control", "no-cache");
      };
      server.Get(std::string(asset.path), handler);
      if (asset.path == "/index.html") server.Get("/", handler);
    }
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (engine.load() && scheduler.load()) {
        send_json(res, {{"status", "ok"}});
      } else {
        res.status = 503;
        res.set_content(json{{"status", "loading"}}.dump(), "application/json");
      }
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      HttpCounters snapshot;
      {
        std::lock_guard<std::mutex> lock(counters_mutex);
        snapshot = counters;
      }
      res.set_content(prometheus_metrics(snapshot, engine.load(), scheduler.load()), "text/plain; version=0.0.4");
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const Engine* e;
      Scheduler* s;
      if (!ready(res, &e, &s)) return;
      json model = {{"id", options.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "submoe"}};
      if (e->context_length() > 0) model["context_length"] = e->context_length();
      send_json(res, {{"object", "list"}, {"data", json::array({model})}});
    });
    server.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) { tokenize(req, res); });
    server.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) { detokenize(req, res); });
    server.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { complete(req, res); });
    server.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { chat(req, res); });
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    const Engine* e;
    Scheduler* s;
    if (!ready(res, &e, &s)) return;
    nlohmann::ordered_json body;
    if (!parse_body(req, res, &body)) return;
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string())
      return send_error(res, 400, "'content' must be a string", "content");
    bool add_special = false;
    if (body.contains("add_special")) {
      if (!body["add_special"].is_boolean()) return send_error(res, 400, "'add_special' must be a boolean", "add_special");
      add_special = body["add_special"].get<bool>();
    }
    Result<std::vector<int32_t>> ids = e->tokenizer().encode_lossless(body["content"].get<std::string>(), add_special);
    if (!ids.is_ok()) return send_error(res, http_status_of(ids.status()), ids.status().message(), "content");
    send_json(res, {{"tokens", ids.value()}});
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    const Engine* e;
    Scheduler* s;
    if (!ready(res, &e, &s)) return;
    nlohmann::ordered_json body;
    if (!parse_body(req, res, &body)) return;
    if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array())
      return send_error(res, 400, "'tokens' must be an array of token ids", "tokens");
    std::vector<int32_t> ids;
    const int64_t vocab = e->model().config().vocab_size;
    for (const auto& t : body["tokens"]) {
      const bool in_range = t.is_number_integer() && (t.is_number_unsigned()
                                                          ? t.get<uint64_t>() < static_cast<uint64_t>(vocab)
                                                          : t.get<int64_t>() >= 0 && t.get<int64_t>() < vocab);
      if (!in_range)
        return send_error(res, 400, "'tokens' must hold token ids within [0, " + std::to_string(vocab) + ")", "tokens");
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    send_json(res, {{"content", e->tokenizer().decode(ids, /*skip_special_tokens=*/false)}});
  }

  // The model name check both routes share: absent or this server's.
  bool model_matches(const SamplingRequest& r, httplib::Response& res) {
    if (r.model.empty() || r.model == options.model_name) return true;
    send_error(res, 404, "the model '" + r.model + "' does not exist; this server serves '" + options.model_name + "'",
               "model", "model_not_found");
    return false;
  }

  void complete(const httplib::Request& req, httplib::Response& res) {
    const Engine* e;
    Scheduler* s;
    if (!ready(res, &e, &s)) return;
    nlohmann::ordered_json body;
    if (!parse_body(req, res, &body)) return;
    CompletionRequest r;
    if (auto err = parse_completion_request(body, &r)) return send_error(res, 400, err->message, err->param);
    if (!model_matches(r, res)) return;
    std::vector<int32_t> prompt;
    if (r.prompt_text) {
      Result<std::vector<int32_t>> ids = e->encode_prompt(*r.prompt_text, r.params.allow_long_context);
      if (!ids.is_ok()) return send_error(res, http_status_of(ids.status()), ids.status().message(), "prompt");
      prompt = std::move(ids).value();
    } else {
      prompt = std::move(r.prompt_ids);
    }
    const std::string id = new_id("cmpl");
    const auto created = static_cast<int64_t>(std::time(nullptr));
    const std::string model = options.model_name;
    ResponseShape shape;
    shape.chunk = [id, created, model](const std::string& text, const char* finish) {
      return json{{"id", id},
                  {"object", "text_completion"},
                  {"created", created},
                  {"model", model},
                  {"choices", json::array({{{"text", text},
                                            {"index", 0},
                                            {"logprobs", nullptr},
                                            {"finish_reason", finish ? json(finish) : json(nullptr)}}})}};
    };
    shape.whole = shape.chunk;
    generate(req, res, s, std::move(prompt), r, std::move(shape), "prompt");
  }

  void chat(const httplib::Request& req, httplib::Response& res) {
    const Engine* e;
    Scheduler* s;
    if (!ready(res, &e, &s)) return;
    nlohmann::ordered_json body;
    if (!parse_body(req, res, &body)) return;
    ChatRequest r;
    if (auto err = parse_chat_request(body, &r)) return send_error(res, 400, err->message, err->param);
    if (!model_matches(r, res)) return;
    const ChatTemplate* tmpl = e->chat_template();
    if (!tmpl) {
      // No template is the server's configuration, not the request's fault.
      const Status& why = e->chat_template_status();
      return send_error(res, why.code() == ErrorCode::kNotFound ? 400 : 500, why.message(), "messages",
                        "chat_template_unavailable");
    }
    ChatTemplateInput input;
    input.messages = std::move(r.messages);
    input.tools = std::move(r.tools);
    input.add_generation_prompt = r.add_generation_prompt;
    input.template_kwargs = std::move(r.template_kwargs);
    Result<std::string> rendered = tmpl->render(input);
    if (!rendered.is_ok()) return send_error(res, 400, rendered.status().message(), "messages");
    Result<std::vector<int32_t>> prompt = e->encode_chat_prompt(*rendered, r.params.allow_long_context);
    if (!prompt.is_ok()) return send_error(res, http_status_of(prompt.status()), prompt.status().message(), "messages");
    if (!r.max_tokens_given) {
      // Until EOS or the context, as OpenAI; a model without a context bound gets 4096.
      const int64_t context = e->context_length();
      r.params.max_tokens = static_cast<int>(context > 0 ? context : 4096);
    }
    const std::string id = new_id("chatcmpl");
    const auto created = static_cast<int64_t>(std::time(nullptr));
    const std::string model = options.model_name;
    auto envelope = [id, created, model](const char* object, json choice) {
      return json{{"id", id}, {"object", object}, {"created", created}, {"model", model},
                  {"choices", json::array({std::move(choice)})}};
    };
    ResponseShape shape;
    shape.chunk = [envelope](const std::string& text, const char* finish) {
      return envelope("chat.completion.chunk",
                      {{"index", 0},
                       {"delta", finish ? json::object() : json{{"content", text}}},
                       {"logprobs", nullptr},
                       {"finish_reason", finish ? json(finish) : json(nullptr)}});
    };
    shape.whole = [envelope](const std::string& text, const char* finish) {
      return envelope("chat.completion", {{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", text}}},
                                          {"logprobs", nullptr},
                                          {"finish_reason", finish ? json(finish) : json(nullptr)}});
    };
    // OpenAI's first chunk names the role.
    shape.first_chunk = envelope("chat.completion.chunk", {{"index", 0},
                                                           {"delta", {{"role", "assistant"}, {"content", ""}}},
                                                           {"logprobs", nullptr},
                                                           {"finish_reason", nullptr}});
    generate(req, res, s, std::move(prompt).value(), r, std::move(shape), "messages");
  }

  // How a route's responses look: `chunk` a streamed piece of text (finish null)
  // or the closing chunk (text "", finish set); `whole` the non-streaming body
  // (usage added); `first_chunk` sent before any text when set (chat's role).
  struct ResponseShape {
    std::function<json(const std::string& text, const char* finish)> chunk;
    std::function<json(const std::string& text, const char* finish)> whole;
    std::optional<json> first_chunk;
  };

  // Submits the prompt and answers with the whole completion or a stream of
  // server-sent events (data: [DONE] last; with include_usage a final chunk of
  // usage and no choices, and "usage": null on the others).
  void generate(const httplib::Request& req, httplib::Response& res, Scheduler* s, std::vector<int32_t> prompt,
                const SamplingRequest& r, ResponseShape shape, const char* prompt_param) {
    Result<std::shared_ptr<RequestStream>> submitted = s->submit(std::move(prompt), r.params);
    if (!submitted.is_ok())
      return send_error(res, http_status_of(submitted.status()), submitted.status().message(),
                        submitted.status().code() == ErrorCode::kInvalidArgument ? prompt_param : "");
    std::shared_ptr<RequestStream> stream = std::move(submitted).value();
    if (!r.stream) {
      // Waits for the whole answer, watching the connection: a client that has
      // gone cancels its generation as a streaming one does.
      const int fd = find_client_socket(req.remote_addr, req.remote_port);
      RequestUpdate u;
      std::string text;
      bool gone = false;
      auto next_check = std::chrono::steady_clock::now();
      for (;;) {
        RequestUpdate part = stream->poll(std::chrono::milliseconds(100));
        text += part.text;
        if (part.done) {
          u = std::move(part);
          break;
        }
        // Text arrives with every token, so the connection is looked at by the
        // clock (every 100 ms), not only when the wait times out.
        const auto now = std::chrono::steady_clock::now();
        if (!gone && fd >= 0 && now >= next_check) {
          next_check = now + std::chrono::milliseconds(100);
          if (serve::client_gone(fd)) {
            gone = true;
            stream->cancel();
          }
        }
      }
      u.text = std::move(text);
      if (u.reason == FinishReason::kError) return send_error(res, http_status_of(u.error), u.error.message());
      if (u.reason == FinishReason::kCancelled)
        return send_error(res, 503, gone ? "the client disconnected" : "the server is shutting down");
      json j = shape.whole(u.text, openai_finish_reason(u.reason));
      j["usage"] = usage_json({u.prompt_tokens, u.completion_tokens});
      return send_json(res, j);
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    const bool include_usage = r.include_usage;
    auto started = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [stream, shape, include_usage, started](size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& data) {
            if (sink.write(data.data(), data.size())) return true;
            stream->cancel();  // the client went away
            return false;
          };
          auto with_usage = [&](json j) {
            if (include_usage) j["usage"] = nullptr;
            return j;
          };
          if (!*started) {
            *started = true;
            if (shape.first_chunk && !write(sse(with_usage(*shape.first_chunk)))) return false;
          }
          bool timed_out = false;
          const RequestUpdate u = stream->poll(std::chrono::milliseconds(200), &timed_out);
          if (timed_out) {
            if (!sink.is_writable()) {
              stream->cancel();
              return false;
            }
            return true;
          }
          if (!u.text.empty() && !write(sse(with_usage(shape.chunk(u.text, nullptr))))) return false;
          if (!u.done) return true;
          if (u.reason == FinishReason::kError || u.reason == FinishReason::kCancelled) {
            const int status = u.reason == FinishReason::kError ? http_status_of(u.error) : 503;
            const std::string message =
                u.reason == FinishReason::kError ? u.error.message() : std::string("the server is shutting down");
            if (!write(sse(error_body(status, message)))) return false;
          } else {
            if (!write(sse(with_usage(shape.chunk("", openai_finish_reason(u.reason)))))) return false;
            if (include_usage) {
              json last = shape.chunk("", nullptr);
              last["choices"] = json::array();
              last["usage"] = usage_json({u.prompt_tokens, u.completion_tokens});
              if (!write(sse(last))) return false;
            }
          }
          if (!write("data: [DONE]\n\n")) return false;
          sink.done();
          return true;
        },
        [stream](bool success) {
          if (!success) stream->cancel();
        });
  }
};

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpServer::~HttpServer() { stop(); }

Status HttpServer::bind() {
  const std::string& host = impl_->options.host;
  const int port = impl_->options.port;
  if (port < 0 || port > 65535) return invalid_argument("--port must be within [0, 65535]");
  if (port == 0) {
    const int p = impl_->server.bind_to_any_port(host);
    if (p <= 0) return unavailable("cannot bind " + host + " to any port");
    impl_->bound_port = p;
  } else {
    if (!impl_->server.bind_to_port(host, port))
      return unavailable("cannot bind " + host + ":" + std::to_string(port) +
                         " (in use, or not an address of this machine)");
    impl_->bound_port = port;
  }
  // Debian's cpp-httplib 0.11 (a compiled library) listens with a backlog of 5:
  // a burst of connects (32 clients at once against a slow sanitizer build)
  // overflowed the accept queue (TcpExtListenOverflows) and a client saw
  // "connection reset by peer". Listening again on a listening socket only
  // raises its backlog (Linux; net.core.somaxconn caps it).
  if (impl_->listen_socket != INVALID_SOCKET) (void)::listen(impl_->listen_socket, 4096);
  return Status::ok();
}

int HttpServer::port() const { return impl_->bound_port; }

Status HttpServer::serve() {
  if (impl_->bound_port == 0) return internal_error("HttpServer::serve before bind");
  impl_->serve_entered.store(true);
  struct Returned {
    Impl* impl;
    ~Returned() { impl->serve_returned.store(true); }
  } returned{impl_.get()};
  if (impl_->stop_requested.load()) return Status::ok();
  if (!impl_->server.listen_after_bind()) return io_error("the HTTP server stopped with an error");
  return Status::ok();
}

void HttpServer::stop() {
  impl_->stop_requested.store(true);
  if (!impl_->serve_entered.load()) return;  // serve() will see the request
  while (!impl_->server.is_running() && !impl_->serve_returned.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (impl_->server.is_running()) impl_->server.stop();
}

void HttpServer::set_ready(const Engine* engine, Scheduler* scheduler) {
  impl_->scheduler.store(scheduler);
  impl_->engine.store(engine);
}

}  // namespace submoe::serve
