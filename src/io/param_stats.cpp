#include "submoe/io/param_stats.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>

#include "submoe/io/architecture.h"

namespace submoe::io {
namespace {

// Parses the decimal integer right after `prefix` at the first occurrence of
// `prefix` in `name`; -1 when absent or not followed by digits and a dot.
int index_after(std::string_view name, std::string_view prefix, size_t* end = nullptr) {
  const size_t at = name.find(prefix);
  if (at == std::string_view::npos) return -1;
  const char* first = name.data() + at + prefix.size();
  const char* last = name.data() + name.size();
  int v = -1;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr == first || ptr == last || *ptr != '.') return -1;
  if (end) *end = static_cast<size_t>(ptr - name.data());
  return v;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string_view last_component_before_param(std::string_view name) {
  // "model.layers.0.input_layernorm.weight" -> "input_layernorm"
  size_t end = name.rfind('.');
  if (end == std::string_view::npos) return name;
  const size_t begin = name.rfind('.', end - 1);
  return name.substr(begin == std::string_view::npos ? 0 : begin + 1, end - (begin == std::string_view::npos ? 0 : begin + 1));
}

}  // namespace

std::string_view tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kRoutedExpert: return "routed_expert";
    case TensorRole::kSharedExpert: return "shared_expert";
    case TensorRole::kRouter: return "router";
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kLmHead: return "lm_head";
    case TensorRole::kAttention: return "attention";
    case TensorRole::kNorm: return "norm";
    case TensorRole::kDenseMlp: return "dense_mlp";
    case TensorRole::kOther: return "other";
  }
  return "other";
}

TensorClass classify_tensor(std::string_view name, std::optional<Architecture> arch) {
  TensorClass c;
  c.layer = index_after(name, "layers.");
  std::string moe_block = ".experts.";
  std::string router = ".gate.";  // the router module's tensors (weight, bias, DeepSeek's score bias)
  if (arch) {
    // The family's sparse block, or its other spelling (Mixtral's hub files use
    // block_sparse_moe, transformers v5's in-memory fused names mlp).
    const ArchitectureDescriptor& d = architecture_descriptor(*arch);
    auto dotted = [](std::string_view part, std::string_view tail) {
      std::string s(".");
      s.append(part).append(tail);
      return s;
    };
    std::string_view block = d.sparse_block;
    if (!d.sparse_block_alias.empty() && !contains(name, dotted(block, "."))) block = d.sparse_block_alias;
    moe_block = dotted(block, ".experts.");
    router = dotted(block, ".");
    router.append(d.router_module).append(".");
  }
  const int expert = index_after(name, moe_block);
  if (expert >= 0) {
    c.role = TensorRole::kRoutedExpert;
    c.expert = expert;
    return c;
  }
  const size_t fused = name.find(moe_block);
  if (fused != std::string_view::npos) {
    const std::string_view rest = name.substr(fused + moe_block.size());
    if (rest.starts_with("gate_up_proj") || rest.starts_with("down_proj") || rest.starts_with("gate_proj") ||
        rest.starts_with("up_proj")) {
      c.role = TensorRole::kRoutedExpert;
      return c;
    }
  }
  if (contains(name, ".shared_expert.") || contains(name, ".shared_expert_gate.") ||
      contains(name, ".shared_experts.")) {
    c.role = TensorRole::kSharedExpert;
  } else if (contains(name, router)) {
    c.role = TensorRole::kRouter;
  } else if (name.starts_with("model.embed_tokens.") || name.starts_with("embed_tokens.")) {
    c.role = TensorRole::kEmbedding;
  } else if (name.starts_with("lm_head.")) {
    c.role = TensorRole::kLmHead;
  } else if (contains(last_component_before_param(name), "norm")) {
    c.role = TensorRole::kNorm;
  } else if (contains(name, ".self_attn.")) {
    c.role = TensorRole::kAttention;
  } else if (contains(name, ".mlp.") || contains(name, ".block_sparse_moe.")) {
    c.role = TensorRole::kDenseMlp;
  }
  return c;
}

ParameterCounts count_parameters(std::span<const TensorView* const> tensors, std::optional<Architecture> arch,
                                 std::optional<int64_t> top_k) {
  ParameterCounts out;
  struct LayerExperts {
    int64_t params = 0;
    std::set<int> experts;
    int64_t fused_experts = 0;  // leading dim of fused stacks
  };
  std::map<int, LayerExperts> layers;
  for (const TensorView* t : tensors) {
    // MXFP4 blocks (GPT-OSS's hub experts) hold two weights a byte; their E8M0
    // scales are not parameters.
    const bool mx_blocks = t->dtype == DType::kU8 && t->name.ends_with("_blocks");
    const bool mx_scales = t->dtype == DType::kU8 && t->name.ends_with("_scales");
    const int64_t n = mx_scales ? 0 : mx_blocks ? 2 * t->numel() : t->numel();
    out.total += n;
    const TensorClass c = classify_tensor(t->name, arch);
    out.by_role[static_cast<size_t>(c.role)] += n;
    if (c.role != TensorRole::kRoutedExpert) continue;
    LayerExperts& l = layers[c.layer];
    l.params += n;
    if (c.expert >= 0) {
      l.experts.insert(c.expert);
    } else if (!t->shape.empty()) {
      l.fused_experts = std::max(l.fused_experts, t->shape[0]);
    }
  }
  out.moe_layers = static_cast<int>(layers.size());
  int64_t active = out.total;
  for (const auto& [layer, l] : layers) {
    const int64_t e = std::max<int64_t>(static_cast<int64_t>(l.experts.size()), l.fused_experts);
    out.max_experts_per_layer = std::max(out.max_experts_per_layer, e);
    if (top_k && e > 0) {
      const int64_t k = std::min<int64_t>(*top_k, e);
      // Experts of one layer have equal sizes, so params / e is exact; split so
      // that params * k cannot overflow.
      active -= l.params;
      active += (l.params / e) * k + (l.params % e) * k / e;
    }
  }
  if (top_k) out.active_per_token = active;
  return out;
}

}  // namespace submoe::io
