#include "submoe/serve/scheduler.h"

#include <algorithm>
#include <utility>

#include "submoe/core/clock.h"

namespace submoe::serve {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// ---- RequestStream ----------------------------------------------------------

RequestUpdate RequestStream::poll(std::chrono::milliseconds timeout, bool* timed_out) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool ready = changed_.wait_for(lock, timeout, [&] { return !state_.text.empty() || state_.done; });
  if (timed_out) *timed_out = !ready;
  RequestUpdate out = state_;
  state_.text.clear();
  return out;
}

RequestUpdate RequestStream::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return state_.done; });
  RequestUpdate out = state_;
  state_.text.clear();
  return out;
}

void RequestStream::append(const std::string& text, int completion_tokens) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_.first_token_seconds == 0 && completion_tokens > 0)
      state_.first_token_seconds = seconds_between(submitted_, Clock::now());
    state_.text += text;
    state_.completion_tokens = completion_tokens;
  }
  if (!text.empty()) changed_.notify_all();
}

void RequestStream::finish(FinishReason reason, Status error, int completion_tokens) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.done = true;
    state_.reason = reason;
    state_.error = std::move(error);
    state_.completion_tokens = completion_tokens;
    state_.total_seconds = seconds_between(submitted_, Clock::now());
  }
  changed_.notify_all();
}

// ---- Scheduler --------------------------------------------------------------

struct Scheduler::Pending {
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> prompt;
  GenerationParams params;
};

struct Scheduler::Active {
  std::shared_ptr<RequestStream> stream;
  std::unique_ptr<Sequence> sequence;
  std::unique_ptr<model::Session> session;
  size_t prefilled = 0;  // prompt tokens in the session's cache
  int32_t next_token = 0;  // to feed at the next step once the prompt is in
  Status error;
};

Status Scheduler::validate(const SchedulerOptions& o) {
  if (o.max_batch < 1) return invalid_argument("the maximum batch must be at least 1");
  if (o.max_queue < 0) return invalid_argument("the queue limit must be >= 0");
  if (o.prefill_chunk < 1) return invalid_argument("the prefill chunk must be at least 1 token");
  return Status::ok();
}

Scheduler::Scheduler(const Engine& engine, ThreadPool* pool, const SchedulerOptions& options)
    : engine_(engine), pool_(pool), options_(options), batch_(engine.model(), pool) {
  options_.max_batch = std::max(1, options_.max_batch);
  options_.max_queue = std::max(0, options_.max_queue);
  options_.prefill_chunk = std::max<size_t>(1, options_.prefill_chunk);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

void Scheduler::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Requests never admitted end as cancelled.
  std::deque<std::unique_ptr<Pending>> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(queue_);
    stats_.queued = 0;
  }
  for (auto& p : left) p->stream->finish(FinishReason::kCancelled, Status::ok(), 0);
}

Result<std::shared_ptr<RequestStream>> Scheduler::submit(std::vector<int32_t> prompt, const GenerationParams& params) {
  SUBMOE_RETURN_IF_ERROR(serve::validate(params));
  SUBMOE_RETURN_IF_ERROR(engine_.check_prompt(prompt, params.allow_long_context));
  auto p = std::make_unique<Pending>();
  p->stream = std::make_shared<RequestStream>();
  p->stream->submitted_ = Clock::now();
  p->stream->state_.prompt_tokens = static_cast<int>(prompt.size());
  p->prompt = std::move(prompt);
  p->params = params;
  std::shared_ptr<RequestStream> stream = p->stream;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return unavailable("the scheduler is shutting down");
    // Room: the queue limit plus the slots that are free now (admitted at the next step).
    const size_t room = static_cast<size_t>(options_.max_queue) +
                        static_cast<size_t>(std::max(0, options_.max_batch - stats_.active));
    if (queue_.size() >= room) {
      ++stats_.requests_rejected;
      return unavailable("the request queue is full (" + std::to_string(options_.max_queue) +
                         " waiting, " + std::to_string(stats_.active) + " running); retry later");
    }
    queue_.push_back(std::move(p));
    ++stats_.requests_submitted;
    stats_.queued = static_cast<int>(queue_.size());
  }
  work_.notify_all();
  return stream;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Scheduler::loop() {
  std::vector<std::unique_ptr<Active>> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
    }
    admit(&active);
    step(&active);
    retire(&active);
  }
  for (auto& a : active) {
    a->sequence->finish(FinishReason::kCancelled);
    a->stream->finish(FinishReason::kCancelled, Status::ok(), a->sequence->completion_tokens());
  }
}

