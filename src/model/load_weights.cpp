// Dense weights from a Hugging Face checkpoint (hub tensor names, doc §2-§5).
#include <algorithm>
#include <cstring>
#include <string_view>

#include <set>
#include "submoe/model/model_weights.h"

#include "hub_experts.h"

namespace submoe::model {
namespace {

std::string shape_of(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : dims) {
    if (!first) s += ", ";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

class TensorSource {
 public:
  explicit TensorSource(const io::SafetensorsModel& m, DenseLinearHook hook = {},
                        DenseStorage storage = DenseStorage::kInPlace,
                        kernels::ActivationType activations = kernels::ActivationType::kF32)
      : m_(m), hook_(std::move(hook)), storage_(storage), activations_(activations) {}
  DenseStorage storage() const { return storage_; }
  kernels::ActivationType activations() const { return activations_; }

  Result<const io::TensorView*> get(const std::string& name, std::initializer_list<int64_t> dims) const {
    const io::TensorView* t = m_.find(name);
    if (!t) return not_found("checkpoint has no tensor '" + name + "'");
    if (!std::equal(t->shape.begin(), t->shape.end(), dims.begin(), dims.end()))
      return invalid_argument("tensor '" + name + "' has shape " + t->shape_string() + ", the config implies " +
                              shape_of(dims));
    // Numerical faults are reported at load, naming the tensor, not averaged
    // into a loss or sampled from later.
    SUBMOE_RETURN_IF_ERROR(io::check_finite(*t));
    used_.insert(t);
    if (t->block_scale != nullptr) used_.insert(t->block_scale);  // read through the weight
    return t;
  }
  // Tensors of the checkpoint that get() never returned, in file order.
  std::vector<const io::TensorView*> unused() const {
    std::vector<const io::TensorView*> out;
    for (const io::TensorView* t : m_.tensors())
      if (!used_.count(t)) out.push_back(t);
    return out;
  }
  bool has(const std::string& name) const { return m_.find(name) != nullptr; }

  Result<std::unique_ptr<LinearOp>> linear(const std::string& name, DenseClass cls, int64_t out, int64_t in) const {
    if (hook_) {
      SUBMOE_ASSIGN_OR_RETURN(DenseOverride o, hook_(name, cls, out, in));
      if (o.op) {
        used_.insert(o.tensors.begin(), o.tensors.end());
        return std::move(o.op);
      }
    }
    SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* t, get(name, {out, in}));
    return make_dense_linear(*t, storage_, activations_);
  }
  Result<std::vector<float>> vector(const std::string& name, int64_t n) const {
    SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* t, get(name, {n}));
    return io::to_f32(*t);
  }
  // A bias that the config says exists, or nothing.
  Result<std::vector<float>> optional_vector(bool present, const std::string& name, int64_t n) const {
    if (!present) return std::vector<float>();
    return vector(name, n);
  }

