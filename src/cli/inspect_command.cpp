// `submoe inspect PATH [--json]`: what a checkpoint holds, from config.json and
// the safetensors headers (no tensor data is read), and for a compressed
// artifact its quantization_config, packed expert sizes and manifest ledger.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/command.h"
#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/param_stats.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::cli {
namespace {

namespace fs = std::filesystem;

struct InspectOptions {
  std::string path;
  bool json = false;
  bool no_tensors = false;
  bool verify = false;
};

// What --verify checked (every count is of items that passed).
struct Verification {
  bool checksummed = false;    // the artifact's manifest carries checksums
  int64_t tensors_finite = 0;  // float tensors without NaN or Inf
  int64_t experts_built = 0;   // experts decoded from their bytes and validated
  bool dense_packed = false;   // packed dense classes: every projection built (validated)
};

struct Inspection {
  std::unique_ptr<io::SafetensorsModel> model;
  std::optional<io::MoeModelConfig> config;
  std::string config_path;  // empty when none was found
  io::ParameterCounts counts;
  // Compressed artifacts only.
  std::shared_ptr<const runtime::Artifact> artifact;
  int64_t expert_matrices = 0, expert_weights = 0;
  uint64_t expert_packed_bytes = 0, dictionary_bytes = 0;  // shared tensors (dictionaries, codebooks)
  nlohmann::ordered_json ledger;  // submoe_manifest.json "ledger"; null when absent
  std::optional<Verification> verified;
  // Layers with dense-and-sparse matrices (seed 002 0x03C): realized density
  // and the break-even density against a dense stream one bit wider.
  struct SparseLayer {
    int layer = 0;
    uint64_t weights = 0, nnz = 0;
    double break_even = 0;
  };
  std::vector<SparseLayer> sparse_layers;
};

// Sums one layer's sparse footprints (runtime::MatrixCodec::sparse_footprint).
std::optional<Inspection::SparseLayer> sparse_layer(const runtime::Artifact& a, int l) {
  Inspection::SparseLayer out;
  out.layer = l;
  double room_bits = 0, entry_bits = 0;
  for (int e = 0; e < a.num_experts(); ++e) {
    if (!a.has_expert(l, e)) continue;
    for (artifact::Projection p : artifact::kProjections) {
      const bool down = p == artifact::Projection::kDown;
      const uint32_t rows = down ? a.expert_hidden() : a.expert_inner(), cols = down ? a.expert_inner() : a.expert_hidden();
      const auto f = a.expert_codec(l, e, p).sparse_footprint(rows, cols, a.expert_field_bytes(l, e, p));
      if (!f) continue;
      const uint64_t w = uint64_t{rows} * cols;
      out.weights += w;
      out.nnz += f->nnz;
      room_bits += (f->code_bits + 1.0) * static_cast<double>(w) -
                   8.0 * static_cast<double>(f->dense_bytes + f->sparse_fixed_bytes);
      entry_bits = 8.0 * f->entry_bytes;
    }
  }
  if (out.weights == 0) return std::nullopt;
  out.break_even = room_bits > 0 && entry_bits > 0 ? room_bits / (entry_bits * static_cast<double>(out.weights)) : 0;
  return out;
}

// --verify: every byte read and checked. An artifact's dense tensors and every
// expert against the manifest's checksums (files, header and shared tensors
// were checked on open), every expert built from its bytes (the validation
// run and eval do), and every float tensor free of NaN and Inf.
Status verify(Inspection* in) {
  Verification v;
  if (in->artifact) {
    const runtime::Artifact& a = *in->artifact;
    v.checksummed = a.has_checksums();
    SUBMOE_RETURN_IF_ERROR(a.verify_dense_tensors());
    if (!a.quantization().dense_weights.empty()) {
      // Packed dense classes: the loader builds (and so validates) every projection.
      SUBMOE_RETURN_IF_ERROR(runtime::load_artifact_dense_weights(in->artifact).status());
      v.dense_packed = true;
    }
    for (int l = 0; l < a.num_layers(); ++l) {
      for (int e = 0; e < a.num_experts(); ++e) {
        if (!a.has_expert(l, e)) continue;
        SUBMOE_ASSIGN_OR_RETURN(auto x, a.expert_resident(l, e, runtime::ExecutionMode::kFused));
        ++v.experts_built;
      }
    }
  }
  for (const io::TensorView* t : in->model->tensors()) {
    const bool is_float = t->dtype == io::DType::kF32 || t->dtype == io::DType::kBF16 ||
                          t->dtype == io::DType::kF16 || t->dtype == io::DType::kF64;
    if (!is_float) continue;
    SUBMOE_RETURN_IF_ERROR(io::check_finite(*t));
    ++v.tensors_finite;
  }
  in->verified = v;
  return Status::ok();
}

std::string integrity_line(const Inspection& in) {
  std::string s;
  if (in.artifact) {
    s = in.artifact->has_checksums() ? "checksummed (xxh3_64; files, header and shared tensors verified on open)"
                                     : in.artifact->integrity_note();
  } else {
    s = "no checksums (a checkpoint)";
  }
  if (!in.verified) return s + "; contents not read (--verify reads and checks every byte)";
  const Verification& v = *in.verified;
  s += "; --verify: ";
  if (in.artifact)
    s += std::string(v.checksummed ? "every tensor and expert range matches its checksum, " : "") +
         std::to_string(v.experts_built) + " experts decoded and validated, " +
         (v.dense_packed ? "packed dense projections validated, " : "");
  return s + std::to_string(v.tensors_finite) + " float tensors finite: ok";
}

// Opens (and so fully validates) the artifact and sums its packed experts.
Status load_artifact(const std::string& dir, Inspection* in) {
  SUBMOE_ASSIGN_OR_RETURN(in->artifact, runtime::Artifact::open(dir));
  const runtime::Artifact& a = *in->artifact;
  for (int l = 0; l < a.num_layers(); ++l) {
    for (int e = 0; e < a.num_experts(); ++e) {
      if (!a.has_expert(l, e)) continue;
      SUBMOE_ASSIGN_OR_RETURN(const runtime::ExpertByteRange r, a.expert_byte_range(l, e));
      in->expert_packed_bytes += r.length;
      in->expert_matrices += 3;
      in->expert_weights += 3 * static_cast<int64_t>(a.expert_hidden()) * a.expert_inner();
    }
  }
  in->dictionary_bytes = a.shared_tensor_bytes();
  for (int l = 0; l < a.num_layers(); ++l)
    if (auto s = sparse_layer(a, l)) in->sparse_layers.push_back(*s);
  const fs::path manifest = fs::path(dir) / artifact::kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest, ec)) return Status::ok();
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, io::read_file_to_string(manifest.string()));
  const auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt_data(manifest.string() + ": not a JSON object");
  if (j.contains("ledger")) in->ledger = j.at("ledger");
  return Status::ok();
}

