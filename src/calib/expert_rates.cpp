#include "expert_rates.h"

#include <algorithm>
#include <set>

#include "submoe/calib/rate_allocation.h"
#include "submoe/core/sha256.h"
#include "submoe/offload/routing_trace.h"
#include "submoe/offload/trace_recorder.h"

namespace submoe::calib::detail {
namespace {

using nlohmann::json;

// counts[i][e]: routing choices of expert e in the i-th MoE layer of the trace.
std::vector<std::vector<uint64_t>> count_choices(const offload::RoutingTrace& t) {
  std::vector<std::vector<uint64_t>> counts(t.num_layers(), std::vector<uint64_t>(t.num_experts(), 0));
  for (uint64_t tok = 0; tok < t.num_tokens(); ++tok)
    for (uint32_t l = 0; l < t.num_layers(); ++l) {
      const offload::ExpertChoice* c = t.token_layer(tok, l);
      for (uint32_t j = 0; j < t.top_k(); ++j) ++counts[l][c[j].expert];
    }
  return counts;
}

// Routing counts per MoE layer, and where they came from.
Result<std::pair<std::vector<std::vector<uint64_t>>, json>> popularity(const CompressOptions& o,
                                                                       const model::MoeModel& model,
                                                                       const CalibrationSet& set,
                                                                       size_t moe_layers, ThreadPool* pool) {
  const auto experts = static_cast<uint32_t>(model.config().num_experts);
  if (!o.popularity_path.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace t, offload::RoutingTrace::load(o.popularity_path));
    if (t.num_layers() != moe_layers || t.num_experts() != experts)
      return invalid_argument("--popularity '" + o.popularity_path + "' records " + std::to_string(t.num_layers()) +
                              " MoE layers of " + std::to_string(t.num_experts()) + " experts; the model has " +
                              std::to_string(moe_layers) + " of " + std::to_string(experts));
    if (t.num_tokens() == 0) return invalid_argument("--popularity '" + o.popularity_path + "' holds no tokens");
    SUBMOE_ASSIGN_OR_RETURN(std::string sha, sha256_file(o.popularity_path));
    json src = {{"source", "trace"}, {"trace_sha256", sha}, {"tokens", t.num_tokens()}};
    return std::make_pair(count_choices(t), src);
  }
  // The calibration windows through the source model, each from an empty cache.
  offload::TraceRecordOptions r;
  r.context = set.seq_len;
  r.prefill_chunk = std::min<size_t>(set.seq_len, 128);
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace t, offload::record_routing_trace(model, set.tokens, r, pool));
  json src = {{"source", "calibration"}, {"tokens", t.num_tokens()},
              {"routing", "the source model (uncompressed) on the calibration windows, all tokens"}};
  return std::make_pair(count_choices(t), src);
}

}  // namespace

Result<ExpertRates> plan_expert_rates(const CompressOptions& o, const model::MoeModel& model, const CalibrationSet& set,
                                      std::span<const size_t> sparse_layers, ThreadPool* pool) {
  ExpertRates out;
  if (o.alloc == RateAlloc::kUniform) {
    if (!o.popularity_path.empty()) return invalid_argument("--popularity goes with --alloc thirds or waterfill");
    SUBMOE_ASSIGN_OR_RETURN(auto codec, runtime::make_codec(o.repr));
    out.codecs.push_back(std::move(codec));
    out.identity = "uniform";
    return out;
  }
  SUBMOE_ASSIGN_OR_RETURN(const runtime::Representation* rep, runtime::find_representation(o.repr.name));
  // A codec at the requested rate validates the options before any work.
  SUBMOE_RETURN_IF_ERROR(rep->from_options(o.repr).status());
  const runtime::RateLadder ladder = rep->rate_ladder(o.repr);
  if (!(ladder.step_bits > 0))
    return invalid_argument("--alloc " + std::string(rate_alloc_name(o.alloc)) + ": representation " +
                            std::string(rep->name()) + " has no rate ladder (per-expert rates need one: rvq, int)");
  SUBMOE_ASSIGN_OR_RETURN(auto pop, popularity(o, model, set, sparse_layers.size(), pool));
  const auto& counts = pop.first;

  const LadderRange range{ladder.min_offset, ladder.max_offset, ladder.step_bits};
  std::vector<std::vector<int>> offsets;
  std::set<int> used;
  for (size_t i = 0; i < sparse_layers.size(); ++i) {
    SUBMOE_ASSIGN_OR_RETURN(std::vector<int> k, allocate_rates(o.alloc, counts[i], range));
    used.insert(k.begin(), k.end());
    offsets.push_back(std::move(k));
  }
  const std::vector<int> distinct(used.begin(), used.end());  // ascending: records in rate order
  SUBMOE_ASSIGN_OR_RETURN(out.codecs, rep->codecs_on_ladder(o.repr, distinct));

  const double base = *o.repr.bits;
  const size_t L = static_cast<size_t>(model.config().num_hidden_layers);
  out.records.assign(L, {});
  json layers = json::array();
  for (size_t i = 0; i < sparse_layers.size(); ++i) {
    const size_t l = sparse_layers[i];
    std::vector<double> bits;
    size_t unrouted = 0;
    double sum = 0;
    for (size_t e = 0; e < offsets[i].size(); ++e) {
      const int k = offsets[i][e];
      out.records[l].push_back(static_cast<uint32_t>(std::lower_bound(distinct.begin(), distinct.end(), k) -
                                                     distinct.begin()));
      bits.push_back(base + k * ladder.step_bits);
      sum += bits.back();
      unrouted += counts[i][e] == 0;
    }
    layers.push_back({{"layer", l},
                      {"counts", counts[i]},
                      {"bits", bits},
                      {"mean_bits", sum / static_cast<double>(bits.size())},
                      {"unrouted_experts", unrouted}});
  }
  out.provenance = {{"policy", std::string(rate_alloc_name(o.alloc))},
                    {"requested_bits", base},
                    {"step_bits", ladder.step_bits},
                    {"popularity", pop.second},
                    {"unrouted_rule",
                     o.alloc == RateAlloc::kThirds
                         ? "ranked last (count 0), so in the bottom third"
                         : "Jeffreys-smoothed popularity (count + 1/2), rounded to the ladder like the others"},
                    {"layers", layers}};
  out.identity = {{"policy", std::string(rate_alloc_name(o.alloc))}, {"popularity", pop.second}, {"offsets", offsets}};
  return out;
}

}  // namespace submoe::calib::detail
