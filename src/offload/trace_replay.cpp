#include "submoe/offload/trace_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>

#include "submoe/core/thread_pool.h"
#include "submoe/model/linear_op.h"

namespace submoe::offload {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The source's layers that hold routed experts, in order.
std::vector<int> expert_layers(const ExpertSource& source) {
  std::vector<int> layers;
  for (int l = 0; l < source.num_layers(); ++l)
    if (source.byte_range(ExpertKey{l, 0}).is_ok()) layers.push_back(l);
  return layers;
}

// down(silu(gate x) * up x) for the n tokens in x (n x H) into y (n x H).
void run_expert(const model::ExpertOps& ops, const float* x, size_t n, float* g, float* u, float* y, ThreadPool* pool) {
  ops.gate->forward(x, n, g, pool);
  ops.up->forward(x, n, u, pool);
  const size_t inter = ops.gate->out_features();
  for (size_t i = 0; i < n * inter; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  ops.down->forward(g, n, y, pool);
}

}  // namespace

double TraceReplayResult::mean_distinct_experts() const {
  if (steps == 0 || layers.empty()) return 0.0;
  uint64_t runs = 0;
  for (const auto& l : layers) runs += l.expert_runs;
  return static_cast<double>(runs) / (static_cast<double>(steps) * static_cast<double>(layers.size()));
}

Result<TraceReplayResult> replay_trace(const RoutingTrace& trace, const ExpertSource& source,
                                       CachedExpertProvider& provider, ThreadPool* pool,
                                       const TraceReplayOptions& o) {
  if (o.batch == 0 || o.batch > kMaxReplayBatch)
    return invalid_argument("trace replay: batch " + std::to_string(o.batch) + " (1.." +
                            std::to_string(kMaxReplayBatch) + ")");
  const std::vector<int> layers = expert_layers(source);
  if (layers.size() != trace.num_layers() || trace.num_experts() != static_cast<uint32_t>(source.num_experts()))
    return invalid_argument("trace replay: the trace routes " + std::to_string(trace.num_experts()) + " experts in " +
                            std::to_string(trace.num_layers()) + " MoE layers, the artifact has " +
                            std::to_string(source.num_experts()) + " experts in " + std::to_string(layers.size()) +
                            " layers with routed experts");
  const uint64_t total = o.max_tokens == 0 ? trace.num_tokens() : std::min<uint64_t>(o.max_tokens, trace.num_tokens());
  if (total == 0) return invalid_argument("trace replay: the trace has no tokens");
  const RoutingTrace* pred = o.predictions;
  if (pred && (pred->num_layers() != trace.num_layers() || pred->num_experts() != trace.num_experts() ||
               pred->top_k() != trace.top_k() || pred->num_tokens() < total))
    return invalid_argument("trace replay: the predictions (" + std::to_string(pred->num_tokens()) + " tokens, " +
                            std::to_string(pred->num_layers()) + " layers, " + std::to_string(pred->num_experts()) +
                            " experts, top-" + std::to_string(pred->top_k()) +
                            ") do not match the trace; record both in one trace record --predictions-out");
  std::vector<int> predicted;

  TraceReplayResult r;
  r.batch = o.batch;
  r.layers.resize(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) r.layers[i].model_layer = layers[i];

  // Expert shapes come from the first acquired expert; buffers grow as needed.
  std::vector<float> x, g, u, y, xe;
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> n01;
  const uint32_t k = trace.top_k();
  std::vector<int> experts;
  std::vector<std::vector<uint32_t>> tokens_of(static_cast<size_t>(source.num_experts()));
  const auto start = Clock::now();
  for (uint64_t t0 = 0; t0 < total; t0 += o.batch) {
    const auto nb = static_cast<uint32_t>(std::min<uint64_t>(o.batch, total - t0));
    for (size_t li = 0; li < layers.size(); ++li) {
      const int layer = layers[li];
      experts.clear();
      for (auto& v : tokens_of) v.clear();
      for (uint32_t t = 0; t < nb; ++t) {
        const ExpertChoice* c = trace.token_layer(t0 + t, static_cast<uint32_t>(li));
        for (uint32_t j = 0; j < k; ++j) {
          const int e = static_cast<int>(c[j].expert);
          if (e >= source.num_experts())
            return invalid_argument("trace replay: token " + std::to_string(t0 + t) + " routes to expert " +
                                    std::to_string(e) + " of " + std::to_string(source.num_experts()));
          if (tokens_of[static_cast<size_t>(e)].empty()) experts.push_back(e);
          tokens_of[static_cast<size_t>(e)].push_back(t);
        }
      }
      std::sort(experts.begin(), experts.end());
      auto t_read = Clock::now();
      Status st = provider.begin_layer(layer, experts);
      r.layers[li].read_seconds += seconds_since(t_read);
      if (!st.is_ok())
        return st.with_context("trace replay: layer " + std::to_string(layer) + ", tokens " + std::to_string(t0) + ".." +
                               std::to_string(t0 + nb - 1));
      if (pred && li + 1 < layers.size()) {
        predicted.clear();
        for (uint32_t t = 0; t < nb; ++t) {
          const ExpertChoice* c = pred->token_layer(t0 + t, static_cast<uint32_t>(li + 1));
          for (uint32_t j = 0; j < k; ++j)
            if (c[j].expert < source.num_experts()) predicted.push_back(static_cast<int>(c[j].expert));
        }
        std::sort(predicted.begin(), predicted.end());
        predicted.erase(std::unique(predicted.begin(), predicted.end()), predicted.end());
        provider.predict(layers[li + 1], predicted);
      }
      const auto t_compute = Clock::now();
      for (int e : experts) {
        const model::ExpertOps ops = provider.ops(layer, e);
        const size_t hidden = ops.gate->in_features(), inter = ops.gate->out_features();
        if (x.size() < hidden * o.batch) {
          x.resize(hidden * o.batch);
          for (float& v : x) v = n01(rng);
        }
        const size_t n = tokens_of[static_cast<size_t>(e)].size();
        xe.resize(n * hidden);
        for (size_t i = 0; i < n; ++i)
          std::copy_n(x.data() + tokens_of[static_cast<size_t>(e)][i] * hidden, hidden, xe.data() + i * hidden);
        g.resize(n * inter);
        u.resize(n * inter);
        y.resize(n * hidden);
        run_expert(ops, xe.data(), n, g.data(), u.data(), y.data(), pool);
      }
      r.layers[li].compute_seconds += seconds_since(t_compute);
      r.layers[li].expert_runs += experts.size();
      provider.end_layer(layer);
    }
    r.tokens += nb;
    ++r.steps;
    if (o.progress) o.progress(r.tokens, total);
  }
  r.wall_seconds = seconds_since(start);
  for (const auto& l : r.layers) {
    r.read_seconds += l.read_seconds;
    r.compute_seconds += l.compute_seconds;
  }
  return r;
}

}  // namespace submoe::offload
