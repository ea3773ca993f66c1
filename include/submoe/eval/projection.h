// The cache-amplification projection of seed 001 ("Quantization as Cache
// Amplification"): what an offloaded MoE at weight rate r needs, how much of it a
// DRAM budget holds, how often a popularity-pinned expert cache hits, how many
// bytes each token fetches from storage and the tokens/s the host's measured
// bandwidths allow. Every equation is written out in docs/projection.md with the
// seed's symbols (L, E, k, P_e, r, B(r), M, f, h, T).
//
// Units: bytes, seconds, rates in bits per weight, bandwidths in GB/s (1e9 B/s).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::eval {

// The shape of an MoE decoder, only what the accounting needs.
struct MoeShape {
  std::string name;
  int64_t num_layers = 0;        // all decoder layers
  int64_t moe_layers = 0;        // layers with routed experts (L in the seed)
  int64_t d_model = 0;
  int64_t num_experts = 0;       // routed experts per MoE layer (E)
  int64_t top_k = 0;             // k
  int64_t expert_intermediate = 0;
  int64_t expert_matrices = 3;   // SwiGLU: gate, up, down
  int64_t num_shared_experts = 0;
  int64_t shared_expert_intermediate = 0;
  int64_t dense_mlp_intermediate = 0;  // MLP width of the layers without routed experts
  int64_t attention_params_per_layer = 0;
  int64_t vocab_size = 0;
  bool tied_embeddings = false;
};

// Parameter counts (weights, not bytes).
struct ParamCounts {
  double expert = 0;          // P_e: one routed expert
  double routed = 0;          // L E P_e
  double shared = 0;          // shared experts, all layers
  double attention = 0;
  double router = 0;          // d_model x E per MoE layer
  double dense_mlp = 0;       // MLPs of non-MoE layers
  double norms = 0;
  double embedding = 0;       // input table: one row read per token
  double lm_head = 0;         // 0 when tied
  double total = 0;
  // Weights every token reads besides its routed experts: attention, shared
  // experts, router, dense MLPs, norms and the output projection.
  double dense_active = 0;
  double active = 0;          // dense_active + k L P_e
};

Result<ParamCounts> count_params(const MoeShape& shape);

// Grouped-query attention weights of one layer: Q and O (d x q_width each), K and V
// (d x kv_width each).
int64_t gqa_attention_params(int64_t d_model, int64_t q_width, int64_t kv_width);

// Parses a projection config: the submoe schema ("format":
// "submoe-projection-config", see configs/t1.json and docs/projection.md), a
// DeepSeek-V3 style config.json (model_type deepseek_v2 / deepseek_v3, MLA
// attention) or any config.json io::parse_hf_config understands (Mixtral,
// Qwen2-MoE, Qwen3-MoE, OLMoE). `source` names the file in errors.
Result<MoeShape> parse_projection_config(std::string_view json_text, std::string_view source);
Result<MoeShape> load_projection_config(const std::string& path);

// Routing popularity: for each MoE layer l and expert e the share q[l][e] of that
// layer's expert accesses (sum over e = 1). A token picks k distinct experts per
// layer, so the chance that token picks e is pi = k q <= 1: shares above 1/k are
// impossible and are capped (see cap_shares).
struct PopularityProfile {
  int64_t layers = 0;
  int64_t experts = 0;
  int64_t top_k = 0;
  std::vector<double> share;  // layers x experts, layer-major
  std::string source;         // "uniform", "zipf:1.2", "trace:FILE" ...
  double share_at(int64_t layer, int64_t expert) const {
    return share[static_cast<size_t>(layer * experts + expert)];
  }
};

// Water-filling: the smallest change that makes every share <= cap while keeping
// the sum at 1 and the ratios among uncapped shares (shares at the cap are set to
// it, the rest rescaled, repeated until none exceeds it). Requires n * cap >= 1.
Result<std::vector<double>> cap_shares(std::vector<double> shares, double cap);

// Every expert equally popular.
Result<PopularityProfile> uniform_profile(int64_t layers, int64_t experts, int64_t top_k);
// Zipf with exponent s: share of the rank-i expert (i = 1..E) proportional to
// i^-s, the same in every layer, capped at 1/k.
Result<PopularityProfile> zipf_profile(int64_t layers, int64_t experts, int64_t top_k, double s);
// From access counts of a trace (trace_layers x experts, layer-major): MoE layer l
// of the projected model takes trace layer floor(l * trace_layers / layers).
// Needs the trace's expert count to equal `experts`.
Result<PopularityProfile> profile_from_counts(const std::vector<uint64_t>& counts, int64_t trace_layers,
                                              int64_t experts, int64_t layers, int64_t top_k,
                                              std::string source);

// Hit rate of a cache that pins the `capacity_slots` most popular (layer, expert)
// slots, for single-token decode: the popularity mass of the pinned set,
// sum over pinned (l, e) of q[l][e] / L.
double pinned_hit_rate(const PopularityProfile& profile, int64_t capacity_slots);