 private:
  const io::SafetensorsModel& m_;
  DenseLinearHook hook_;
  DenseStorage storage_;
  kernels::ActivationType activations_;
  mutable std::set<const io::TensorView*> used_;
};

Status check_all_tensors_used(const TensorSource& src, const LoadWeightsOptions& options) {
  if (options.allow_unused_tensors) return Status::ok();
  std::vector<const io::TensorView*> unused;
  for (const io::TensorView* t : src.unused()) {
    if (options.read_elsewhere && options.read_elsewhere(*t)) continue;
    unused.push_back(t);
  }
  if (unused.empty()) return Status::ok();
  std::string names;
  for (size_t i = 0; i < std::min<size_t>(unused.size(), 4); ++i) names += (i ? ", '" : "'") + unused[i]->name + "'";
  if (unused.size() > 4) names += ", ...";
  return corrupt_data("the checkpoint holds " + std::to_string(unused.size()) +
                      " tensor(s) this model does not read (" + names +
                      "): config.json does not describe these weights, or they belong to a feature submoe does not "
                      "implement; pass --allow-extra-tensors to run without them");
}

Result<SwiGluWeights> load_swiglu(const TensorSource& src, const std::string& prefix, DenseClass cls, int64_t hidden,
                                  int64_t inner) {
  SwiGluWeights w;
  SUBMOE_ASSIGN_OR_RETURN(w.gate, src.linear(prefix + ".gate_proj.weight", cls, inner, hidden));
  SUBMOE_ASSIGN_OR_RETURN(w.up, src.linear(prefix + ".up_proj.weight", cls, inner, hidden));
  SUBMOE_ASSIGN_OR_RETURN(w.down, src.linear(prefix + ".down_proj.weight", cls, hidden, inner));
  return w;
}

// Rows [row0, row0 + rows) of matrix `index` of a 3-D tensor, as a 2-D view.
io::TensorView slice_view(const io::TensorView& t, int64_t index, int64_t row0, int64_t rows) {
  io::TensorView v = t;
  const int64_t cols = t.shape[2];
  const uint64_t elem = io::dtype_size(t.dtype);
  const uint64_t offset = static_cast<uint64_t>((index * t.shape[1] + row0) * cols) * elem;
  v.name = t.name + "[" + std::to_string(index) + "][" + std::to_string(row0) + ":" + std::to_string(row0 + rows) + "]";
  v.shape = {rows, cols};
  v.data = t.data + offset;
  v.nbytes = static_cast<uint64_t>(rows * cols) * elem;
  v.file_offset = t.file_offset + offset;
  return v;
}

// "model.layers.{layer}.{block}" for the sparse block and its other spelling, if any.
std::vector<std::string> sparse_block_spellings(const io::ArchitectureDescriptor& arch, int layer) {
  std::vector<std::string> out{sparse_block_prefix(arch, layer)};
  if (!arch.sparse_block_alias.empty()) {
    std::string alias = "model.layers.";
    alias.append(std::to_string(layer)).append(".").append(arch.sparse_block_alias);
    out.push_back(std::move(alias));
  }
  return out;
}

// GPT-OSS's MXFP4 experts under `experts` ("model.layers.{i}.mlp.experts."), shapes checked.
Result<detail::FusedMxfp4> fused_mxfp4_tensors(const TensorSource& src, const io::MoeModelConfig& c,
                                               const std::string& experts) {
  const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size, B = mxfp4::kBlock;
  if (H % B != 0 || I % B != 0)
    return invalid_argument("tensor '" + experts + "gate_up_proj_blocks': MXFP4 blocks rows by 32 columns, but the "
                            "config's hidden_size " + std::to_string(H) + " and intermediate_size " +
                            std::to_string(I) + " are not both multiples of 32");
  detail::FusedMxfp4 t;
  SUBMOE_ASSIGN_OR_RETURN(t.gate_up_blocks, src.get(experts + "gate_up_proj_blocks", {E, 2 * I, H / B, 16}));
  SUBMOE_ASSIGN_OR_RETURN(t.gate_up_scales, src.get(experts + "gate_up_proj_scales", {E, 2 * I, H / B}));
  SUBMOE_ASSIGN_OR_RETURN(t.down_blocks, src.get(experts + "down_proj_blocks", {E, H, I / B, 16}));
  SUBMOE_ASSIGN_OR_RETURN(t.down_scales, src.get(experts + "down_proj_scales", {E, H, I / B}));
  for (const io::TensorView* v : {t.gate_up_blocks, t.gate_up_scales, t.down_blocks, t.down_scales})
    if (v->dtype != io::DType::kU8)
      return invalid_argument("tensor '" + v->name + "' has dtype " + std::string(io::dtype_name(v->dtype)) +
                              "; MXFP4 blocks and scales are U8");
  return t;
}

// A dense op over views of memory `storage` keeps alive.
class OwningLinearOp final : public LinearOp {
 public:
  OwningLinearOp(std::shared_ptr<const void> storage, std::unique_ptr<LinearOp> op)
      : storage_(std::move(storage)), op_(std::move(op)) {}
  size_t in_features() const override { return op_->in_features(); }
  size_t out_features() const override { return op_->out_features(); }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override { op_->forward(in, n, out, pool); }
  std::string describe() const override { return op_->describe(); }
  size_t weight_bytes() const override { return op_->weight_bytes(); }