// config.json sits in the model directory, or beside a lone .safetensors file.
Result<Inspection> load(const std::string& path) {
  Inspection in;
  SUBMOE_ASSIGN_OR_RETURN(in.model, io::SafetensorsModel::open(path));
  const fs::path cfg = fs::path(in.model->directory()) / "config.json";
  std::error_code ec;
  if (fs::exists(cfg, ec)) {
    SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig c, io::load_hf_config(cfg.string()));
    in.config = std::move(c);
    in.config_path = cfg.string();
  }
  std::optional<io::Architecture> arch;
  std::optional<int64_t> top_k;
  if (in.config) {
    arch = in.config->architecture;
    top_k = in.config->num_experts_per_tok;
  }
  in.counts = io::count_parameters(in.model->tensors(), arch, top_k);
  if (runtime::is_artifact(in.model->directory())) SUBMOE_RETURN_IF_ERROR(load_artifact(in.model->directory(), &in));
  return in;
}

std::string human_count(int64_t n) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (n >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2fB", v / 1e9);
  else if (n >= 1'000'000) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (n >= 1'000) std::snprintf(buf, sizeof buf, "%.2fK", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%" PRId64, n);
  return buf;
}

std::string human_bytes(uint64_t n) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (n >= (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1 << 30));
  else if (n >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else if (n >= (uint64_t{1} << 10)) std::snprintf(buf, sizeof buf, "%.2f KiB", v / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  return buf;
}

std::map<std::string, int64_t> tensors_per_dtype(const io::SafetensorsModel& m) {
  std::map<std::string, int64_t> out;
  for (const io::TensorView* t : m.tensors()) ++out[std::string(io::dtype_name(t->dtype))];
  return out;
}

// A session's KV cache per position (float32, every layer).
size_t kv_cache_bytes_per_token(const io::MoeModelConfig& c) {
  size_t floats = 0;
  for (const model::KvLayerShape& s : model::kv_cache_shapes(c)) floats += s.heads * (s.key_dim + s.value_dim);
  return floats * sizeof(float);
}

nlohmann::ordered_json config_json(const io::MoeModelConfig& c) {
  nlohmann::ordered_json j;
  j["model_type"] = c.model_type;
  j["architectures"] = c.architectures;
  j["num_hidden_layers"] = c.num_hidden_layers;
  int moe = 0;
  for (int i = 0; i < c.num_hidden_layers; ++i) moe += c.is_moe_layer(i);
  j["num_moe_layers"] = moe;
  j["num_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["moe_intermediate_size"] = c.moe_intermediate_size;
  j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rope_theta"] = c.rope_theta;
  j["rope_type"] = std::string(io::rope_type_name(c.rope_scaling.type));
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["dtype"] = c.dtype;
  j["attention"] = c.attention == io::AttentionKind::kMla ? "mla" : "gqa";
  if (c.attention == io::AttentionKind::kMla) {
    j["q_lora_rank"] = c.q_lora_rank ? nlohmann::ordered_json(*c.q_lora_rank) : nlohmann::ordered_json(nullptr);
    j["kv_lora_rank"] = c.kv_lora_rank;
    j["qk_nope_head_dim"] = c.qk_nope_head_dim;
    j["qk_rope_head_dim"] = c.qk_rope_head_dim;
    j["v_head_dim"] = c.v_head_dim;
  }
  j["num_shared_experts"] = c.num_shared_experts;
  j["first_k_dense_replace"] = c.first_k_dense_replace;
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["n_group"] = c.n_group;
  j["topk_group"] = c.topk_group;
  j["kv_cache_bytes_per_token"] = kv_cache_bytes_per_token(c);
  return j;
}

void print_json(const Inspection& in, const InspectOptions& opt) {
  const io::ParameterCounts& n = in.counts;
  nlohmann::ordered_json j;
  j["path"] = opt.path;
  j["config"] = in.config ? config_json(*in.config) : nlohmann::ordered_json(nullptr);
  j["architecture"] = in.config ? nlohmann::ordered_json(in.config->model_type) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json p;
  p["total"] = n.total;
  p["active_per_token"] = n.active_per_token ? nlohmann::ordered_json(*n.active_per_token) : nlohmann::ordered_json(nullptr);
  p["routed_experts"] = n.routed_experts();
  p["routed_share"] = n.routed_share();
  p["moe_layers"] = n.moe_layers;
  p["experts_per_layer"] = n.max_experts_per_layer;
  nlohmann::ordered_json roles;
  for (size_t r = 0; r < io::kNumTensorRoles; ++r)
    roles[std::string(io::tensor_role_name(static_cast<io::TensorRole>(r)))] = n.by_role[r];
  p["by_role"] = std::move(roles);
  j["parameters"] = std::move(p);
  j["bytes_on_disk"] = in.model->bytes_on_disk();
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& f : in.model->files())
    files.push_back({{"path", f->path()}, {"bytes", f->file_size()}, {"tensors", f->tensors().size()}});
  j["files"] = std::move(files);
  if (in.artifact) {
    const runtime::QuantizationConfig& q = in.artifact->quantization();
    nlohmann::ordered_json qj;
    qj["format_version"] = q.format_version;
    qj["summary"] = in.artifact->summary();
    nlohmann::ordered_json records = nlohmann::ordered_json::array();
    for (const auto& c : in.artifact->codecs()) records.push_back(nlohmann::ordered_json::parse(c->record().dump()));
    qj["representations"] = std::move(records);
    nlohmann::ordered_json contracts = nlohmann::ordered_json::array();
    for (const auto& c : in.artifact->codecs())
      contracts.push_back(nlohmann::ordered_json::parse(c->contract().to_json().dump()));
    qj["contracts"] = std::move(contracts);
    qj["contracts_recorded"] = !q.contracts.empty();
    qj["expert_matrices"] = in.expert_matrices;
    qj["expert_weights"] = in.expert_weights;
    qj["expert_packed_bytes"] = in.expert_packed_bytes;
    qj["shared_tensor_bytes"] = in.dictionary_bytes;
    qj["expert_packed_bits_per_weight"] =
        in.expert_weights ? 8.0 * static_cast<double>(in.expert_packed_bytes) / static_cast<double>(in.expert_weights) : 0.0;
    nlohmann::ordered_json sparse = nlohmann::ordered_json::array();
    for (const auto& sl : in.sparse_layers)
      sparse.push_back({{"layer", sl.layer},
                        {"weights", sl.weights},
                        {"exceptions", sl.nnz},
                        {"density", static_cast<double>(sl.nnz) / static_cast<double>(sl.weights)},
                        {"break_even_density", sl.break_even}});
    qj["sparse_ledger"] = std::move(sparse);
    j["quantization"] = std::move(qj);
    j["ledger"] = in.ledger;
  } else {
    j["quantization"] = nullptr;
    j["ledger"] = nullptr;
  }
  nlohmann::ordered_json integ;
  integ["checksums"] = in.artifact && in.artifact->has_checksums();
  integ["summary"] = integrity_line(in);
  if (in.verified) {
    integ["verified"] = true;
    integ["experts_built"] = in.verified->experts_built;
    integ["float_tensors_finite"] = in.verified->tensors_finite;
  } else {
    integ["verified"] = false;
  }
  j["integrity"] = std::move(integ);
  j["num_tensors"] = in.model->tensors().size();
  j["tensors_per_dtype"] = tensors_per_dtype(*in.model);
  if (!opt.no_tensors) {
    nlohmann::ordered_json ts = nlohmann::ordered_json::array();
    for (const io::TensorView* t : in.model->tensors()) {
      ts.push_back({{"name", t->name},
                    {"dtype", std::string(io::dtype_name(t->dtype))},
                    {"shape", t->shape},
                    {"nbytes", t->nbytes},
                    {"role", std::string(io::tensor_role_name(io::classify_tensor(
                                 t->name, in.config ? std::optional(in.config->architecture) : std::nullopt).role))},
                    {"file", t->file},
                    {"offset", t->file_offset}});
    }
    j["tensors"] = std::move(ts);
  }
  // Tensor names are checked UTF-8 on read; replace keeps dump() from throwing anyway.
  std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void print_text(const Inspection& in, const InspectOptions& opt) {
  const io::ParameterCounts& n = in.counts;
  std::cout << "path:          " << opt.path << "\n";
  if (in.config) {
    const io::MoeModelConfig& c = *in.config;
    int moe = 0;
    for (int i = 0; i < c.num_hidden_layers; ++i) moe += c.is_moe_layer(i);
    std::cout << "architecture:  " << c.model_type;
    if (!c.architectures.empty()) std::cout << " (" << c.architectures.front() << ")";
    std::cout << "\nlayers:        " << c.num_hidden_layers << " (" << moe << " MoE)\n"
              << "experts:       " << c.num_experts << " routed per MoE layer, top-" << c.num_experts_per_tok
              << (c.norm_topk_prob ? ", renormalised" : ", not renormalised");
    if (c.has_shared_expert()) std::cout << ", shared expert of width " << c.shared_expert_intermediate_size;
    std::cout << "\nhidden:        " << c.hidden_size << ", expert width " << c.moe_intermediate_size;
    if (moe < c.num_hidden_layers) std::cout << ", dense MLP width " << c.intermediate_size;
    if (c.attention == io::AttentionKind::kMla) {
      std::cout << "\nattention:     multi-head latent, " << c.num_attention_heads << " heads, kv_lora_rank "
                << c.kv_lora_rank << ", q_lora_rank "
                << (c.q_lora_rank ? std::to_string(*c.q_lora_rank) : std::string("none")) << ", qk "
                << c.qk_nope_head_dim << "+" << c.qk_rope_head_dim << " (nope+rope), v " << c.v_head_dim;
    } else {
      std::cout << "\nattention:     " << c.num_attention_heads << " heads, " << c.num_key_value_heads
                << " kv heads, head_dim " << c.head_dim;
    }
    std::cout << ", rope theta " << c.rope_theta << " (" << io::rope_type_name(c.rope_scaling.type) << ")\n"
              << "kv cache:      " << kv_cache_bytes_per_token(c) << " bytes per token (float32)\n"
              << "vocab:         " << c.vocab_size << (c.tie_word_embeddings ? " (tied embeddings)" : "") << "\n";
    if (!c.dtype.empty()) std::cout << "dtype:         " << c.dtype << "\n";
  } else {
    std::cout << "architecture:  unknown (no config.json next to the weights)\n";
  }
  std::cout << "parameters:    " << human_count(n.total) << " total (" << n.total << ")";
  if (n.active_per_token) std::cout << ", " << human_count(*n.active_per_token) << " active per token";
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * n.routed_share());
  std::cout << ", " << share << " in routed experts (" << n.moe_layers << " layers x " << n.max_experts_per_layer
            << " experts)\n";
  std::cout << "by role:      ";
  for (size_t r = 0; r < io::kNumTensorRoles; ++r)
    if (n.by_role[r]) std::cout << " " << io::tensor_role_name(static_cast<io::TensorRole>(r)) << " " << human_count(n.by_role[r]);
  std::cout << "\nfiles:         " << in.model->files().size() << ", " << human_bytes(in.model->bytes_on_disk())
            << " on disk (" << in.model->bytes_on_disk() << " bytes)\n";
  std::cout << "tensors:       " << in.model->tensors().size();
  for (const auto& [d, count] : tensors_per_dtype(*in.model)) std::cout << ", " << count << " " << d;
  std::cout << "\n";
  if (in.artifact) {
    const runtime::QuantizationConfig& q = in.artifact->quantization();
    char bpw[32];
    std::snprintf(bpw, sizeof bpw, "%.3f", in.expert_weights ? 8.0 * static_cast<double>(in.expert_packed_bytes) /
                                                                   static_cast<double>(in.expert_weights)
                                                             : 0.0);
    std::cout << "quantization:  submoe artifact, format " << q.format_version << ": " << in.artifact->summary() << "\n"
              << "experts:       " << in.expert_matrices << " packed matrices, " << human_count(in.expert_weights)
              << " weights in " << human_bytes(in.expert_packed_bytes) << " = " << bpw << " bits/weight";
    if (in.dictionary_bytes) std::cout << " (+ shared tensors " << human_bytes(in.dictionary_bytes) << ")";
    std::cout << "\n               (the parameter counts above count the packed experts' stored elements)\n";
    // Each record's contract (runtime/repr_contract.h): checked against this build on open when recorded.
    const auto& codecs = in.artifact->codecs();
    for (size_t i = 0; i < codecs.size(); ++i) {
      const runtime::ReprContract k = codecs[i]->contract();
      std::cout << (i == 0 ? "contracts:     " : "               ") << "[" << i << "] " << k.family << ", "
                << (k.vector_axis == "none" ? std::string("scalar codes")
                                            : "vectors of " + (k.vector_dim ? std::to_string(k.vector_dim) : std::string("variable length")) +
                                                  " along the " + k.vector_axis)
                << ", sparse " << k.sparse_semantics << ", kernel " << k.required_kernel << " v" << k.decoder_version
                << ", " << k.op.input << " x " << k.op.decoded_operand << " (scale " << k.op.scale << ") -> "
                << k.op.epilogue << ", accumulate " << k.op.accumulator;
      if (k.input_transform != "none") std::cout << ", input " << k.input_transform;
      if (k.output_transform != "none") std::cout << ", output " << k.output_transform;
      std::cout << (q.contracts.empty() ? " (not recorded: written before contracts)" : ", recorded and verified")
                << "\n               " << k.packing_layout << "\n";
    }
    // 0x03C: what the exceptions cost against spending the same bits on a wider dense code.
    for (size_t i = 0; i < in.sparse_layers.size(); ++i) {
      const auto& sl = in.sparse_layers[i];
      char line[200];
      std::snprintf(line, sizeof line, "layer %d: %.3f%% exceptions (%llu of %s), break-even %.3f%%%s", sl.layer,
                    100.0 * static_cast<double>(sl.nnz) / static_cast<double>(sl.weights),
                    static_cast<unsigned long long>(sl.nnz), human_count(static_cast<int64_t>(sl.weights)).c_str(),
                    100.0 * sl.break_even,
                    static_cast<double>(sl.nnz) > sl.break_even * static_cast<double>(sl.weights) ? " (above: a dense code one bit wider costs less)" : "");
      std::cout << (i == 0 ? "sparse:        " : "               ") << line << "\n";
    }
    if (!in.sparse_layers.empty())
      std::cout << "               (break-even: the exception share at which the matrix costs as much as a dense code\n"
                   "               one bit wider, 32 bits an exception; seed 002 0x03C)\n";
    const auto classes = in.ledger.is_object() ? in.ledger.find("dense_classes") : in.ledger.end();
    if (in.ledger.is_object() && classes != in.ledger.end() && classes->is_object()) {
      std::cout << "dense weights:\n";
      for (const auto& [name, c] : classes->items()) {
        if (!c.is_object()) continue;
        char line[160];
        std::snprintf(line, sizeof line, "  %-14s %8s weights, %10s, %6.3f bits/weight, %s\n", name.c_str(),
                      human_count(c.value("weights", int64_t{0})).c_str(),
                      human_bytes(c.value("bytes", uint64_t{0})).c_str(), c.value("bits_per_weight", 0.0),
                      c.value("representation", std::string("?")).c_str());
        std::cout << line;
      }
    }
    if (in.ledger.is_object()) {
      std::cout << "ledger:        (" << artifact::kManifestFile << ")\n";
      for (const auto& [k, v] : in.ledger.items())
        if (k != "dense_classes") std::cout << "  " << k << ": " << v.dump() << "\n";
    }
  }
  std::cout << "integrity:     " << integrity_line(in) << "\n";
  if (opt.no_tensors) return;
  size_t width = 4;
  for (const io::TensorView* t : in.model->tensors()) width = std::max(width, t->name.size());
  std::cout << "\n";
  for (const io::TensorView* t : in.model->tensors()) {
    std::cout << t->name << std::string(width + 2 - t->name.size(), ' ') << io::dtype_name(t->dtype)
              << std::string(8 - std::min<size_t>(7, io::dtype_name(t->dtype).size()), ' ') << t->shape_string() << "\n";
  }
}

void setup_inspect(CLI::App& root) {
  auto opt = std::make_shared<InspectOptions>();
  auto* cmd = root.add_subcommand(
      "inspect",
      "Describe a checkpoint or a compressed artifact: architecture, layers, experts, parameter\n"
      "counts and the tensor list.\n"
      "PATH is a model directory (config.json with model.safetensors or a sharded\n"
      "model.safetensors.index.json) or a single .safetensors file (config.json beside it is\n"
      "used when present). Only headers are read and validated, unless --verify: then every\n"
      "byte is read and checked (an artifact's checksums, every expert decoded and validated,\n"
      "every float tensor free of NaN/Inf), and the exit status is non-zero on the first fault.\n"
      "Parameter counts come from the tensors: 'active per token' is everything except the\n"
      "routed experts plus top-k experts' share of each MoE layer (needs config.json).\n"
      "Output: a text summary then one line per tensor (name, dtype, shape), or with --json one\n"
      "JSON object with keys path, config, architecture, parameters{total, active_per_token,\n"
      "routed_experts, routed_share, moe_layers, experts_per_layer, by_role}, bytes_on_disk,\n"
      "files, num_tensors, tensors_per_dtype and tensors[{name, dtype, shape, nbytes, role, file,\n"
      "offset}].\n"
      "A compressed artifact (config.json with a submoe quantization_config) is also opened and\n"
      "checked as the runtime loads it; the text adds its quantization summary, the packed experts'\n"
      "size and bits per weight (measured from the file), and the ledger of submoe_manifest.json\n"
      "when present; JSON adds quantization{format_version, summary, representations (the records:\n"
      "representation name and parameters), expert_matrices, expert_weights, expert_packed_bytes,\n"
      "shared_tensor_bytes (dictionaries, codebooks), expert_packed_bits_per_weight} and ledger (both\n"
      "null for a checkpoint), and integrity{checksums, summary, verified, experts_built,\n"
      "float_tensors_finite}.");
  cmd->add_option("PATH", opt->path, "Model directory, index .json or .safetensors file")->required();
  cmd->add_flag("--json", opt->json, "Print one JSON object instead of text (default: text)");
  cmd->add_flag("--no-tensors", opt->no_tensors, "Omit the per-tensor list (default: list every tensor)");
  cmd->add_flag("--verify", opt->verify,
                "Read every byte: checksums, expert validation, NaN/Inf; non-zero exit on a fault");
  cmd->callback([opt] {
    auto in = load(opt->path);
    if (!report("inspect", in.status())) return;
    if (opt->verify && !report("inspect --verify", verify(&*in))) return;
    if (opt->json) {
      print_json(*in, *opt);
    } else {
      print_text(*in, *opt);
    }
  });
}

}  // namespace
SUBMOE_REGISTER_COMMAND("inspect", setup_inspect);
}  // namespace submoe::cli
