// Where a forward pass spends its time, by op class (run --profile, eval
// --profile): wall time per class measured on the calling thread around each
// op, the expert kernels also split by representation (thread time, since
// experts may run concurrently on several threads), and the thread pool's
// hand-offs and the caller's waits. Off (a null profile) it costs nothing but
// a branch per op.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace submoe {
class ThreadPool;
}

namespace submoe::model {

class LinearOp;

enum class OpClass : uint8_t {
  kEmbed,        // token embedding lookup and rope angles
  kNorm,         // RMSNorms and residual adds
  kAttnProj,     // q, k, v, o projections (+ biases)
  kAttnCore,     // qk-norm, rope, KV-cache writes, scores, softmax, mix
  kRouter,       // router projection, softmax, top-k, grouping
  kExpertFetch,  // ExpertProvider::begin_layer: expert-cache misses, page-in, prefetch hand-off
  kExperts,      // routed-expert kernels (gate, up, silu, down)
  kMoeCombine,   // the weighted sum of expert outputs
  kSharedExpert, // Qwen2-MoE's shared expert and its gate
  kDenseMlp,     // the MLP of dense layers
  kLmHead,       // final norm and lm_head
  kSampling,     // the sampler (the caller times it)
  kCount
};
const char* op_class_name(OpClass c);

class OpProfile {
 public:
  void add(OpClass c, uint64_t ns) {
    totals_[static_cast<size_t>(c)].ns += ns;
    ++totals_[static_cast<size_t>(c)].calls;
  }
  // Thread time of one expert projection; `op` names its representation.
  void add_expert_op(const LinearOp& op, uint64_t ns);
  // One forward pass of `tokens` tokens ended, taking `ns` wall time; the
  // pool's figures are read here, so later uses of the pool do not count.
  void add_forward(size_t tokens, uint64_t ns);
  // Reads the pool's hand-offs and waits from here on (enables its accounting).
  void attach_pool(ThreadPool* pool);
  void reset();

  // {"tokens", "forwards", "forward_ms", "ms_per_token", "classes": {name:
  // {"ms", "ms_per_token", "share", "calls"}}, "other_ms", "experts_by_representation":
  // {label: {"thread_ms", "ms_per_token"}}, "thread_pool": {"round_trips",
  // "round_trips_per_token", "wait_ms", "wait_ms_per_token"}}; shares are of
  // forward time; "other" is forward time no class covers.
  nlohmann::json to_json() const;
  // The same as a table, one line per class.
  std::string table(const std::string& title) const;

 private:
  struct Total {
    uint64_t ns = 0, calls = 0;
  };
  std::array<Total, static_cast<size_t>(OpClass::kCount)> totals_{};
  uint64_t tokens_ = 0, forwards_ = 0, forward_ns_ = 0;
  ThreadPool* pool_ = nullptr;
  uint64_t pool_trips0_ = 0, pool_wait0_ = 0;  // the pool's figures at attach
  uint64_t pool_trips_ = 0, pool_wait_ns_ = 0;  // since attach, at the last forward
  mutable std::mutex expert_mutex_;
  std::map<const LinearOp*, std::string> labels_;
  std::map<std::string, uint64_t> expert_ns_;
};

// Adds the scope's wall time to `profile` (nothing when it is null).
class ScopedOpTimer {
 public:
  ScopedOpTimer(OpProfile* profile, OpClass c) : profile_(profile), class_(c) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedOpTimer() {
    if (profile_) profile_->add(class_, elapsed_ns(start_));
  }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

  static uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
  }

 private:
  OpProfile* profile_;
  OpClass class_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace submoe::model