 private:
  std::shared_ptr<const void> storage_;
  std::unique_ptr<LinearOp> op_;
};

// Experts of one sparse layer: hub per-expert names, else v5 fused tensors
// (gate_up_proj [E, 2I, H] = per expert [gate; up] stacked, down_proj [E, H, I]).
Result<LayerExpertWeights> find_experts(const TensorSource& src, const io::MoeModelConfig& c,
                                        const io::ArchitectureDescriptor& arch, int layer) {
  const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size;
  LayerExpertWeights out;
  out.experts.resize(static_cast<size_t>(E));
  const std::string first = expert_tensor_name(arch, layer, 0, io::ExpertProjection::kGate);
  if (src.has(first)) {
    for (int e = 0; e < E; ++e) {
      auto& x = out.experts[static_cast<size_t>(e)];
      const std::string g = expert_tensor_name(arch, layer, e, io::ExpertProjection::kGate);
      const std::string u = expert_tensor_name(arch, layer, e, io::ExpertProjection::kUp);
      const std::string d = expert_tensor_name(arch, layer, e, io::ExpertProjection::kDown);
      SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* gv, src.get(g, {I, H}));
      SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* uv, src.get(u, {I, H}));
      SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* dv, src.get(d, {H, I}));
      x = {*gv, *uv, *dv};
      out.tensor_names.insert(out.tensor_names.end(), {g, u, d});
    }
    return out;
  }
  if (arch.fused_transposed_experts) {  // GPT-OSS's hub layouts, rewritten one layer at a time
    const std::string experts = sparse_block_prefix(arch, layer) + ".experts.";
    if (src.has(experts + "gate_up_proj_blocks")) {
      SUBMOE_ASSIGN_OR_RETURN(const detail::FusedMxfp4 t, fused_mxfp4_tensors(src, c, experts));
      SUBMOE_ASSIGN_OR_RETURN(out, detail::dequantize_fused_mxfp4(t, E, H, I));
      out.tensor_names = {t.gate_up_blocks->name, t.gate_up_scales->name, t.down_blocks->name, t.down_scales->name};
      return out;
    }
    if (src.has(experts + "gate_up_proj")) {
      SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* gu, src.get(experts + "gate_up_proj", {E, H, 2 * I}));
      SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* dn, src.get(experts + "down_proj", {E, I, H}));
      SUBMOE_ASSIGN_OR_RETURN(out, detail::split_fused_dense({gu, dn}, E, H, I));
      out.tensor_names = {gu->name, dn->name};
      return out;
    }
  }
  // v5 in-memory names (save_pretrained(save_original_format=False)), under the
  // sparse block or its other spelling (Mixtral's "mlp").
  for (const std::string& block : sparse_block_spellings(arch, layer)) {
    if (!src.has(block + ".experts.gate_up_proj")) continue;
    SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* gu, src.get(block + ".experts.gate_up_proj", {E, 2 * I, H}));
    SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* dn, src.get(block + ".experts.down_proj", {E, H, I}));
    for (int e = 0; e < E; ++e)
      out.experts[static_cast<size_t>(e)] = {slice_view(*gu, e, 0, I), slice_view(*gu, e, I, I), slice_view(*dn, e, 0, H)};
    out.tensor_names = {gu->name, dn->name};
    return out;
  }
  return not_found("checkpoint has no tensor '" + first + "' (nor fused " + sparse_block_prefix(arch, layer) +
                   ".experts.gate_up_proj)");
}

