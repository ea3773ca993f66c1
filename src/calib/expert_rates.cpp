#include "expert_rates.h"

#include <algorithm>
#include <optional>
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
// The routing trace of --popularity, checked against the model (cheap: done
// before any codebook is trained).
Result<offload::RoutingTrace> load_popularity_trace(const CompressOptions& o, const model::MoeModel& model,
                                                    size_t moe_layers) {
  const auto experts = static_cast<uint32_t>(model.config().num_experts);
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace t, offload::RoutingTrace::load(o.popularity_path));
  if (t.num_layers() != moe_layers || t.num_experts() != experts)
    return invalid_argument("--popularity '" + o.popularity_path + "' records " + std::to_string(t.num_layers()) +
                            " MoE layers of " + std::to_string(t.num_experts()) + " experts; the model has " +
                            std::to_string(moe_layers) + " of " + std::to_string(experts));
  if (t.num_tokens() == 0) return invalid_argument("--popularity '" + o.popularity_path + "' holds no tokens");
  return t;
}

// Routing counts per MoE layer, and where they came from: the trace, or the
// calibration windows through the source model, each from an empty cache.
Result<std::pair<std::vector<std::vector<uint64_t>>, json>> popularity(const CompressOptions& o,
                                                                       const model::MoeModel& model,
                                                                       const CalibrationSet& set,
                                                                       const offload::RoutingTrace* trace,
                                                                       ThreadPool* pool) {
  if (trace != nullptr) {
    SUBMOE_ASSIGN_OR_RETURN(std::string sha, sha256_file(o.popularity_path));
    json src = {{"source", "trace"}, {"trace_sha256", sha}, {"tokens", trace->num_tokens()}};
    return std::make_pair(count_choices(*trace), src);
  }
  offload::TraceRecordOptions r;
  r.context = set.seq_len;
  r.prefill_chunk = std::min<size_t>(set.seq_len, 128);
  SUBMOE_ASSIGN_OR_RETURN(offload::RoutingTrace t, offload::record_routing_trace(model, set.tokens, r, pool));
  json src = {{"source", "calibration"}, {"tokens", t.num_tokens()},
              {"routing", "the source model (uncompressed) on the calibration windows, all tokens"}};
  return std::make_pair(count_choices(t), src);
}

}  // namespace

Result<ExpertRates> plan_expert_rates(const CompressOptions& o, std::shared_ptr<const runtime::MatrixCodec> uniform_codec,
                                      const model::MoeModel& model, const CalibrationSet& set,
                                      std::span<const size_t> sparse_layers, ThreadPool* pool) {
  ExpertRates out;
  if (o.alloc == RateAlloc::kUniform) {
    if (uniform_codec == nullptr) return internal_error("plan_expert_rates: uniform allocation without its codec");
    out.codecs.push_back(std::move(uniform_codec));
    out.identity = "uniform";
    return out;
  }
  // Cheap checks first: the trace file, then the ladder (codecs_on_ladder
  // validates the options when it makes the codecs).
  SUBMOE_ASSIGN_OR_RETURN(const runtime::Representation* rep, runtime::find_representation(o.repr.name));
  std::optional<offload::RoutingTrace> trace;
  if (!o.popularity_path.empty()) {
    SUBMOE_ASSIGN_OR_RETURN(trace, load_popularity_trace(o, model, sparse_layers.size()));
  }
  const runtime::RateLadder ladder = rep->rate_ladder(o.repr);
  if (!(ladder.step_bits > 0)) {
    SUBMOE_RETURN_IF_ERROR(rep->from_options(o.repr).status());  // bad options say so first
    return invalid_argument("--alloc " + std::string(rate_alloc_name(o.alloc)) + ": representation " +
                            std::string(rep->name()) + " has no rate ladder (per-expert rates need one: rvq, int)");
  }
  const LadderRange range{ladder.min_offset, ladder.max_offset, ladder.step_bits};
  if (o.alloc == RateAlloc::kThirds && model.config().num_experts >= 3)
    SUBMOE_RETURN_IF_ERROR(allocate_rates(o.alloc, std::vector<uint64_t>(3, 0), range).status());
  SUBMOE_ASSIGN_OR_RETURN(auto pop, popularity(o, model, set, trace ? &*trace : nullptr, pool));
  const auto& counts = pop.first;
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
