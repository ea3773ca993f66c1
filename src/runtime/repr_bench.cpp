#include "submoe/runtime/repr_bench.h"

#include <random>
#include <vector>

#include "submoe/model/linear_op.h"
#include "submoe/quant/gptq.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime {
namespace {

// The ops (each over its own validated copy of the packed fields, as
// MatrixCodec::make_op makes them); the ExternalBenchSet's run() uses them.
struct ReprBenchStorage {
  std::shared_ptr<const MatrixCodec> codec;
  std::vector<std::unique_ptr<model::LinearOp>> ops;
};

}  // namespace

Result<std::shared_ptr<const kernels::ExternalBenchSet>> make_repr_bench_set(
    const ReprBenchOptions& o, const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  if (o.rows == 0 || o.cols == 0) return invalid_argument("bench gemv: shape must be positive");
  say("making the " + o.repr.name + " codec");
  SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const MatrixCodec> codec, make_codec(o.repr));
  SUBMOE_RETURN_IF_ERROR(codec->check_encodable(o.rows, o.cols));

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> w(size_t{o.rows} * o.cols);
  for (float& v : w) v = nd(rng);
  say("encoding one " + std::to_string(o.rows) + "x" + std::to_string(o.cols) + " matrix (" + codec->summary() +
      ", round to nearest)");
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<MatrixEncoder> enc, codec->make_encoder(o.rows, o.cols));
  if (enc->rotates()) {
    std::vector<float> h;  // RTN: no Hessian
    SUBMOE_RETURN_IF_ERROR(enc->prepare(w, h));
  }
  SUBMOE_RETURN_IF_ERROR(quant::rtn_quantize(w, o.rows, o.cols, *enc));
  SUBMOE_ASSIGN_OR_RETURN(std::vector<PackedTensor> packed, enc->pack());

  auto store = std::make_shared<ReprBenchStorage>();
  store->codec = codec;
  size_t bytes = 0;
  for (const PackedTensor& t : packed) bytes += t.bytes.size();
  const uint32_t count = kernels::working_set_matrices(bytes, o.min_matrices, o.llc_factor);
  say(std::to_string(count) + " copies, " + std::to_string((size_t{count} * bytes) >> 20) + " MiB");
  std::vector<std::span<const std::byte>> fields;
  for (const PackedTensor& t : packed) fields.emplace_back(reinterpret_cast<const std::byte*>(t.bytes.data()), t.bytes.size());
  store->ops.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<model::LinearOp> op,
                            codec->make_op(o.rows, o.cols, fields, o.mode));
    store->ops.push_back(std::move(op));
  }

  auto set = std::make_shared<kernels::ExternalBenchSet>();
  set->kernel = store->ops.front()->describe();
  set->bytes_per_matrix = bytes;
  set->bits_per_weight = 8.0 * static_cast<double>(bytes) / (static_cast<double>(o.rows) * o.cols);
  set->matrices = count;
  set->run = [store](uint32_t i, const float* x, uint32_t batch, float* y, ThreadPool* pool) {
    store->ops[i]->forward(x, batch, y, pool);
    return Status::ok();
  };
  return std::shared_ptr<const kernels::ExternalBenchSet>(std::move(set));
}

}  // namespace submoe::runtime
