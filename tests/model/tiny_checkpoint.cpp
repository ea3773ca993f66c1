#include "tiny_checkpoint.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>

#include "submoe/core/bf16.h"

namespace submoe::model::testing {
namespace {

bool is_qwen(const TinySpec& s) { return s.model_type == "qwen2_moe" || s.model_type == "qwen3_moe"; }

bool is_sparse(const TinySpec& s, int layer) {
  return std::find(s.mlp_only_layers.begin(), s.mlp_only_layers.end(), layer) == s.mlp_only_layers.end();
}

std::string block(const TinySpec& s, int layer) {
  return "model.layers." + std::to_string(layer) + (s.model_type == "mixtral" ? ".block_sparse_moe" : ".mlp");
}

std::array<std::string, 3> expert_names(const TinySpec& s) {
  if (s.model_type == "mixtral") return {"w1", "w3", "w2"};
  return {"gate_proj", "up_proj", "down_proj"};
}

bool has_qkv_bias(const TinySpec& s) { return s.model_type == "qwen2_moe" || s.attention_bias; }
bool has_o_bias(const TinySpec& s) { return s.model_type != "qwen2_moe" && s.attention_bias; }

nlohmann::json make_config(const TinySpec& s) {
  nlohmann::json c;
  const std::map<std::string, std::string> cls = {{"mixtral", "MixtralForCausalLM"},
                                                  {"qwen2_moe", "Qwen2MoeForCausalLM"},
                                                  {"qwen3_moe", "Qwen3MoeForCausalLM"},
                                                  {"olmoe", "OlmoeForCausalLM"}};
  c["model_type"] = s.model_type;
  c["architectures"] = {cls.at(s.model_type)};
  c["vocab_size"] = s.vocab;
  c["hidden_size"] = s.hidden;
  c["num_hidden_layers"] = s.layers;
  c["num_attention_heads"] = s.heads;
  c["num_key_value_heads"] = s.kv_heads;
  c["hidden_act"] = "silu";
  c["rms_norm_eps"] = s.rms_norm_eps;
  c["rope_theta"] = s.rope_theta;
  c["max_position_embeddings"] = 512;
  c["tie_word_embeddings"] = s.tie_word_embeddings;
  c["num_experts_per_tok"] = s.top_k;
  c["torch_dtype"] = s.bf16 ? "bfloat16" : "float32";
  c["eos_token_id"] = 2;
  if (s.rope_linear_factor > 0) c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", s.rope_linear_factor}};
  if (s.model_type == "mixtral") {
    c["intermediate_size"] = s.expert_inner;
    c["num_local_experts"] = s.experts;
    c["head_dim"] = s.head_dim;
    c["sliding_window"] = s.sliding_window > 0 ? nlohmann::json(s.sliding_window) : nlohmann::json(nullptr);
  } else if (is_qwen(s)) {
    c["intermediate_size"] = s.dense_inner;
    c["moe_intermediate_size"] = s.expert_inner;
    c["num_experts"] = s.experts;
    c["norm_topk_prob"] = s.norm_topk_prob;
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = s.mlp_only_layers;
    c["use_sliding_window"] = s.sliding_window > 0;
    c["sliding_window"] = s.sliding_window > 0 ? s.sliding_window : 4096;
    c["max_window_layers"] = s.max_window_layers;
    if (s.model_type == "qwen2_moe") {
      c["shared_expert_intermediate_size"] = s.shared_inner;
    } else {
      c["head_dim"] = s.head_dim;
      c["attention_bias"] = s.attention_bias;
    }
  } else {  // olmoe
    c["intermediate_size"] = s.expert_inner;
    c["num_experts"] = s.experts;
    c["norm_topk_prob"] = s.norm_topk_prob;
    c["attention_bias"] = s.attention_bias;
    c["clip_qkv"] = s.clip_qkv > 0 ? nlohmann::json(s.clip_qkv) : nlohmann::json(nullptr);
  }
  return c;
}

class Builder {
 public:
  Builder(const TinySpec& s, TinyCheckpoint* ck) : s_(s), ck_(ck), rng_(s.seed) {}