Result<std::vector<ResidentExpertProvider::Expert>> load_layer_experts(const TensorSource& src,
                                                                       const io::MoeModelConfig& c,
                                                                       const io::ArchitectureDescriptor& arch, int layer) {
  const std::string mxfp4_experts = sparse_block_prefix(arch, layer) + ".experts.";
  if (arch.fused_transposed_experts && src.has(mxfp4_experts + "gate_up_proj_blocks")) {
    // GPT-OSS's MXFP4 experts run fused, as stored.
    SUBMOE_ASSIGN_OR_RETURN(const detail::FusedMxfp4 t, fused_mxfp4_tensors(src, c, mxfp4_experts));
    return detail::fused_mxfp4_ops(t, c.num_experts, c.hidden_size, c.moe_intermediate_size);
  }
  SUBMOE_ASSIGN_OR_RETURN(LayerExpertWeights found, find_experts(src, c, arch, layer));
  std::vector<ResidentExpertProvider::Expert> experts(found.experts.size());
  auto dense = [&](const io::TensorView& v) -> Result<std::unique_ptr<LinearOp>> {
    SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<LinearOp> op, make_dense_linear(v, src.storage(), src.activations()));
    if (!found.storage) return op;
    return std::unique_ptr<LinearOp>(new OwningLinearOp(found.storage, std::move(op)));
  };
  for (size_t e = 0; e < experts.size(); ++e) {
    SUBMOE_ASSIGN_OR_RETURN(experts[e].gate, dense(found.experts[e].gate));
    SUBMOE_ASSIGN_OR_RETURN(experts[e].up, dense(found.experts[e].up));
    SUBMOE_ASSIGN_OR_RETURN(experts[e].down, dense(found.experts[e].down));
  }
  return experts;
}

// Multi-head latent attention tensors under `a` = "model.layers.{i}.self_attn."
// (doc §6.2); attention_bias puts biases on q_a_proj, kv_a_proj_with_mqa and
// o_proj only.
Status load_mla_attention(const TensorSource& src, const io::MoeModelConfig& c, const std::string& a, LayerWeights* L) {
  const int64_t H = c.hidden_size, nH = c.num_attention_heads, rank = c.kv_lora_rank, rope = c.qk_rope_head_dim;
  const int64_t q_width = nH * (c.qk_nope_head_dim + rope);
  MlaWeights& M = L->mla;
  if (c.q_lora_rank) {
    const int64_t ql = *c.q_lora_rank;
    SUBMOE_ASSIGN_OR_RETURN(M.q_a, src.linear(a + "q_a_proj.weight", DenseClass::kAttention, ql, H));
    SUBMOE_ASSIGN_OR_RETURN(M.q_a_bias, src.optional_vector(c.attention_bias, a + "q_a_proj.bias", ql));
    SUBMOE_ASSIGN_OR_RETURN(M.q_a_norm, src.vector(a + "q_a_layernorm.weight", ql));
    SUBMOE_ASSIGN_OR_RETURN(M.q_b, src.linear(a + "q_b_proj.weight", DenseClass::kAttention, q_width, ql));
  } else {
    SUBMOE_ASSIGN_OR_RETURN(M.q, src.linear(a + "q_proj.weight", DenseClass::kAttention, q_width, H));
  }
  SUBMOE_ASSIGN_OR_RETURN(M.kv_a, src.linear(a + "kv_a_proj_with_mqa.weight", DenseClass::kAttention, rank + rope, H));
  SUBMOE_ASSIGN_OR_RETURN(M.kv_a_bias, src.optional_vector(c.attention_bias, a + "kv_a_proj_with_mqa.bias", rank + rope));
  SUBMOE_ASSIGN_OR_RETURN(M.kv_a_norm, src.vector(a + "kv_a_layernorm.weight", rank));
  SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* kv_b,
                          src.get(a + "kv_b_proj.weight", {nH * (c.qk_nope_head_dim + c.v_head_dim), rank}));
  SUBMOE_ASSIGN_OR_RETURN(M.kv_b, io::to_f32(*kv_b));
  const int64_t o_width = nH * c.v_head_dim;
  SUBMOE_ASSIGN_OR_RETURN(L->o, src.linear(a + "o_proj.weight", DenseClass::kAttention, H, o_width));
  SUBMOE_ASSIGN_OR_RETURN(L->o_bias, src.optional_vector(c.attention_bias, a + "o_proj.bias", H));
  return Status::ok();
}

