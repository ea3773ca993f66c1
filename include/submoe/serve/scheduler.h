// Continuous batching: one thread runs every active request's next tokens in one
// model::BatchForward per step (each routed expert fetched and run once per step
// for the whole batch). Requests wait in a bounded queue and are admitted between
// steps up to max_batch; prompts are prefilled in chunks (at most prefill_chunk
// prompt tokens per step, shared by the sequences still prefilling) while the
// others keep decoding; a cancelled request frees its slot at the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/core/thread_pool.h"
#include "submoe/model/moe_model.h"
#include "submoe/serve/engine.h"
#include "submoe/serve/generation.h"

namespace submoe::serve {

struct SchedulerOptions {
  int max_batch = 8;           // sequences run together per step (>= 1)
  int max_queue = 64;          // requests waiting for a slot; beyond it submit() is kUnavailable (>= 0)
  size_t prefill_chunk = 256;  // prompt tokens per step over all prefilling sequences (>= 1)
};

// What a request has produced since the client last looked.
struct RequestUpdate {
  std::string text;    // new final text
  bool done = false;   // no more updates follow
  FinishReason reason = FinishReason::kNone;
  Status error;        // set when reason is kError
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double queue_seconds = 0;        // submit to admission
  double first_token_seconds = 0;  // submit to the first sampled token (0 until then)
  double total_seconds = 0;        // submit to the end (0 until done)
};

// One submitted request: the scheduler thread appends to it, its client polls it.
class RequestStream {
 public:
  // Waits up to `timeout` for new text or the end; returns everything new (text
  // accumulated since the last poll). `timed_out` is set when nothing came.
  RequestUpdate poll(std::chrono::milliseconds timeout, bool* timed_out = nullptr);
  // Blocks until the request is done; returns its whole remaining text and figures.
  RequestUpdate wait();
  // Asks the scheduler to stop this request at its next step (kCancelled).
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  friend class Scheduler;
  void append(const std::string& text, int completion_tokens);
  void finish(FinishReason reason, Status error, int completion_tokens);

  std::mutex mutex_;
  std::condition_variable changed_;
  RequestUpdate state_;  // text: not yet polled
  std::atomic<bool> cancelled_{false};
  std::chrono::steady_clock::time_point submitted_;
};

struct SchedulerStats {
  uint64_t requests_submitted = 0;
  uint64_t requests_rejected = 0;  // queue full
  uint64_t requests_finished[kFinishReasonCount] = {};  // by FinishReason
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t steps = 0;
  uint64_t step_rows = 0;   // sequences over all steps (mean batch = step_rows / steps)
  uint64_t step_tokens = 0; // tokens forwarded over all steps
  int active = 0;
  int queued = 0;
  double busy_seconds = 0;  // time spent in forward steps
};

class Scheduler {
 public:
  // `engine` and `pool` (may be null) must outlive the scheduler.
  Scheduler(const Engine& engine, ThreadPool* pool, const SchedulerOptions& options);
  ~Scheduler();  // cancels what is left and joins the thread
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  static Status validate(const SchedulerOptions& options);

  // Refuses new requests, ends the running and waiting ones (kCancelled) and stops
  // the thread; idempotent (the destructor calls it).
  void shutdown();

  // Queues a request. `prompt` is checked by Engine::check_prompt and `params` by
  // validate() (kInvalidArgument); a full queue is kUnavailable.
  Result<std::shared_ptr<RequestStream>> submit(std::vector<int32_t> prompt, const GenerationParams& params);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Pending;
  struct Active;
  void loop();
  void admit(std::vector<std::unique_ptr<Active>>* active);
  void step(std::vector<std::unique_ptr<Active>>* active);
  void retire(std::vector<std::unique_ptr<Active>>* active);

  const Engine& engine_;
  ThreadPool* pool_;
  SchedulerOptions options_;
  model::BatchForward batch_;

  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::unique_ptr<Pending>> queue_;
  std::vector<std::unique_ptr<model::Session>> free_sessions_;
  bool stopping_ = false;
  SchedulerStats stats_;  // under mutex_

  // Scheduler thread only.
  std::vector<model::BatchEntry> entries_;
  std::vector<Active*> entry_owners_;  // the request of each entry
  std::vector<Active*> with_logits_;   // the requests whose entry yields logits this step, in order
  std::vector<float> logits_;

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace submoe::serve