  void matrix(const std::string& name, int rows, int cols, double scale = 1.0) {
    std::normal_distribution<double> nd(0.0, scale / std::sqrt(static_cast<double>(cols)));
    add(name, {rows, cols}, [&] { return nd(rng_); });
  }
  void norm(const std::string& name, int n) {
    std::uniform_real_distribution<double> ud(0.5, 1.5);
    add(name, {n}, [&] { return ud(rng_); });
  }
  void bias(const std::string& name, int n) {
    std::normal_distribution<double> nd(0.0, 0.1);
    add(name, {n}, [&] { return nd(rng_); });
  }
  void embedding(const std::string& name, int rows, int cols) {
    std::normal_distribution<double> nd(0.0, 1.0);
    add(name, {rows, cols}, [&] { return nd(rng_); });
  }
  // v5 fused layout from per-expert tensors already generated.
  void fuse_experts(int layer) {
    const auto names = expert_names(s_);
    std::vector<double> gu, dn;
    for (int e = 0; e < s_.experts; ++e) {
      const std::string p = block(s_, layer) + ".experts." + std::to_string(e) + ".";
      for (int j = 0; j < 2; ++j) {
        const auto& t = ck_->tensors.at(p + names[static_cast<size_t>(j)] + ".weight");
        gu.insert(gu.end(), t.begin(), t.end());
      }
      const auto& d = ck_->tensors.at(p + names[2] + ".weight");
      dn.insert(dn.end(), d.begin(), d.end());
    }
    const std::string fused_block = "model.layers." + std::to_string(layer) + ".mlp";
    write_values(fused_block + ".experts.gate_up_proj", {s_.experts, 2 * s_.expert_inner, s_.hidden}, gu);
    write_values(fused_block + ".experts.down_proj", {s_.experts, s_.hidden, s_.expert_inner}, dn);
  }
  // Tensors generated for the reference but not written (replaced by fused ones).
  void skip(const std::string& name) { skipped_.insert(name); }

  Status finish(const std::string& path) {
    SUBMOE_RETURN_IF_ERROR(pending_status_);
    for (auto& [name, values] : ck_->tensors) {
      if (skipped_.count(name)) continue;
      SUBMOE_RETURN_IF_ERROR(write(name, shapes_.at(name), values));
    }
    return writer_.write(path);
  }

 private:
  template <typename Gen>
  void add(const std::string& name, std::vector<int64_t> shape, Gen gen) {
    const size_t n = std::accumulate(shape.begin(), shape.end(), size_t{1},
                                     [](size_t a, int64_t b) { return a * static_cast<size_t>(b); });
    std::vector<double> v(n);
    for (double& x : v) {
      x = gen();
      x = s_.bf16 ? bf16_to_float(float_to_bf16(static_cast<float>(x))) : static_cast<float>(x);
    }
    ck_->tensors[name] = std::move(v);
    shapes_[name] = std::move(shape);
  }
  Status write(const std::string& name, const std::vector<int64_t>& shape, const std::vector<double>& v) {
    if (s_.bf16) {
      std::vector<bf16_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i] = float_to_bf16(static_cast<float>(v[i]));
      return writer_.add_bf16(name, shape, b);
    }
    std::vector<float> f(v.begin(), v.end());
    return writer_.add_f32(name, shape, f);
  }
  void write_values(const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
    Status st = write(name, shape, v);
    if (!st.is_ok() && pending_status_.is_ok()) pending_status_ = st;
  }

  const TinySpec& s_;
  TinyCheckpoint* ck_;
  std::mt19937_64 rng_;
  std::map<std::string, std::vector<int64_t>> shapes_;
  std::set<std::string> skipped_;
  io::SafetensorsWriter writer_;
  Status pending_status_;
};

}  // namespace