Status load_gqa_attention(const TensorSource& src, const io::MoeModelConfig& c, const std::string& a, LayerWeights* L) {
  const int64_t H = c.hidden_size, D = c.head_dim, nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  SUBMOE_ASSIGN_OR_RETURN(L->q, src.linear(a + "q_proj.weight", DenseClass::kAttention, nH * D, H));
  SUBMOE_ASSIGN_OR_RETURN(L->k, src.linear(a + "k_proj.weight", DenseClass::kAttention, nKV * D, H));
  SUBMOE_ASSIGN_OR_RETURN(L->v, src.linear(a + "v_proj.weight", DenseClass::kAttention, nKV * D, H));
  SUBMOE_ASSIGN_OR_RETURN(L->o, src.linear(a + "o_proj.weight", DenseClass::kAttention, H, nH * D));
  SUBMOE_ASSIGN_OR_RETURN(L->q_bias, src.optional_vector(c.qkv_bias, a + "q_proj.bias", nH * D));
  SUBMOE_ASSIGN_OR_RETURN(L->k_bias, src.optional_vector(c.qkv_bias, a + "k_proj.bias", nKV * D));
  SUBMOE_ASSIGN_OR_RETURN(L->v_bias, src.optional_vector(c.qkv_bias, a + "v_proj.bias", nKV * D));
  SUBMOE_ASSIGN_OR_RETURN(L->o_bias, src.optional_vector(c.o_proj_bias, a + "o_proj.bias", H));
  SUBMOE_ASSIGN_OR_RETURN(L->attention_sinks, src.optional_vector(c.attention_sinks, a + "sinks", nH));
  if (c.qk_norm == io::QkNorm::kPerHead) {
    SUBMOE_ASSIGN_OR_RETURN(L->q_norm, src.vector(a + "q_norm.weight", D));
    SUBMOE_ASSIGN_OR_RETURN(L->k_norm, src.vector(a + "k_norm.weight", D));
  } else if (c.qk_norm == io::QkNorm::kWholeProjection) {
    SUBMOE_ASSIGN_OR_RETURN(L->q_norm, src.vector(a + "q_norm.weight", nH * D));
    SUBMOE_ASSIGN_OR_RETURN(L->k_norm, src.vector(a + "k_norm.weight", nKV * D));
  }
  return Status::ok();
}

// GPT-OSS's expert biases as the hub stores them: gate_up_proj_bias [E, 2I]
// (gate even, up odd columns) and down_proj_bias [E, H].
Status load_expert_biases(const TensorSource& src, const io::MoeModelConfig& c, const std::string& experts,
                          LayerWeights* L) {
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, H = c.hidden_size;
  SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* gu, src.get(experts + "gate_up_proj_bias", {E, 2 * I}));
  SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* dn, src.get(experts + "down_proj_bias", {E, H}));
  SUBMOE_ASSIGN_OR_RETURN(const std::vector<float> interleaved, io::to_f32(*gu));
  SUBMOE_ASSIGN_OR_RETURN(L->expert_down_bias, io::to_f32(*dn));
  L->expert_gate_bias.resize(static_cast<size_t>(E * I));
  L->expert_up_bias.resize(static_cast<size_t>(E * I));
  for (size_t j = 0; j < L->expert_gate_bias.size(); ++j) {
    L->expert_gate_bias[j] = interleaved[2 * j];
    L->expert_up_bias[j] = interleaved[2 * j + 1];
  }
  return Status::ok();
}

