#include "offload_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>
#include <stdexcept>

#include "submoe/core/bf16.h"

namespace submoe::offload::testing {

RoutingTrace zipf_trace(uint32_t layers, uint32_t experts, uint32_t k, uint64_t tokens, double s, uint32_t seed,
                        uint32_t mul, uint32_t add) {
  std::mt19937 rng(seed);
  std::vector<double> w(experts);
  for (uint32_t e = 0; e < experts; ++e) w[e] = 1.0 / std::pow(e + 1.0, s);
  RoutingTrace t(layers, experts, k);
  std::vector<ExpertChoice> choices;
  for (uint64_t tok = 0; tok < tokens; ++tok) {
    choices.clear();
    for (uint32_t l = 0; l < layers; ++l) {
      std::vector<double> wl = w;
      for (uint32_t j = 0; j < k; ++j) {  // k distinct experts, without replacement
        std::discrete_distribution<uint32_t> pick(wl.begin(), wl.end());
        const uint32_t e = pick(rng);
        wl[e] = 0.0;
        choices.push_back({static_cast<uint16_t>((e * mul + add * l) % experts), float_to_bf16(0.5f)});
      }
    }
    EXPECT_TRUE(t.append_token(choices).is_ok());
  }
  return t;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

uint64_t canary_word(ExpertKey k, size_t i) {
  uint64_t x = (uint64_t{static_cast<uint32_t>(k.layer)} << 40) ^ (uint64_t{static_cast<uint32_t>(k.expert)} << 16) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

CanaryObject::CanaryObject(ExpertKey k, std::atomic<int>* live_count) : key(k), live(live_count) {
  for (size_t i = 0; i < kWords; ++i) words[i] = canary_word(k, i);
  live->fetch_add(1);
}

CanaryObject::~CanaryObject() {
  for (uint64_t& w : words) w = 0xdeaddeaddeaddeadULL;
  live->fetch_sub(1);
}

bool CanaryObject::intact(ExpertKey k) const {
  if (key != k) return false;
  for (size_t i = 0; i < kWords; ++i)
    if (words[i] != canary_word(k, i)) return false;
  return true;
}

Status FakeLoader::load(std::span<const ExpertKey> keys, std::span<LoadedExpert> out) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ++calls_;
    for (const ExpertKey& k : keys) {
      ++loads_[k];
      if (gated_.count(k) != 0) {
        entered_.insert(k);
        cv_.notify_all();
        cv_.wait(lock, [&] { return gated_.count(k) == 0; });
      }
    }
    for (const ExpertKey& k : keys)
      if (failing_.count(k) != 0) return io_error("fake loader: cannot load " + to_string(k));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i].object = std::make_shared<const CanaryObject>(keys[i], &live_);
    out[i].charge_bytes = estimate_charge(keys[i]);
    out[i].bytes_read = estimate_charge(keys[i]) + 1;  // distinguishable from the charge
  }
  return Status::ok();
}

void FakeLoader::fail(ExpertKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  failing_.insert(key);
}

void FakeLoader::close_gate(ExpertKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  gated_.insert(key);
}

void FakeLoader::open_gate(ExpertKey key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    gated_.erase(key);
  }
  cv_.notify_all();
}

void FakeLoader::wait_entered(ExpertKey key) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return entered_.count(key) != 0; });
}

int FakeLoader::load_count(ExpertKey key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loads_.find(key);
  return it == loads_.end() ? 0 : it->second;
}

int FakeLoader::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

}  // namespace submoe::offload::testing