Result<TinyCheckpoint> write_tiny_checkpoint(const TinySpec& s) {
  TinyCheckpoint ck;
  ck.owner = std::make_shared<const submoe::testing::TempDir>();
  ck.dir = ck.owner->path();
  ck.config = make_config(s);
  Builder b(s, &ck);
  const int H = s.hidden, D = s.head_dim, nH = s.heads, nKV = s.kv_heads;
  b.embedding("model.embed_tokens.weight", s.vocab, H);
  b.norm("model.norm.weight", H);
  if (!s.tie_word_embeddings) b.matrix("lm_head.weight", s.vocab, H);
  const auto names = expert_names(s);
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.norm(p + "input_layernorm.weight", H);
    b.norm(p + "post_attention_layernorm.weight", H);
    b.matrix(p + "self_attn.q_proj.weight", nH * D, H);
    b.matrix(p + "self_attn.k_proj.weight", nKV * D, H);
    b.matrix(p + "self_attn.v_proj.weight", nKV * D, H);
    b.matrix(p + "self_attn.o_proj.weight", H, nH * D);
    if (has_qkv_bias(s)) {
      b.bias(p + "self_attn.q_proj.bias", nH * D);
      b.bias(p + "self_attn.k_proj.bias", nKV * D);
      b.bias(p + "self_attn.v_proj.bias", nKV * D);
    }
    if (has_o_bias(s)) b.bias(p + "self_attn.o_proj.bias", H);
    if (s.model_type == "qwen3_moe") {
      b.norm(p + "self_attn.q_norm.weight", D);
      b.norm(p + "self_attn.k_norm.weight", D);
    } else if (s.model_type == "olmoe") {
      b.norm(p + "self_attn.q_norm.weight", nH * D);
      b.norm(p + "self_attn.k_norm.weight", nKV * D);
    }
    if (!is_sparse(s, l)) {
      b.matrix(p + "mlp.gate_proj.weight", s.dense_inner, H);
      b.matrix(p + "mlp.up_proj.weight", s.dense_inner, H);
      b.matrix(p + "mlp.down_proj.weight", H, s.dense_inner);
      continue;
    }
    b.matrix(block(s, l) + ".gate.weight", s.experts, H, 2.0);
    for (int e = 0; e < s.experts; ++e) {
      const std::string ep = block(s, l) + ".experts." + std::to_string(e) + ".";
      b.matrix(ep + names[0] + ".weight", s.expert_inner, H);
      b.matrix(ep + names[1] + ".weight", s.expert_inner, H);
      b.matrix(ep + names[2] + ".weight", H, s.expert_inner);
      if (s.fused_experts)
        for (const auto& n : names) b.skip(ep + n + ".weight");
    }
    if (s.fused_experts) b.fuse_experts(l);
    if (s.shared_inner > 0) {
      const std::string sp = block(s, l) + ".shared_expert.";
      b.matrix(sp + "gate_proj.weight", s.shared_inner, H);
      b.matrix(sp + "up_proj.weight", s.shared_inner, H);
      b.matrix(sp + "down_proj.weight", H, s.shared_inner);
      b.matrix(block(s, l) + ".shared_expert_gate.weight", 1, H);
    }
  }
  SUBMOE_RETURN_IF_ERROR(b.finish(ck.dir + "/model.safetensors"));
  std::ofstream(ck.dir + "/config.json") << ck.config.dump(2);
  return ck;
}

namespace {

using Vec = std::vector<double>;

// y[r] = sum_c W[r, c] x[c] (+ b[r])
Vec matvec(const Vec& W, const Vec& x, size_t rows, const Vec* bias = nullptr) {
  const size_t cols = x.size();
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) y[r] += W[r * cols + c] * x[c];
    if (bias) y[r] += (*bias)[r];
  }
  return y;
}

void rms(double* x, size_t n, const double* w, double eps) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (size_t i = 0; i < n; ++i) x[i] = w[i] * x[i] * r;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

