#include "submoe/offload/trace_recorder.h"

#include <algorithm>
#include <chrono>

#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/runtime/quantization_config.h"

namespace submoe::offload {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Collects one window's routing, [position][moe layer][k], from the observer.
class WindowRouting {
 public:
  WindowRouting(std::vector<int> moe_index, uint32_t moe_layers, uint32_t k)
      : moe_index_(std::move(moe_index)), moe_layers_(moe_layers), k_(k) {}

  void start(size_t length) {
    length_ = length;
    choices_.assign(length * moe_layers_ * k_, ExpertChoice{0, bf16_t{0}});
    filled_ = 0;
    status_ = Status::ok();
  }

  void observe(int layer, size_t first_position, const model::Routing& r) {
    if (!status_.is_ok()) return;
    if (layer < 0 || static_cast<size_t>(layer) >= moe_index_.size() || moe_index_[static_cast<size_t>(layer)] < 0) {
      status_ = internal_error("routing observed for layer " + std::to_string(layer) + ", which is not an MoE layer");
      return;
    }
    if (r.k != k_ || first_position + r.num_tokens > length_) {
      status_ = internal_error("routing of layer " + std::to_string(layer) + " does not fit the window");
      return;
    }
    const size_t m = static_cast<size_t>(moe_index_[static_cast<size_t>(layer)]);
    for (size_t t = 0; t < r.num_tokens; ++t) {
      ExpertChoice* dst = &choices_[((first_position + t) * moe_layers_ + m) * k_];
      for (size_t j = 0; j < k_; ++j) {
        dst[j].expert = static_cast<uint16_t>(r.experts[t * k_ + j]);
        dst[j].weight = float_to_bf16(r.weights[t * k_ + j]);
      }
    }
    filled_ += r.num_tokens;
  }

  // Appends the window's tokens to `trace` once every (token, layer) was seen.
  Status flush(RoutingTrace* trace) const {
    SUBMOE_RETURN_IF_ERROR(status_);
    if (filled_ != length_ * moe_layers_)
      return internal_error("routing observed for " + std::to_string(filled_) + " of " +
                            std::to_string(length_ * moe_layers_) + " (token, layer) pairs");
    const size_t per_token = size_t{moe_layers_} * k_;
    std::vector<ExpertChoice> token(per_token);
    for (size_t t = 0; t < length_; ++t) {
      std::copy_n(choices_.begin() + static_cast<std::ptrdiff_t>(t * per_token), per_token, token.begin());
      SUBMOE_RETURN_IF_ERROR(trace->append_token(token));
    }
    return Status::ok();
  }

 private:
  std::vector<int> moe_index_;  // decoder layer -> MoE layer index, -1 for dense layers
  uint32_t moe_layers_, k_;
  size_t length_ = 0;
  size_t filled_ = 0;
  std::vector<ExpertChoice> choices_;
  Status status_;
};

}  // namespace

Result<RoutingTrace> record_routing_trace(const model::MoeModel& model, std::span<const int32_t> tokens,
                                          const TraceRecordOptions& options, ThreadPool* pool) {
  if (options.context == 0) return invalid_argument("trace record: the context (window) length must be positive");
  if (options.prefill_chunk == 0) return invalid_argument("trace record: the prefill chunk must be positive");
  const io::MoeModelConfig& c = model.config();
  if (c.num_experts > 65536)
    return unsupported("trace record: the trace format holds at most 65536 experts, the model has " +
                       std::to_string(c.num_experts));
  std::vector<int> moe_index(static_cast<size_t>(c.num_hidden_layers), -1);
  uint32_t moe_layers = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    if (c.is_moe_layer(l)) moe_index[static_cast<size_t>(l)] = static_cast<int>(moe_layers++);
  if (moe_layers == 0) return invalid_argument("trace record: the model has no MoE layer");
  const uint32_t k = static_cast<uint32_t>(c.num_experts_per_tok);

  if (options.max_tokens > 0 && tokens.size() > options.max_tokens)
    tokens = tokens.first(static_cast<size_t>(options.max_tokens));
  RoutingTrace trace(moe_layers, static_cast<uint32_t>(c.num_experts), k);
  WindowRouting window(std::move(moe_index), moe_layers, k);
  model::Session session(model, pool);
  session.reserve(std::min(options.context, tokens.size()));
  session.set_routing_observer([&window](int layer, size_t first, const model::Routing& r) {
    window.observe(layer, first, r);
  });
  uint64_t done = 0;
  for (size_t start = 0; start < tokens.size(); start += options.context) {
    const size_t length = std::min(options.context, tokens.size() - start);
    session.reset();
    window.start(length);
    for (size_t off = 0; off < length; off += options.prefill_chunk) {
      const size_t n = std::min(options.prefill_chunk, length - off);
      Status s = session.forward(tokens.subspan(start + off, n), model::LogitsMode::kNone, nullptr);
      if (!s.is_ok()) return s.with_context("trace record: tokens " + std::to_string(start + off) + ".." +
                                            std::to_string(start + off + n));
      done += n;
      if (options.progress) options.progress(done, tokens.size());
    }
    SUBMOE_RETURN_IF_ERROR(window.flush(&trace));
  }
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

  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(text_path));
  const std::vector<int32_t> ids = tok->encode(text, /*add_special_tokens=*/true);
  if (ids.empty()) return invalid_argument("trace record: " + text_path + " yields no tokens");

  const auto t_record = Clock::now();
  SUBMOE_ASSIGN_OR_RETURN(RoutingTrace trace, record_routing_trace(*m, ids, options, pool));
  summary.record_seconds = seconds_since(t_record);
  SUBMOE_RETURN_IF_ERROR(trace.save(out_path));

  summary.text_tokens = ids.size();
  summary.tokens = trace.num_tokens();
  summary.layers = trace.num_layers();
  summary.experts = trace.num_experts();
  summary.top_k = trace.top_k();
  summary.windows = (summary.tokens + options.context - 1) / options.context;
  return summary;
}

}  // namespace submoe::offload
