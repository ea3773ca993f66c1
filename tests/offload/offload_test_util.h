// Test support for the offload module: temporary files, and a fake ExpertLoader
// whose objects carry a canary derived from their key (checked while held, and
// poisoned on destruction) with hooks to count, fail and hold loads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "submoe/offload/expert_loader.h"
#include "submoe/offload/routing_trace.h"
#include "temp_dir.h"

namespace submoe::offload::testing {

using submoe::testing::TempDir;

// A routing trace of `tokens` tokens: in every layer k distinct experts drawn
// without replacement from Zipf(s) popularity over expert ids, the popular ids
// mapped to expert (id * mul + layer * add) % experts so each layer has its own
// hot set; weights 0.5.
RoutingTrace zipf_trace(uint32_t layers, uint32_t experts, uint32_t k, uint64_t tokens, double s, uint32_t seed,
                        uint32_t mul, uint32_t add);

// A fresh directory under the system temp dir, removed with its contents.

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed);
// Writes bytes to `path` (plain, non-atomic: a test fixture).
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

// The canary word i of key k: a mix of (layer, expert, i) no other key shares.
uint64_t canary_word(ExpertKey k, size_t i);

struct CanaryObject {
  static constexpr size_t kWords = 32;
  ExpertKey key;
  uint64_t words[kWords];
  std::atomic<int>* live;

  CanaryObject(ExpertKey k, std::atomic<int>* live_count);
  ~CanaryObject();
  // True when every word still matches the key (false after destruction).
  bool intact(ExpertKey k) const;
};

// Loads CanaryObjects. charge(key) = base_charge + key.expert * per_expert_charge.
class FakeLoader final : public ExpertLoader {
 public:
  explicit FakeLoader(uint64_t base_charge = 100, uint64_t per_expert_charge = 0)
      : base_(base_charge), per_expert_(per_expert_charge) {}

  uint64_t estimate_charge(ExpertKey key) const override {
    return base_ + static_cast<uint64_t>(key.expert) * per_expert_;
  }
  Status load(std::span<const ExpertKey> keys, std::span<LoadedExpert> out) override;

  // Loads of `key` fail (kIoError naming the key).
  void fail(ExpertKey key);
  // Loads of `key` block inside load() until open_gate(key).
  void close_gate(ExpertKey key);
  void open_gate(ExpertKey key);
  // Blocks until a load of `key` has entered the gate.
  void wait_entered(ExpertKey key);

  int load_count(ExpertKey key) const;
  int calls() const;
  int live() const { return live_.load(); }

 private:
  uint64_t base_, per_expert_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::set<ExpertKey> failing_, gated_, entered_;
  std::map<ExpertKey, int> loads_;
  int calls_ = 0;
  std::atomic<int> live_{0};
};

}  // namespace submoe::offload::testing