Vec swiglu(const Vec& g, const Vec& u, const Vec& d, const Vec& x, size_t inner) {
  Vec a = matvec(g, x, inner), b = matvec(u, x, inner);
  for (size_t i = 0; i < inner; ++i) a[i] = silu(a[i]) * b[i];
  return matvec(d, a, x.size());
}

}  // namespace

ReferenceOutput reference_forward(const TinySpec& s, const TinyCheckpoint& ck, const std::vector<int32_t>& ids) {
  auto W = [&](const std::string& n) -> const Vec& { return ck.tensors.at(n); };
  const size_t T = ids.size(), H = static_cast<size_t>(s.hidden), D = static_cast<size_t>(s.head_dim);
  const size_t nH = static_cast<size_t>(s.heads), nKV = static_cast<size_t>(s.kv_heads), V = static_cast<size_t>(s.vocab);
  const auto names = expert_names(s);
  ReferenceOutput out;
  std::vector<Vec> h(T);
  for (size_t t = 0; t < T; ++t)
    h[t] = Vec(W("model.embed_tokens.weight").begin() + static_cast<ptrdiff_t>(static_cast<size_t>(ids[t]) * H),
               W("model.embed_tokens.weight").begin() + static_cast<ptrdiff_t>((static_cast<size_t>(ids[t]) + 1) * H));
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<Vec> q(T), k(T), v(T);
    for (size_t t = 0; t < T; ++t) {
      Vec x = h[t];
      rms(x.data(), H, W(p + "input_layernorm.weight").data(), s.rms_norm_eps);
      const bool qb = has_qkv_bias(s);
      q[t] = matvec(W(p + "self_attn.q_proj.weight"), x, nH * D, qb ? &W(p + "self_attn.q_proj.bias") : nullptr);
      k[t] = matvec(W(p + "self_attn.k_proj.weight"), x, nKV * D, qb ? &W(p + "self_attn.k_proj.bias") : nullptr);
      v[t] = matvec(W(p + "self_attn.v_proj.weight"), x, nKV * D, qb ? &W(p + "self_attn.v_proj.bias") : nullptr);
      if (s.model_type == "qwen3_moe") {
        for (size_t hh = 0; hh < nH; ++hh) rms(&q[t][hh * D], D, W(p + "self_attn.q_norm.weight").data(), s.rms_norm_eps);
        for (size_t hh = 0; hh < nKV; ++hh) rms(&k[t][hh * D], D, W(p + "self_attn.k_norm.weight").data(), s.rms_norm_eps);
      } else if (s.model_type == "olmoe") {
        rms(q[t].data(), nH * D, W(p + "self_attn.q_norm.weight").data(), s.rms_norm_eps);
        rms(k[t].data(), nKV * D, W(p + "self_attn.k_norm.weight").data(), s.rms_norm_eps);
      }
      if (s.clip_qkv > 0)
        for (Vec* z : {&q[t], &k[t], &v[t]})
          for (double& e : *z) e = std::clamp(e, -s.clip_qkv, s.clip_qkv);
      // RoPE, rotate_half: pair (i, i + D/2) turned by pos * inv_freq[i].
      for (Vec* z : {&q[t], &k[t]}) {
        const size_t heads = z == &q[t] ? nH : nKV;
        for (size_t hh = 0; hh < heads; ++hh)
          for (size_t i = 0; i < D / 2; ++i) {
            double inv = 1.0 / std::pow(s.rope_theta, 2.0 * static_cast<double>(i) / static_cast<double>(D));
            if (s.rope_linear_factor > 0) inv /= s.rope_linear_factor;
            const double a = static_cast<double>(t) * inv;
            double& x1 = (*z)[hh * D + i];
            double& x2 = (*z)[hh * D + i + D / 2];
            const double r1 = x1 * std::cos(a) - x2 * std::sin(a), r2 = x2 * std::cos(a) + x1 * std::sin(a);
            x1 = r1;
            x2 = r2;
          }
      }
    }
    const bool slides = s.sliding_window > 0 && (s.model_type == "mixtral" || (is_qwen(s) && l >= s.max_window_layers));
    for (size_t t = 0; t < T; ++t) {
      Vec attn(nH * D, 0.0);
      for (size_t hh = 0; hh < nH; ++hh) {
        const size_t kv = hh / (nH / nKV);
        std::vector<double> sc;
        std::vector<size_t> js;
        for (size_t j = 0; j <= t; ++j) {
          if (slides && static_cast<long>(j) <= static_cast<long>(t) - s.sliding_window) continue;
          double d = 0;
          for (size_t i = 0; i < D; ++i) d += q[t][hh * D + i] * k[j][kv * D + i];
          sc.push_back(d / std::sqrt(static_cast<double>(D)));
          js.push_back(j);
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (double& e : sc) sum += e = std::exp(e - mx);
        for (size_t n = 0; n < js.size(); ++n)
          for (size_t i = 0; i < D; ++i) attn[hh * D + i] += sc[n] / sum * v[js[n]][kv * D + i];
      }
      const Vec o = matvec(W(p + "self_attn.o_proj.weight"), attn, H, has_o_bias(s) ? &W(p + "self_attn.o_proj.bias") : nullptr);
      for (size_t i = 0; i < H; ++i) h[t][i] += o[i];
    }
    for (size_t t = 0; t < T; ++t) {
      Vec x = h[t];
      rms(x.data(), H, W(p + "post_attention_layernorm.weight").data(), s.rms_norm_eps);
      Vec y(H, 0.0);
      if (!is_sparse(s, l)) {
        y = swiglu(W(p + "mlp.gate_proj.weight"), W(p + "mlp.up_proj.weight"), W(p + "mlp.down_proj.weight"), x,
                   static_cast<size_t>(s.dense_inner));
      } else {
        Vec logits = matvec(W(block(s, l) + ".gate.weight"), x, static_cast<size_t>(s.experts));
        const double mx = *std::max_element(logits.begin(), logits.end());
        double sum = 0;
        for (double& e : logits) sum += e = std::exp(e - mx);
        for (double& e : logits) e /= sum;
        std::vector<int> order(static_cast<size_t>(s.experts));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
        order.resize(static_cast<size_t>(s.top_k));
        out.experts[l].push_back(order);
        double wsum = 0;
        for (int e : order) wsum += logits[static_cast<size_t>(e)];
        for (int e : order) {
          const double w = logits[static_cast<size_t>(e)] / (s.norm_topk_prob ? wsum : 1.0);
          const std::string ep = block(s, l) + ".experts." + std::to_string(e) + ".";
          const Vec ye = swiglu(W(ep + names[0] + ".weight"), W(ep + names[1] + ".weight"), W(ep + names[2] + ".weight"),
                                x, static_cast<size_t>(s.expert_inner));
          for (size_t i = 0; i < H; ++i) y[i] += w * ye[i];
        }
        if (s.shared_inner > 0) {
          const std::string sp = block(s, l) + ".shared_expert.";
          const Vec ys = swiglu(W(sp + "gate_proj.weight"), W(sp + "up_proj.weight"), W(sp + "down_proj.weight"), x,
                                static_cast<size_t>(s.shared_inner));
          const double g = 1.0 / (1.0 + std::exp(-matvec(W(block(s, l) + ".shared_expert_gate.weight"), x, 1)[0]));
          for (size_t i = 0; i < H; ++i) y[i] += g * ys[i];
        }
      }
      for (size_t i = 0; i < H; ++i) h[t][i] += y[i];
    }
  }
  const Vec& head = s.tie_word_embeddings ? W("model.embed_tokens.weight") : W("lm_head.weight");
  for (size_t t = 0; t < T; ++t) {
    rms(h[t].data(), H, W("model.norm.weight").data(), s.rms_norm_eps);
    const Vec l = matvec(head, h[t], V);
    out.logits.insert(out.logits.end(), l.begin(), l.end());
  }
  return out;
}

}  // namespace submoe::model::testing