Status load_layer(const TensorSource& src, const io::MoeModelConfig& c, const io::ArchitectureDescriptor& arch, int layer,
                  LayerWeights* L, std::vector<ResidentExpertProvider::Expert>* experts) {
  const int64_t H = c.hidden_size;
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  SUBMOE_ASSIGN_OR_RETURN(L->input_norm, src.vector(p + "input_layernorm.weight", H));
  SUBMOE_ASSIGN_OR_RETURN(L->post_attention_norm, src.vector(p + "post_attention_layernorm.weight", H));
  if (c.attention == io::AttentionKind::kMla) {
    SUBMOE_RETURN_IF_ERROR(load_mla_attention(src, c, p + "self_attn.", L));
  } else {
    SUBMOE_RETURN_IF_ERROR(load_gqa_attention(src, c, p + "self_attn.", L));
  }
  L->sparse = c.is_moe_layer(layer);
  if (!L->sparse) {
    SUBMOE_ASSIGN_OR_RETURN(L->mlp, load_swiglu(src, p + "mlp", DenseClass::kDenseMlp, H, c.intermediate_size));
    return Status::ok();
  }
  const std::string block = sparse_block_prefix(arch, layer);
  // The router under the block's other spelling when experts are fused (v5 in-memory Mixtral).
  const std::string router_tail = "." + std::string(arch.router_module) + ".";
  std::string router = block + router_tail;
  for (const std::string& spelling : sparse_block_spellings(arch, layer))
    if (!src.has(router + "weight") && src.has(spelling + router_tail + "weight")) router = spelling + router_tail;
  SUBMOE_ASSIGN_OR_RETURN(L->router, src.linear(router + "weight", DenseClass::kRouter, c.num_experts, H));
  SUBMOE_ASSIGN_OR_RETURN(L->router_linear_bias, src.optional_vector(c.router_linear_bias, router + "bias", c.num_experts));
  if (c.expert_bias) SUBMOE_RETURN_IF_ERROR(load_expert_biases(src, c, block + ".experts.", L));
  if (c.router_selection == io::RouterSelection::kSigmoidGroupTop2) {
    SUBMOE_ASSIGN_OR_RETURN(L->router_bias, src.vector(block + ".gate.e_score_correction_bias", c.num_experts));
  }
  if (arch.has_shared_expert) {
    SUBMOE_ASSIGN_OR_RETURN(L->shared_expert,
                            load_swiglu(src, block + "." + std::string(arch.shared_expert_module),
                                        DenseClass::kSharedExpert, H, c.shared_expert_intermediate_size));
    if (!arch.shared_expert_gate.empty()) {
      SUBMOE_ASSIGN_OR_RETURN(L->shared_expert_gate,
                              src.linear(block + "." + std::string(arch.shared_expert_gate) + ".weight",
                                         DenseClass::kRouter, 1, H));
    }
  }
  if (experts) {
    SUBMOE_ASSIGN_OR_RETURN(*experts, load_layer_experts(src, c, arch, layer));
  }
  return Status::ok();
}

}  // namespace

Result<EmbeddingTable> EmbeddingTable::from_tensor(const io::TensorView& t) {
  if (t.shape.size() != 2 || t.shape[0] <= 0 || t.shape[1] <= 0)
    return invalid_argument("tensor '" + t.name + "': an embedding must be 2-D [vocab, hidden], got " +
                            t.shape_string());
  if (t.dtype != io::DType::kBF16 && t.dtype != io::DType::kF16 && t.dtype != io::DType::kF32)
    return invalid_argument("tensor '" + t.name + "': embedding dtype " + std::string(io::dtype_name(t.dtype)) +
                            " is not BF16, F16 or F32");
  EmbeddingTable e;
  e.tensor_ = t;
  e.rows_ = static_cast<size_t>(t.shape[0]);
  e.cols_ = static_cast<size_t>(t.shape[1]);
  e.row_bytes_ = e.cols_ * io::dtype_size(t.dtype);
  return e;
}

