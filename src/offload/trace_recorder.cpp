#include "submoe/offload/trace_recorder.h"

#include <algorithm>
#include <chrono>

#include "submoe/core/clock.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/offload/routing_trace_collector.h"
#include "submoe/runtime/quantization_config.h"

namespace submoe::offload {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Result<RoutingTrace> record_routing_trace(const model::MoeModel& model, std::span<const int32_t> tokens,
                                          const TraceRecordOptions& options, ThreadPool* pool) {
  if (options.context == 0) return invalid_argument("trace record: the context (window) length must be positive");
  if (options.prefill_chunk == 0) return invalid_argument("trace record: the prefill chunk must be positive");
  const io::MoeModelConfig& c = model.config();
  if (c.num_experts > 65536)
    return unsupported("trace record: the trace format holds at most 65536 experts, the model has " +
                       std::to_string(c.num_experts));
  bool any_moe = false;
  for (int l = 0; l < c.num_hidden_layers; ++l) any_moe = any_moe || c.is_moe_layer(l);
  if (!any_moe) return invalid_argument("trace record: the model has no MoE layer");

  if (options.max_tokens > 0 && tokens.size() > options.max_tokens)
    tokens = tokens.first(static_cast<size_t>(options.max_tokens));
  RoutingTraceCollector collector(c);
  RoutingTraceCollector predicted(c);
  int first_moe = 0;
  while (!c.is_moe_layer(first_moe)) ++first_moe;
  model::Session session(model, pool);
  session.reserve(std::min(options.context, tokens.size()));
  const bool predict = options.predictions != nullptr;
  session.set_routing_observer([&, predict](int layer, size_t first, const model::Routing& r) {
    collector.observe(layer, first, r);
    if (predict && layer == first_moe) predicted.observe(layer, first, r);
  });
  if (predict)
    session.set_prediction_observer(
        [&predicted](int layer, size_t first, const model::Routing& r) { predicted.observe(layer, first, r); });
  uint64_t done = 0;
  for (size_t start = 0; start < tokens.size(); start += options.context) {
    const size_t length = std::min(options.context, tokens.size() - start);
    session.reset();
    for (size_t off = 0; off < length; off += options.prefill_chunk) {
      const size_t n = std::min(options.prefill_chunk, length - off);
      Status s = session.forward(tokens.subspan(start + off, n), model::LogitsMode::kNone, nullptr);
      if (!s.is_ok()) return s.with_context("trace record: tokens " + std::to_string(start + off) + ".." +
                                            std::to_string(start + off + n));
      SUBMOE_RETURN_IF_ERROR(collector.end_forward());
      if (predict) SUBMOE_RETURN_IF_ERROR(predicted.end_forward().with_context("trace record: predictions"));
      done += n;
      if (options.progress) options.progress(done, tokens.size());
    }
  }
  if (predict) *options.predictions = predicted.take_trace();
  RoutingTrace trace = collector.take_trace();
  return trace;
}

Result<TraceRecordSummary> record_trace_file(const std::string& model_path, const std::string& text_path,
                                             const std::string& out_path, const TraceRecordOptions& options,
                                             ThreadPool* pool, const runtime::ArtifactModelOptions& load) {
  TraceRecordSummary summary;
  const auto t_load = Clock::now();
  summary.artifact = runtime::is_artifact(model_path);
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<model::MoeModel> m, runtime::load_model_or_artifact(model_path, load));
  auto tok = io::Tokenizer::load(model_path);
  if (!tok.is_ok()) return tok.status().with_context("trace record: the model's tokenizer");
  summary.load_seconds = seconds_since(t_load);

  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_text_file(text_path, options.lossy_text));
  auto encoded = tok->encode_lossless(text, /*add_special_tokens=*/true);
  if (!encoded.is_ok()) return encoded.status().with_context(text_path);
  const std::vector<int32_t> ids = std::move(*encoded);
  if (ids.empty()) return invalid_argument("trace record: " + text_path + " yields no tokens");

  const auto t_record = Clock::now();
  RoutingTrace predictions;
  TraceRecordOptions with_predictions = options;
  if (!options.predictions_out.empty()) with_predictions.predictions = &predictions;
  SUBMOE_ASSIGN_OR_RETURN(RoutingTrace trace, record_routing_trace(*m, ids, with_predictions, pool));
  summary.record_seconds = seconds_since(t_record);
  SUBMOE_RETURN_IF_ERROR(trace.save(out_path));
  if (!options.predictions_out.empty()) SUBMOE_RETURN_IF_ERROR(predictions.save(options.predictions_out));

  summary.text_tokens = ids.size();
  summary.tokens = trace.num_tokens();
  summary.layers = trace.num_layers();
  summary.experts = trace.num_experts();
  summary.top_k = trace.top_k();
  summary.windows = (summary.tokens + options.context - 1) / options.context;
  return summary;
}

}  // namespace submoe::offload
