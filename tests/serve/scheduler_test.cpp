// The generation library on the embedded default model: a Sequence's stop
// conditions on crafted logits, and the Scheduler's continuous batching against
// generate_one on a session of its own (the same greedy tokens and text for every
// request, however requests overlap, whatever the prefill chunk), its queue
// limit, cancellation and refusals.
#include "submoe/serve/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "submoe/serve/generate_one.h"

namespace submoe::serve {
namespace {

const Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    LoadOptions o;
    o.model = std::string(SUBMOE_SOURCE_DIR) + "/models/default-moe";
    Result<std::unique_ptr<Engine>> r = Engine::load(o);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return std::move(r).value();
  }();
  return *e;
}

std::vector<float> one_hot(int32_t id) {
  std::vector<float> l(static_cast<size_t>(engine().model().config().vocab_size), -10.0f);
  l[static_cast<size_t>(id)] = 10.0f;
  return l;
}

struct Alone {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason reason;
};

Alone generate_alone(const std::vector<int32_t>& prompt, const GenerationParams& params, ThreadPool* pool) {
  model::Session session(engine().model(), pool);
  Sequence seq(engine(), prompt, params);
  GenerateOneOptions o;
  std::string text;
  o.on_text = [&](std::string_view t) { text += t; };
  Result<GenerateOneStats> r = generate_one(session, seq, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return {seq.output_ids(), text, seq.finish_reason()};
}

std::vector<int32_t> prompt_of(const std::string& text) {
  Result<std::vector<int32_t>> ids = engine().encode_prompt(text, false);
  EXPECT_TRUE(ids.is_ok());
  return ids.value();
}

TEST(Sequence, StopsAtEosAtTheBudgetAndAtTheContext) {
  ASSERT_FALSE(engine().eos_ids().empty());
  const int32_t eos = static_cast<int32_t>(*engine().eos_ids().begin());
  const int32_t other = eos == 5 ? 6 : 5;
  GenerationParams p;
  p.max_tokens = 3;
  Sequence a(engine(), {1, 2, 3}, p);
  ASSERT_EQ(a.next(one_hot(other)).value(), std::optional<int32_t>(other));
  EXPECT_EQ(a.next(one_hot(eos)).value(), std::nullopt);
  EXPECT_EQ(a.finish_reason(), FinishReason::kEos);
  EXPECT_EQ(a.completion_tokens(), 1);

  p.ignore_eos = true;
  Sequence b(engine(), {1, 2, 3}, p);
  EXPECT_TRUE(b.next(one_hot(eos)).value().has_value());
  EXPECT_TRUE(b.next(one_hot(eos)).value().has_value());
  EXPECT_EQ(b.next(one_hot(eos)).value(), std::nullopt);
  EXPECT_EQ(b.finish_reason(), FinishReason::kLength);
  EXPECT_EQ(b.completion_tokens(), 3);

  // Two positions left in the context: the budget is 2 and the reason "context".
  const int64_t context = engine().context_length();
  ASSERT_GT(context, 4);
  std::vector<int32_t> long_prompt(static_cast<size_t>(context - 2), 7);
  p = {};
  p.max_tokens = 10;
  Sequence c(engine(), long_prompt, p);
  EXPECT_EQ(c.token_budget(), 2);
  EXPECT_TRUE(c.next(one_hot(other)).value().has_value());
  EXPECT_EQ(c.next(one_hot(other)).value(), std::nullopt);
  EXPECT_EQ(c.finish_reason(), FinishReason::kContext);
  p.allow_long_context = true;
  EXPECT_EQ(Sequence(engine(), long_prompt, p).token_budget(), 10);

  p = {};
  p.max_tokens = 0;
  EXPECT_TRUE(Sequence(engine(), {1}, p).finished());
}

TEST(Sequence, NonFiniteLogitsAreAnErrorNotAToken) {
  GenerationParams p;
  Sequence s(engine(), {1, 2}, p);
  std::vector<float> l = one_hot(5);
  l[9] = std::numeric_limits<float>::quiet_NaN();
  Result<std::optional<int32_t>> r = s.next(l);
  EXPECT_EQ(r.status().code(), ErrorCode::kNumerical);
  EXPECT_EQ(s.finish_reason(), FinishReason::kError);
}

TEST(Sequence, StopStringCutsTheOutput) {
  // Greedy text of a prompt, then the same request with a stop string taken from
  // inside that text: the output is the text before it.
  ThreadPool pool(2);
  GenerationParams p;
  p.max_tokens = 24;
  p.ignore_eos = true;
  const std::vector<int32_t> prompt = prompt_of("The quick brown fox");
  const Alone full = generate_alone(prompt, p, &pool);
  ASSERT_GT(full.text.size(), 12u);
  const std::string stop = full.text.substr(full.text.size() / 2, 3);
  p.stop = {stop};
  const Alone cut = generate_alone(prompt, p, &pool);
  EXPECT_EQ(cut.reason, FinishReason::kStop);
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
}

TEST(Scheduler, BatchedRequestsEqualEachRequestAlone) {
  ThreadPool pool(2);
  const std::vector<std::string> texts = {
      "To be or not to be", "Once upon a time", "", "The capital of France is",
      "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "Hello", "A long prompt about many things, " "and more"};
  for (size_t chunk : {size_t{3}, size_t{64}}) {
    SchedulerOptions so;
    so.max_batch = 4;  // fewer slots than requests: some wait and join later
    so.prefill_chunk = chunk;
    Scheduler scheduler(engine(), &pool, so);
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<GenerationParams> params;
    for (size_t i = 0; i < texts.size(); ++i) {
      GenerationParams p;
      p.max_tokens = 6 + static_cast<int>(i) * 3;
      p.ignore_eos = i % 2 == 0;
      params.push_back(p);
      Result<std::shared_ptr<RequestStream>> s = scheduler.submit(prompt_of(texts[i]), p);
      ASSERT_TRUE(s.is_ok()) << s.status().to_string();
      streams.push_back(s.value());
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string text;
      RequestUpdate u;
      do {
        u = streams[i]->poll(std::chrono::milliseconds(1000));
        text += u.text;
      } while (!u.done);
      const Alone alone = generate_alone(prompt_of(texts[i]), params[i], &pool);
      EXPECT_EQ(text, alone.text) << "request " << i << ", prefill chunk " << chunk;
      EXPECT_EQ(u.reason, alone.reason) << "request " << i;
      EXPECT_EQ(u.completion_tokens, static_cast<int>(alone.ids.size())) << "request " << i;
      EXPECT_EQ(u.prompt_tokens, static_cast<int>(prompt_of(texts[i]).size()));
    }
    const SchedulerStats st = scheduler.stats();
    EXPECT_EQ(st.requests_submitted, texts.size());
    EXPECT_GT(st.step_rows, st.steps) << "no step ran more than one sequence";
    EXPECT_EQ(st.active, 0);
  }
}

TEST(Scheduler, FullQueueIsUnavailableAndCancellationFreesTheSlot) {
  ThreadPool pool(1);
  SchedulerOptions so;
  so.max_batch = 1;
  so.max_queue = 1;
  Scheduler scheduler(engine(), &pool, so);
  GenerationParams long_run;
  long_run.max_tokens = 1000;
  long_run.ignore_eos = true;
  auto a = scheduler.submit(prompt_of("first"), long_run);
  auto b = scheduler.submit(prompt_of("second"), long_run);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  auto c = scheduler.submit(prompt_of("third"), long_run);
  EXPECT_EQ(c.status().code(), ErrorCode::kUnavailable) << c.status().to_string();
  // Cancel the running one once it has produced something: it ends cancelled,
  // and the waiting one runs.
  RequestUpdate u;
  do u = a.value()->poll(std::chrono::milliseconds(2000));
  while (u.completion_tokens == 0 && !u.done);
  a.value()->cancel();
  const RequestUpdate end_a = a.value()->wait();
  EXPECT_EQ(end_a.reason, FinishReason::kCancelled);
  EXPECT_LT(end_a.completion_tokens, 1000);
  b.value()->cancel();
  EXPECT_EQ(b.value()->wait().reason, FinishReason::kCancelled);
  GenerationParams short_run;
  short_run.max_tokens = 2;
  short_run.ignore_eos = true;
  auto d = scheduler.submit(prompt_of("fourth"), short_run);
  ASSERT_TRUE(d.is_ok());
  const RequestUpdate end_d = d.value()->wait();
  EXPECT_EQ(end_d.reason, FinishReason::kLength);
  EXPECT_EQ(end_d.completion_tokens, 2);
  EXPECT_EQ(scheduler.stats().requests_rejected, 1u);
}

TEST(Scheduler, RefusesBadRequestsAtSubmit) {
  Scheduler scheduler(engine(), nullptr, {});
  GenerationParams p;
  EXPECT_EQ(scheduler.submit({}, p).status().code(), ErrorCode::kInvalidArgument);
  const int32_t vocab = static_cast<int32_t>(engine().model().config().vocab_size);
  EXPECT_EQ(scheduler.submit({1, vocab}, p).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(scheduler.submit({1, -1}, p).status().code(), ErrorCode::kInvalidArgument);
  std::vector<int32_t> too_long(static_cast<size_t>(engine().context_length() + 1), 3);
  EXPECT_EQ(scheduler.submit(too_long, p).status().code(), ErrorCode::kInvalidArgument);
  p.max_tokens = -2;
  EXPECT_EQ(scheduler.submit({1}, p).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(scheduler.stats().requests_submitted, 0u);
  EXPECT_EQ(Scheduler::validate({0, 1, 1}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::validate({1, -1, 1}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::validate({1, 1, 0}).code(), ErrorCode::kInvalidArgument);
}

TEST(Scheduler, ShutdownEndsRunningAndWaitingRequests) {
  ThreadPool pool(1);
  SchedulerOptions so;
  so.max_batch = 1;
  auto scheduler = std::make_unique<Scheduler>(engine(), &pool, so);
  GenerationParams p;
  p.max_tokens = 100000;
  p.ignore_eos = true;
  p.allow_long_context = true;
  auto a = scheduler->submit(prompt_of("a"), p);
  auto b = scheduler->submit(prompt_of("b"), p);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  a.value()->poll(std::chrono::milliseconds(500));
  scheduler.reset();
  EXPECT_EQ(a.value()->wait().reason, FinishReason::kCancelled);
  EXPECT_EQ(b.value()->wait().reason, FinishReason::kCancelled);
}

}  // namespace
}  // namespace submoe::serve