void EmbeddingTable::lookup(size_t id, float* out) const {
  io::TensorView row = tensor_;
  row.shape = {static_cast<int64_t>(cols_)};
  row.data = tensor_.data + id * row_bytes_;
  row.nbytes = row_bytes_;
  // Cannot fail: dtype and size were checked in from_tensor.
  (void)io::read_as_f32(row, {out, cols_});
}

Result<LayerExpertWeights> find_layer_expert_weights(const io::SafetensorsModel& tensors,
                                                     const io::MoeModelConfig& config,
                                                     const io::ArchitectureDescriptor& arch, int layer) {
  if (layer < 0 || layer >= config.num_hidden_layers || !config.is_moe_layer(layer))
    return invalid_argument("layer " + std::to_string(layer) + " is not a sparse (routed-expert) layer");
  return find_experts(TensorSource(tensors), config, arch, layer);
}

Result<ModelWeights> load_checkpoint_weights(const io::MoeModelConfig& c, const io::ArchitectureDescriptor& arch,
                                             std::shared_ptr<const io::SafetensorsModel> tensors,
                                             const LoadWeightsOptions& options) {
  SUBMOE_RETURN_IF_ERROR(io::check_forward_supported(c));
  const TensorSource src(*tensors, options.dense_linear, options.dense_storage, options.dense_activations);
  const int64_t V = c.vocab_size, H = c.hidden_size;
  ModelWeights w;
  SUBMOE_ASSIGN_OR_RETURN(const io::TensorView* embed, src.get("model.embed_tokens.weight", {V, H}));
  SUBMOE_ASSIGN_OR_RETURN(w.embed, EmbeddingTable::from_tensor(*embed));
  SUBMOE_ASSIGN_OR_RETURN(w.final_norm, src.vector("model.norm.weight", H));
  if (c.tie_word_embeddings) {
    SUBMOE_ASSIGN_OR_RETURN(w.lm_head, make_dense_linear(*embed, options.dense_storage, options.dense_activations));
  } else {
    SUBMOE_ASSIGN_OR_RETURN(w.lm_head, src.linear("lm_head.weight", DenseClass::kLmHead, V, H));
  }
  // Checkpoint and config must agree on the layers: more in the checkpoint
  // would be dropped without a word, fewer (or an absurd count) fail here,
  // before anything is sized by the config's number.
  int64_t present = 0;
  for (const io::TensorView* t : tensors->tensors()) {
    constexpr std::string_view kPrefix = "model.layers.";
    if (t->name.rfind(kPrefix, 0) != 0) continue;
    int64_t index = 0;
    size_t i = kPrefix.size();
    for (; i < t->name.size() && t->name[i] >= '0' && t->name[i] <= '9' && index < (int64_t{1} << 40); ++i)
      index = index * 10 + (t->name[i] - '0');
    if (i > kPrefix.size()) present = std::max(present, index + 1);
  }
  if (present != c.num_hidden_layers)
    return corrupt_data("config.json num_hidden_layers is " + std::to_string(c.num_hidden_layers) +
                        " but the checkpoint's tensors cover " + std::to_string(present) +
                        " layers (model.layers.0 .. " + std::to_string(present - 1) + "): config and checkpoint must " +
                        "agree" + (present > c.num_hidden_layers ? " (the extra layers would be dropped silently)" : ""));
  const size_t L = static_cast<size_t>(c.num_hidden_layers);
  w.layers.resize(L);
  std::vector<std::vector<ResidentExpertProvider::Expert>> experts(L);
  for (size_t l = 0; l < L; ++l)
    SUBMOE_RETURN_IF_ERROR(load_layer(src, c, arch, static_cast<int>(l), &w.layers[l],
                                      options.skip_routed_experts ? nullptr : &experts[l]));
  if (!options.skip_routed_experts) w.experts = std::make_unique<ResidentExpertProvider>(std::move(experts));
  SUBMOE_RETURN_IF_ERROR(check_all_tensors_used(src, options));
  w.storage = std::move(tensors);
  return w;
}

}  // namespace submoe::model