// Host figures the projection composes (GB/s and weights/s). Defaults are
// documented in docs/projection.md; --roofline replaces them with measurements.
struct HostLimits {
  double storage_read_gbps = 3.0;   // random reads at expert-block granularity
  double storage_block_bytes = 0;   // block size the figure was measured at (0 = default)
  double dram_read_gbps = 29.9;     // all threads
  // Weights/s of the fused kernel named by kernel_name at batch 1 and batch 32
  // (each weight counted once per call); 0 = no compute term.
  std::string kernel_name = "none";
  double kernel_gweights_b1 = 0;
  double kernel_gweights_b32 = 0;
  // The same for the baseline (bf16 dense kernel), used for the r0 projection.
  double baseline_kernel_gweights_b1 = 0;
  double baseline_kernel_gweights_b32 = 0;
  std::string source = "defaults";
};

// Reads a `submoe roofline --json` object: the best random-read bandwidth over
// thread counts at the largest measured block size not above expert_block_bytes
// (the smallest one when all are larger), the all-threads DRAM read bandwidth and,
// when kernel != "none", that kernel's throughput (codec name: qmoe, tunstall,
// bf16).
Result<HostLimits> host_limits_from_roofline_json(std::string_view json_text, double expert_block_bytes,
                                                  const std::string& kernel, std::string_view source);

struct ProjectionInputs {
  MoeShape shape;
  double rate_bits = 0;        // r: routed experts
  double dense_bits = -1;      // everything else; < 0: same as rate_bits (the seed's accounting)
  double baseline_bits = 16;   // r0 for the amplification (bf16)
  double dram_gb = 0;          // host memory for weights (1e9 bytes)
  double reserve_gb = 0;       // kept back for KV cache, activations, the OS
  uint32_t batch = 1;          // extra batch size reported beside 1 and 32
  PopularityProfile profile;   // must match shape (moe_layers x num_experts)
  HostLimits limits;
  int sweep_points = 11;       // hit rates 0, 1/(n-1), ..., 1
};

// One operating point: a decode step of `batch` tokens.
struct ThroughputPoint {
  uint32_t batch = 1;
  double hit_rate = 0;               // resident share of the expert loads of a step
  double experts_loaded = 0;         // expected distinct (layer, expert) loads per step
  double storage_bytes_per_step = 0;
  double dram_bytes_per_step = 0;
  double weights_per_step = 0;       // weights the kernels stream per step
  double t_storage = 0, t_dram = 0, t_compute = 0;  // seconds per step
  double tokens_per_s = 0;           // batch / max(t_storage, t_dram, t_compute)
  double tokens_per_s_serial = 0;    // batch / (t_storage + max(t_dram, t_compute)): no overlap
  std::string bound;                 // "storage", "dram" or "compute"
};

// Everything at one rate (the requested one, and r0 for the baseline).
struct RatePoint {
  double rate_bits = 0;
  double dense_bits = 0;
  double footprint_bytes = 0;        // all weights
  double expert_bytes = 0;           // B(r)
  double dense_bytes = 0;            // dense weights (input embedding excluded)
  double dense_resident_bytes = 0;   // min(dense, budget)
  double dense_spill_bytes = 0;      // dense weights that do not fit: read from storage every step
  double cache_bytes = 0;            // M: what is left for experts
  int64_t resident_slots = 0;        // floor(M / B(r)), at most L E
  int64_t total_slots = 0;           // L E
  double resident_fraction = 0;      // f
  bool lru_operative = false;        // resident_slots >= k L (eq. 4)
  double hit_rate = 0;               // pinned model, batch 1
  double storage_bytes_per_token = 0;  // T(r), eq. 2 (+ dense spill)
  ThroughputPoint batch1, batch32, batch_n;
};

struct SweepRow {
  double hit_rate = 0;
  double tokens_per_s_b1 = 0;
  double tokens_per_s_b32 = 0;
  double tokens_per_s_bn = 0;  // at ProjectionInputs::batch
};

struct ProjectionResult {
  MoeShape shape;
  ParamCounts params;
  PopularityProfile profile;
  HostLimits limits;
  double dram_bytes = 0;
  int64_t working_set_slots = 0;     // k L
  double critical_rate_bits = 0;     // r* = 8 M / (P_e k L), with M at the requested rate
  RatePoint at_rate;
  RatePoint baseline;
  double compression = 0;            // footprint(r0) / footprint(r)
  double capacity_gain = 0;          // resident_slots(r) / resident_slots(r0) (inf -> 0 reported as -1)
  double speedup_b1 = 0;             // tokens/s(r) / tokens/s(r0), batch 1
  double speedup_b32 = 0;
  double amplification_b1 = 0;       // speedup / compression
  double amplification_b32 = 0;
  double traffic_amplification = 0;  // (1 - h(r)) / (1 - h(r0)), eq. 3's second factor
  std::vector<SweepRow> sweep;       // at the requested rate
};

Result<ProjectionResult> project(const ProjectionInputs& inputs);

// JSON object with every field above (one line).
std::string projection_json(const ProjectionResult& r);
// Readable report.
std::string projection_table(const ProjectionResult& r);

}  // namespace submoe::eval
