// What Qwen2-MoE and Qwen3-MoE share: dense MLP layers chosen by
// decoder_sparse_step / mlp_only_layers, the v4 sliding-window rule
// (use_sliding_window and layer >= max_window_layers) and their key spellings.
#include "descriptors.h"

namespace submoe::io::arch {

Status parse_qwen_moe_fields(const ConfigFields& f, MoeModelConfig* c) {
  SUBMOE_RETURN_IF_ERROR(f.get_int("moe_intermediate_size", &c->moe_intermediate_size));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("norm_topk_prob", &c->norm_topk_prob));
  SUBMOE_RETURN_IF_ERROR(f.get_int("decoder_sparse_step", &c->decoder_sparse_step));
  SUBMOE_RETURN_IF_ERROR(f.get_int_list("mlp_only_layers", &c->mlp_only_layers));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("use_sliding_window", &c->use_sliding_window));
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("sliding_window", &c->sliding_window));
  SUBMOE_RETURN_IF_ERROR(f.get_int("max_window_layers", &c->max_window_layers));
  return Status::ok();
}

bool qwen_layer_slides(const MoeModelConfig& c, int layer) {
  return c.use_sliding_window && layer >= c.max_window_layers;
}

void write_qwen_moe_fields(const MoeModelConfig& c, nlohmann::json* j) {
  (*j)["intermediate_size"] = c.intermediate_size;
  (*j)["moe_intermediate_size"] = c.moe_intermediate_size;
  (*j)["num_experts"] = c.num_experts;
  (*j)["norm_topk_prob"] = c.norm_topk_prob;
  (*j)["decoder_sparse_step"] = c.decoder_sparse_step;
  (*j)["mlp_only_layers"] = c.mlp_only_layers;
  (*j)["use_sliding_window"] = false;
  (*j)["sliding_window"] = nullptr;
  (*j)["max_window_layers"] = c.max_window_layers;
}

void qwen_synth_layers(MoeModelConfig* c) {
  c->decoder_sparse_step = 1;
  c->max_window_layers = c->num_hidden_layers;
}

}  // namespace submoe::io::arch