void Scheduler::admit(std::vector<std::unique_ptr<Active>>* active) {
  std::vector<std::unique_ptr<Pending>> admitted;
  std::vector<std::unique_ptr<model::Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!queue_.empty() && active->size() + admitted.size() < static_cast<size_t>(options_.max_batch)) {
      admitted.push_back(std::move(queue_.front()));
      queue_.pop_front();
      if (!free_sessions_.empty()) {
        sessions.push_back(std::move(free_sessions_.back()));
        free_sessions_.pop_back();
      } else {
        sessions.push_back(nullptr);
      }
    }
    stats_.queued = static_cast<int>(queue_.size());
    stats_.active = static_cast<int>(active->size() + admitted.size());
  }
  const auto now = Clock::now();
  for (size_t i = 0; i < admitted.size(); ++i) {
    Pending& p = *admitted[i];
    auto a = std::make_unique<Active>();
    a->stream = std::move(p.stream);
    {
      std::lock_guard<std::mutex> lock(a->stream->mutex_);
      a->stream->state_.queue_seconds = seconds_between(a->stream->submitted_, now);
    }
    a->sequence = std::make_unique<Sequence>(engine_, std::move(p.prompt), p.params);
    a->session = sessions[i] ? std::move(sessions[i]) : std::make_unique<model::Session>(engine_.model(), pool_);
    a->session->reset();
    const size_t want = a->sequence->prompt().size() + static_cast<size_t>(std::min(a->sequence->token_budget(), 4096));
    a->session->reserve(want);
    active->push_back(std::move(a));
  }
}

void Scheduler::step(std::vector<std::unique_ptr<Active>>* active) {
  // Cancelled requests and those with nothing to generate leave before the forward.
  for (auto& a : *active) {
    if (a->stream->cancelled()) a->sequence->finish(FinishReason::kCancelled);
  }
  entries_.clear();
  entry_owners_.clear();
  with_logits_.clear();
  size_t prefill_budget = options_.prefill_chunk;
  for (auto& a : *active) {
    Sequence& s = *a->sequence;
    if (s.finished()) continue;
    const std::vector<int32_t>& prompt = s.prompt();
    if (a->prefilled == prompt.size()) {
      entries_.push_back({a->session.get(), std::span<const int32_t>(&a->next_token, 1), true});
      entry_owners_.push_back(a.get());
      with_logits_.push_back(a.get());
    } else if (prefill_budget > 0) {
      const size_t n = std::min(prefill_budget, prompt.size() - a->prefilled);
      prefill_budget -= n;
      const bool last = a->prefilled + n == prompt.size();
      entries_.push_back({a->session.get(), std::span<const int32_t>(prompt).subspan(a->prefilled, n), last});
      entry_owners_.push_back(a.get());
      if (last) with_logits_.push_back(a.get());
    }
  }
  if (entries_.empty()) return;
  size_t tokens = 0;
  for (const auto& e : entries_) tokens += e.tokens.size();
  const auto t0 = Clock::now();
  const Status s = batch_.forward(entries_, &logits_);
  const double busy = seconds_between(t0, Clock::now());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.steps;
    stats_.step_rows += entries_.size();
    stats_.step_tokens += tokens;
    stats_.busy_seconds += busy;
  }
  if (!s) {
    // Every sequence of the failed step ends with the error; the others go on.
    for (Active* a : entry_owners_) {
      a->error = s;
      a->sequence->finish(FinishReason::kError);
    }
    return;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    Active& a = *entry_owners_[i];
    if (a.prefilled < a.sequence->prompt().size()) a.prefilled += entries_[i].tokens.size();
  }
  const size_t V = static_cast<size_t>(engine_.model().config().vocab_size);
  for (size_t r = 0; r < with_logits_.size(); ++r) {
    Active& a = *with_logits_[r];
    Result<std::optional<int32_t>> next = a.sequence->next(std::span<const float>(logits_).subspan(r * V, V));
    if (!next.is_ok()) {
      a.error = next.status();
      continue;
    }
    if (next.value()) a.next_token = *next.value();
    const std::string text = a.sequence->take_text();
    a.stream->append(text, a.sequence->completion_tokens());
  }
}

void Scheduler::retire(std::vector<std::unique_ptr<Active>>* active) {
  std::vector<std::unique_ptr<model::Session>> freed;
  uint64_t finished_by_reason[kFinishReasonCount] = {};
  uint64_t prompt_tokens = 0, completion_tokens = 0;
  for (auto& a : *active) {
    if (!a->sequence->finished()) continue;
    Sequence& s = *a->sequence;
    a->stream->append(s.take_text(), s.completion_tokens());
    a->stream->finish(s.finish_reason(), a->error, s.completion_tokens());
    ++finished_by_reason[static_cast<int>(s.finish_reason())];
    prompt_tokens += s.prompt().size();
    completion_tokens += static_cast<uint64_t>(s.completion_tokens());
    freed.push_back(std::move(a->session));
    a.reset();
  }
  if (freed.empty()) return;
  active->erase(std::remove(active->begin(), active->end(), nullptr), active->end());
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& session : freed)
    if (free_sessions_.size() < static_cast<size_t>(options_.max_batch)) free_sessions_.push_back(std::move(session));
  for (int i = 0; i < kFinishReasonCount; ++i) stats_.requests_finished[i] += finished_by_reason[i];
  stats_.prompt_tokens += prompt_tokens;
  stats_.completion_tokens += completion_tokens;
  stats_.active = static_cast<int>(active->size());
}

}  // namespace submoe::serve
