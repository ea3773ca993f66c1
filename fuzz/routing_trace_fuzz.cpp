// libFuzzer target: the routing trace reader (offload/routing_trace.h,
// RoutingTrace::parse, docs/trace-format.md) and the two readers of a parsed
// trace behind `submoe trace stats` and `trace simulate` (compute_trace_stats,
// simulate_cache). The input is a whole trace file. Beyond "no crash":
//   - an accepted trace has non-zero dimensions, top_k <= num_experts, and
//     every expert id of every (token, layer) is < num_experts;
//   - save() then load() gives the same trace, and the saved bytes are the
//     input's with the reserved header fields zeroed (the only bytes a reader
//     ignores);
//   - per layer, the statistics count every choice once and their shares lie
//     in [0, 1];
//   - every cache policy counts each access once (hits + misses = accesses,
//     per layer too), Belady (the offline optimum) hits at least as often as
//     any other policy at the same capacity, and with room for every slot all
//     policies miss exactly once per distinct slot.
// The statistics and the simulator are only run on small traces (at most 2^14
// slots; the simulator 2^10 slots and 2^9 accesses) to keep runs fast.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/offload/trace_stats.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::offload;

namespace {

using submoe::fuzz::require;

void check_save_load(const RoutingTrace& t, const uint8_t* data, size_t size) {
  char path[] = "/tmp/submoe-fuzz-trace-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return;
  ::close(fd);
  require(t.save(path).is_ok());
  std::vector<uint8_t> saved;
  {
    std::ifstream f(path, std::ios::binary);
    saved.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  auto back = RoutingTrace::load(path);
  ::unlink(path);
  std::vector<uint8_t> expect(data, data + size);
  std::memset(expect.data() + 36, 0, 12);  // reserved u32 at 36, u64 at 40
  require(saved == expect);
  require(back.is_ok());
  require(back->num_layers() == t.num_layers() && back->num_experts() == t.num_experts() &&
          back->top_k() == t.top_k() && back->num_tokens() == t.num_tokens());
}

void check_stats(const RoutingTrace& t) {
  const TraceStats s = compute_trace_stats(t);
  require(s.layers.size() == t.num_layers());
  for (const LayerRoutingStats& l : s.layers) {
    require(l.counts.size() == t.num_experts());
    uint64_t total = 0;
    for (uint64_t c : l.counts) total += c;
    require(total == t.num_tokens() * t.top_k());
    require(l.top_quartile_mass >= 0.0 && l.top_quartile_mass <= 1.0);
    require(l.consecutive_reuse >= 0.0 && l.consecutive_reuse <= 1.0);
    require(std::isfinite(l.zipf_exponent));
    require(l.distinct_per_batch.size() == std::size(kStatsBatchSizes));
    for (size_t i = 0; i < l.distinct_per_batch.size(); ++i) {
      const double d = l.distinct_per_batch[i];
      require(d >= 0.0 && d <= double(kStatsBatchSizes[i]) * t.top_k() && d <= double(t.num_experts()));
    }
  }
}

void check_simulation(const RoutingTrace& t) {
  const uint64_t slots = uint64_t{t.num_layers()} * t.num_experts();
  const uint64_t accesses = t.num_tokens() * t.num_layers() * t.top_k();
  std::set<uint64_t> distinct;
  for (uint64_t tok = 0; tok < t.num_tokens(); ++tok)
    for (uint32_t l = 0; l < t.num_layers(); ++l)
      for (uint32_t k = 0; k < t.top_k(); ++k) distinct.insert(uint64_t{l} * t.num_experts() + t.token_layer(tok, l)[k].expert);
  const std::vector<uint64_t> pop = expert_popularity(t);
  require(pop.size() == slots);
  for (uint64_t capacity : {uint64_t{0}, uint64_t{1}, uint64_t{3}, slots / 2, slots + 5}) {
    uint64_t belady_hits = 0, best_other = 0;
    for (CachePolicy p : {CachePolicy::kBelady, CachePolicy::kLru, CachePolicy::kLfu, CachePolicy::kPinned,
                          CachePolicy::kHybrid}) {
      SimulationOptions o;
      o.policy = p;
      o.capacity_slots = capacity;
      o.expert_bytes = 3;
      auto r = simulate_cache(t, o);
      require(r.is_ok());
      require(r->accesses == accesses && r->hits + r->misses == accesses && r->bytes_fetched == 3 * r->misses);
      require(r->layer_hits.size() == t.num_layers() && r->layer_misses.size() == t.num_layers());
      uint64_t h = 0, m = 0;
      for (uint32_t l = 0; l < t.num_layers(); ++l) {
        h += r->layer_hits[l];
        m += r->layer_misses[l];
      }
      require(h == r->hits && m == r->misses);
      if (capacity >= slots) require(r->misses == distinct.size());
      if (capacity == 0 && p != CachePolicy::kPinned && p != CachePolicy::kHybrid) require(r->hits == 0);
      if (p == CachePolicy::kBelady) {
        belady_hits = r->hits;
      } else {
        best_other = std::max(best_other, r->hits);
      }
    }
    require(belady_hits >= best_other);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 16)) return 0;
  auto t = RoutingTrace::parse(data, size, "fuzz");
  if (!t.is_ok()) return 0;
  const RoutingTrace& trace = *t;
  require(trace.num_layers() > 0 && trace.num_experts() > 0 && trace.top_k() > 0);
  require(trace.top_k() <= trace.num_experts() && trace.num_experts() <= 65536);
  require(48 + trace.num_tokens() * trace.num_layers() * trace.top_k() * 4 == size);
  for (uint64_t tok = 0; tok < trace.num_tokens(); ++tok)
    for (uint32_t l = 0; l < trace.num_layers(); ++l) {
      const ExpertChoice* c = trace.token_layer(tok, l);
      for (uint32_t k = 0; k < trace.top_k(); ++k) require(c[k].expert < trace.num_experts());
    }
  check_save_load(trace, data, size);
  const uint64_t slots = uint64_t{trace.num_layers()} * trace.num_experts();
  if (slots > (1u << 14)) return 0;
  check_stats(trace);
  if (slots <= (1u << 10) && trace.num_tokens() * trace.num_layers() * trace.top_k() <= (1u << 9))
    check_simulation(trace);
  return 0;
}
