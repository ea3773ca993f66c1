// compress_model: the sequential layer-by-layer pipeline (include/submoe/calib/compress.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "artifact_assembly.h"
#include "dense_packing.h"
#include "expert_rates.h"
#include "expert_layer.h"
#include "layer_packer.h"
#include "submoe/calib/calibration_set.h"
#include "submoe/calib/compress.h"
#include "submoe/core/memory_usage.h"
#include "submoe/core/sha256.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/linalg/dense.h"
#include "submoe/model/layer_runner.h"
#include "submoe/model/moe_model.h"
#include "work_dir.h"

namespace submoe::calib {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

// SHA-256 over the checkpoint's config.json and safetensors files (name + bytes).
Result<std::string> checkpoint_hash(const std::string& model_dir, const io::SafetensorsModel& src) {
  Sha256 h;
  std::vector<std::string> files = {model_dir + "/config.json"};
  for (const auto& f : src.files()) files.push_back(f->path());
  for (const std::string& f : files) {
    SUBMOE_ASSIGN_OR_RETURN(std::string digest, sha256_file(f));
    h.update(fs::path(f).filename().string());
    h.update(digest);
  }
  return h.hex_digest();
}

std::string grid_of(const detail::ExpertRates& rates) {
  return rates.codecs.size() == 1 ? rates.codecs[0]->grid_name() : "mixed";
}

json job_identity(const CompressOptions& o, const detail::ExpertRates& rates, const std::string& source_hash,
                  const calib::CalibrationSet& set, const std::vector<int32_t>& mask) {
  json records = json::array(), writers = json::array();
  for (const auto& c : rates.codecs) {
    records.push_back(c->record());
    writers.push_back(c->provenance());
  }
  return {{"source_sha256", source_hash},
          {"calibration_sha256", set.text_sha256},
          {"calibration_tokens_sha256", set.tokens_sha256},
          {"samples", set.samples},
          {"seq_len", set.seq_len},
          {"method", o.method == QuantMethod::kGptq ? "gptq" : "rtn"},
          {"grid", grid_of(rates)},
          {"representation", records.size() == 1 ? records[0] : records},
          {"representation_provenance", writers.size() == 1 ? writers[0] : writers},
          {"allocation", rates.identity},
          {"damp", o.damp},
          {"expert_group", o.expert_group},
          {"act_order", o.act_order},
          {"true_sequential", o.true_sequential},
          {"token_cap_factor", o.token_cap_factor},
          {"mask_token_ids", mask}};
}

json layer_report_json(const LayerReport& r, bool with_time) {
  json j = {{"layer", r.layer},
            {"sparse", r.sparse},
            {"tokens_per_expert", {{"min", r.tokens_min}, {"mean", r.tokens_mean}, {"max", r.tokens_max}}},
            {"capped_experts", r.capped_experts},
            {"experts_without_tokens", r.experts_without_tokens},
            {"rtn_fallbacks", r.rtn_fallbacks},
            {"fallback_matrices", r.fallback_matrices},
            {"natural_sparsity", {{"mean", r.sparsity_mean}, {"std", r.sparsity_std}}},
            {"relative_weight_error", {{"gate_up", r.weight_rel_error[0]}, {"down", r.weight_rel_error[1]}}},
            {"relative_output_error", {{"gate_up", r.output_rel_error[0]}, {"down", r.output_rel_error[1]}}},
            {"packed_bytes", r.packed_bytes},
            {"weights", r.weights}};
  if (with_time) {
    j["seconds"] = r.seconds;
    j["gptq_seconds"] = r.gptq_seconds;
    j["hessian_seconds"] = r.hessian_seconds;
  }
  return j;
}

LayerReport layer_report_from_json(const json& j) {
  LayerReport r;
  r.layer = j.at("layer").get<size_t>();
  r.sparse = j.at("sparse").get<bool>();
  r.tokens_min = j.at("tokens_per_expert").at("min").get<size_t>();
  r.tokens_mean = j.at("tokens_per_expert").at("mean").get<double>();
  r.tokens_max = j.at("tokens_per_expert").at("max").get<size_t>();
  r.capped_experts = j.at("capped_experts").get<size_t>();
  r.experts_without_tokens = j.at("experts_without_tokens").get<size_t>();
  r.rtn_fallbacks = j.at("rtn_fallbacks").get<size_t>();
  r.fallback_matrices = j.at("fallback_matrices").get<std::vector<std::string>>();
  r.sparsity_mean = j.at("natural_sparsity").at("mean").get<double>();
  r.sparsity_std = j.at("natural_sparsity").at("std").get<double>();
  r.packed_bytes = j.at("packed_bytes").get<uint64_t>();
  if (j.contains("relative_weight_error")) {
    r.weight_rel_error[0] = j.at("relative_weight_error").at("gate_up").get<double>();
    r.weight_rel_error[1] = j.at("relative_weight_error").at("down").get<double>();
    r.output_rel_error[0] = j.at("relative_output_error").at("gate_up").get<double>();
    r.output_rel_error[1] = j.at("relative_output_error").at("down").get<double>();
  }
  r.weights = j.at("weights").get<uint64_t>();
  if (j.contains("seconds")) r.seconds = j.at("seconds").get<double>();
  if (j.contains("gptq_seconds")) r.gptq_seconds = j.at("gptq_seconds").get<double>();
  if (j.contains("hessian_seconds")) r.hessian_seconds = j.at("hessian_seconds").get<double>();
  return r;
}

// The report of a finished layer, from its checkpoint (layer file for sparse
// layers, whose metadata holds it; dense layers report nothing but their index).
Result<LayerReport> load_layer_report(const detail::WorkDir& work, size_t layer, bool sparse) {
  LayerReport r;
  r.layer = layer;
  r.sparse = sparse;
  if (!sparse) return r;
  SUBMOE_ASSIGN_OR_RETURN(auto f, io::SafetensorsFile::open(work.layer_file(layer)));
  auto it = f->metadata().find("submoe_layer_report");
  if (it == f->metadata().end()) return corrupt_data("'" + work.layer_file(layer) + "' has no layer report");
  json j = json::parse(it->second, nullptr, false);
  if (j.is_discarded()) return corrupt_data("'" + work.layer_file(layer) + "': unreadable layer report");
  try {
    return layer_report_from_json(j);
  } catch (const json::exception& e) {
    return corrupt_data("'" + work.layer_file(layer) + "': layer report: " + e.what());
  }
}

Status check_finite_hidden(const std::vector<float>& h, size_t layer) {
  for (size_t i = 0; i < h.size(); ++i)
    if (!std::isfinite(h[i]))
      return numerical_error("non-finite hidden state after layer " + std::to_string(layer) + " (element " +
                             std::to_string(i) + ")");
  return Status::ok();
}

// The source is never at risk: the output may not be the source directory,
// lie inside it, or contain it (an --overwrite or a cleanup of the output would
// then replace or delete the user's checkpoint), whatever the flags. Paths are
// compared after resolving symbolic links and "..".
Status check_output_apart_from_source(const std::string& model_dir, const std::string& out_dir) {
  std::error_code ec1, ec2;
  const fs::path src = fs::weakly_canonical(fs::absolute(model_dir), ec1);
  const fs::path out = fs::weakly_canonical(fs::absolute(out_dir), ec2);
  if (ec1 || ec2) return Status::ok();  // unreadable paths fail later with their own message
  // "." when equal, a relative path without ".." when child lies inside parent.
  auto rel = [](const fs::path& child, const fs::path& parent) { return child.lexically_relative(parent); };
  auto within = [&](const fs::path& child, const fs::path& parent) {
    const fs::path r = rel(child, parent);
    return !r.empty() && *r.begin() != "..";
  };
  if (within(out, src)) {
    const bool same = rel(out, src) == ".";
    return invalid_argument("--out '" + out_dir + "' is " + (same ? "the source checkpoint" : "inside the source checkpoint") +
                            " '" + model_dir + "': write the artifact to a directory of its own");
  }
  if (within(src, out))
    return invalid_argument("--out '" + out_dir + "' contains the source checkpoint '" + model_dir +
                            "': write the artifact to a directory of its own");
  return Status::ok();
}

}  // namespace

Result<CompressSummary> compress_model(const CompressOptions& o, const ProgressFn& progress) {
  const auto t_start = Clock::now();
  SUBMOE_RETURN_IF_ERROR(check_output_apart_from_source(o.model_dir, o.out_dir));
  uint64_t step = 0;
  auto hook = [&] {
    if (o.step_hook) o.step_hook(step++);
  };
  if (o.expert_group == 0) return invalid_argument("--expert-group must be >= 1");
  if (!(o.damp > 0)) return invalid_argument("--damp must be > 0");
  if (!(o.token_cap_factor >= 1)) return invalid_argument("the token cap factor must be >= 1");
  // The representation first: bad options are refused before any loading.
  if (o.alloc == RateAlloc::kUniform && !o.popularity_path.empty())
    return invalid_argument("--popularity goes with --alloc thirds or waterfill");
  std::shared_ptr<const runtime::MatrixCodec> uniform_codec;
  if (o.alloc == RateAlloc::kUniform) {
    SUBMOE_ASSIGN_OR_RETURN(uniform_codec, runtime::make_codec(o.repr));
  }

  SUBMOE_ASSIGN_OR_RETURN(detail::DensePlan dense_plan, detail::make_dense_plan(o.dense_reprs));

  model::LoadWeightsOptions load;
  load.allow_unused_tensors = o.allow_unused_tensors;
  load.dense_linear = detail::record_dense_projections(&dense_plan);
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<model::MoeModel> model, model::MoeModel::load(o.model_dir, load));
  SUBMOE_RETURN_IF_ERROR(detail::check_dense_plan(&dense_plan));
  const io::MoeModelConfig& c = model->config();
  SUBMOE_ASSIGN_OR_RETURN(io::Tokenizer tokenizer, io::Tokenizer::load(o.model_dir + "/tokenizer.json"));
  SUBMOE_ASSIGN_OR_RETURN(CalibrationSet set,
                          make_calibration_set(o.calib_path, tokenizer, o.lossy_text, o.samples, o.seq_len));
  if (o.require_samples && set.samples < o.samples)
    return invalid_argument("the calibration text '" + o.calib_path + "' holds " + std::to_string(set.windows) +
                            " windows of " + std::to_string(o.seq_len) + " tokens, fewer than --samples " +
                            std::to_string(o.samples) + ": ask for at most " + std::to_string(set.windows) +
                            ", use a shorter --seq-len or a longer text");
  SUBMOE_ASSIGN_OR_RETURN(auto source, io::SafetensorsModel::open(o.model_dir));
  SUBMOE_ASSIGN_OR_RETURN(std::string source_hash, checkpoint_hash(o.model_dir, *source));
  const size_t H = static_cast<size_t>(c.hidden_size), L = static_cast<size_t>(c.num_hidden_layers);
  std::vector<bool> sparse(L);
  std::vector<size_t> sparse_layers;
  for (size_t l = 0; l < L; ++l) {
    sparse[l] = c.is_moe_layer(static_cast<int>(l));
    if (sparse[l]) sparse_layers.push_back(l);
  }
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  ThreadPool pool(threads);
  if (progress && o.alloc != RateAlloc::kUniform && o.popularity_path.empty()) {
    Progress p;
    p.layers = L;
    p.stage = "popularity";
    progress(p);
  }
  SUBMOE_ASSIGN_OR_RETURN(detail::ExpertRates rates, detail::plan_expert_rates(o, uniform_codec, *model, set, sparse_layers, &pool));
  for (const auto& codec : rates.codecs) {
    const auto h32 = static_cast<uint32_t>(H), i32 = static_cast<uint32_t>(c.moe_intermediate_size);
    SUBMOE_RETURN_IF_ERROR(codec->check_encodable(i32, h32).with_context("experts' gate/up projections [" +
                                                                     std::to_string(i32) + ", " + std::to_string(h32) + "]"));
    SUBMOE_RETURN_IF_ERROR(codec->check_encodable(h32, i32).with_context("experts' down projections [" +
                                                                     std::to_string(h32) + ", " + std::to_string(i32) + "]"));
  }
  const size_t tokens = set.samples * set.seq_len;

  std::set<int32_t> mask_set(o.mask_token_ids.begin(), o.mask_token_ids.end());
  if (o.default_mask) {
    if (c.bos_token_id) mask_set.insert(static_cast<int32_t>(*c.bos_token_id));
    for (int64_t e : c.eos_token_ids) mask_set.insert(static_cast<int32_t>(e));
    if (c.pad_token_id) mask_set.insert(static_cast<int32_t>(*c.pad_token_id));
  }
  const std::vector<int32_t> mask_ids(mask_set.begin(), mask_set.end());
  std::vector<uint8_t> masked(tokens, 0);
  size_t masked_count = 0;
  for (size_t t = 0; t < tokens; ++t) {
    masked[t] = mask_set.count(set.tokens[t]) ? 1 : 0;
    masked_count += masked[t];
  }

  // Output directory and resume state.
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return io_error("cannot create '" + o.out_dir + "': " + ec.message());
  // One writer per output directory: a second compress into it fails at once.
  SUBMOE_ASSIGN_OR_RETURN(const auto out_lock,
                          io::ExclusiveFileLock::try_acquire(o.out_dir + "/" + std::string(artifact::kCompressLockFile),
                                                             "'" + o.out_dir + "'"));
  detail::WorkDir work(o.out_dir);
  const std::string job = job_identity(o, rates, source_hash, set, mask_ids).dump(2);
  const bool artifact_exists = fs::exists(o.out_dir + "/" + std::string(artifact::kWeightsFile), ec);
  if (work.exists()) {
    if (!o.resume)
      return invalid_argument("'" + work.path() + "' holds an interrupted run: pass --resume to continue it, or "
                              "delete that directory to start over");
    SUBMOE_ASSIGN_OR_RETURN(std::string old_job, work.read_job());
    if (old_job != job)
      return invalid_argument("--resume: '" + work.path() + "/job.json' was written for other inputs or options "
                              "(model, calibration text or flags differ); delete the directory to start over");
  } else if (artifact_exists && !o.overwrite && !o.resume) {
    return invalid_argument("'" + o.out_dir + "' already holds an artifact; pass --overwrite to replace it");
  }
  SUBMOE_RETURN_IF_ERROR(work.create());
  SUBMOE_RETURN_IF_ERROR(work.write_job(job));

  linalg::set_blas_threads(1);  // parallel over experts instead; and deterministic
  auto packer = std::make_unique<detail::LayerPacker>(rates.codecs, rates.records);
  std::vector<std::string> expert_names;
  std::vector<model::LayerExpertWeights> layer_weights(L);
  for (size_t l : sparse_layers) {
    SUBMOE_ASSIGN_OR_RETURN(layer_weights[l], model::find_layer_expert_weights(*source, c, model->architecture(),
                                                                               static_cast<int>(l)));
    expert_names.insert(expert_names.end(), layer_weights[l].tensor_names.begin(), layer_weights[l].tensor_names.end());
  }

  CompressSummary summary;
  summary.out_dir = o.out_dir;
  summary.calibration_tokens = tokens;
  summary.masked_tokens = masked_count;
  model::LayerRunner runner(*model, &pool);

  // The list buffer: every calibration token's hidden state, sample-major.
  std::vector<float> h(tokens * H);
  size_t first_layer = 0;
  const std::optional<size_t> done = o.resume ? work.last_complete_layer(sparse) : std::nullopt;
  if (done) {
    SUBMOE_RETURN_IF_ERROR(work.load_hidden(*done, &h, tokens, H));
    first_layer = *done + 1;
    for (size_t l = 0; l < first_layer; ++l) {
      SUBMOE_ASSIGN_OR_RETURN(LayerReport r, load_layer_report(work, l, sparse[l]));
      summary.layers.push_back(r);
    }
    summary.resumed_layers = first_layer;
  } else {
    for (size_t s = 0; s < set.samples; ++s)
      SUBMOE_RETURN_IF_ERROR(runner.embed({set.sample(s), set.seq_len}, &h[s * set.seq_len * H]));
  }

  std::vector<float> x(tokens * H), block(tokens * H), dense(set.seq_len * H);
  model::Routing routing, sample_routing;
  const size_t k = static_cast<size_t>(c.num_experts_per_tok);
  const size_t inner = static_cast<size_t>(c.moe_intermediate_size);
  double compute_seconds = 0;
  size_t layers_computed = 0;
  for (size_t l = first_layer; l < L; ++l) {
    const auto t_layer = Clock::now();
    auto report_progress = [&](const char* stage, size_t done_experts, size_t experts) {
      if (!progress) return;
      Progress p;
      p.layer = l;
      p.layers = L;
      p.experts_done = done_experts;
      p.experts = experts;
      p.stage = stage;
      p.elapsed_s = std::chrono::duration<double>(Clock::now() - t_start).count();
      const double in_layer = std::chrono::duration<double>(Clock::now() - t_layer).count();
      if (layers_computed > 0) {
        const double per_layer = compute_seconds / static_cast<double>(layers_computed);
        p.eta_s = std::max(0.0, per_layer * static_cast<double>(L - l) - in_layer);
      }
      progress(p);
    };
    report_progress("dense", 0, sparse[l] ? static_cast<size_t>(c.num_experts) : 0);
    // Dense half per sample: attention, norms, router.
    if (sparse[l]) {
      routing.num_tokens = tokens;
      routing.k = k;
      routing.experts.resize(tokens * k);
      routing.weights.resize(tokens * k);
    }
    for (size_t s = 0; s < set.samples; ++s) {
      float* hs = &h[s * set.seq_len * H];
      float* xs = &x[s * set.seq_len * H];
      runner.attention(l, hs, set.seq_len, xs);
      if (sparse[l]) {
        runner.route(l, xs, set.seq_len, &sample_routing);
        std::copy(sample_routing.experts.begin(), sample_routing.experts.end(),
                  routing.experts.begin() + static_cast<ptrdiff_t>(s * set.seq_len * k));
        std::copy(sample_routing.weights.begin(), sample_routing.weights.end(),
                  routing.weights.begin() + static_cast<ptrdiff_t>(s * set.seq_len * k));
      }
    }
    hook();
    LayerReport report;
    report.layer = l;
    report.sparse = sparse[l];
    std::fill(block.begin(), block.end(), 0.0f);
    if (sparse[l]) {
      detail::ExpertLayerInput in;
      in.layer = l;
      in.x = x.data();
      in.tokens = tokens;
      in.hidden = H;
      in.inner = inner;
      in.routing = &routing;
      in.masked = masked;
      in.weights = &layer_weights[l];
      in.mlp = [&](size_t e) { return model::expert_mlp(*model, l, e); };
      SUBMOE_RETURN_IF_ERROR(detail::compress_expert_layer(in, o, *packer, block.data(), &report, &pool,
                                                           [&](size_t d, size_t n) {
                                                             report_progress("experts", d, n);
                                                             hook();
                                                           }));
      // Release the source pages of this layer's experts (read lazily, used once).
      for (const auto& e : layer_weights[l].experts) {
        io::release_pages(e.gate);
        io::release_pages(e.up);
        io::release_pages(e.down);
      }
    }
    // The rest of the FFN (dense MLP or shared expert), added after the routed
    // experts as the forward pass does, then the residual.
    for (size_t s = 0; s < set.samples; ++s) {
      const size_t off = s * set.seq_len * H;
      runner.dense_ffn(l, &x[off], set.seq_len, dense.data());
      for (size_t i = 0; i < set.seq_len * H; ++i) block[off + i] += dense[i];
    }
    for (size_t i = 0; i < tokens * H; ++i) h[i] += block[i];
    SUBMOE_RETURN_IF_ERROR(check_finite_hidden(h, l));
    report.seconds = std::chrono::duration<double>(Clock::now() - t_layer).count();
    if (sparse[l]) {
      report_progress("pack", static_cast<size_t>(c.num_experts), static_cast<size_t>(c.num_experts));
      report.packed_bytes = packer->bytes();
      SUBMOE_RETURN_IF_ERROR(packer->write_and_clear(
          work.layer_file(l), {{"submoe_layer_report", layer_report_json(report, true).dump()}}));
      hook();
    }
    SUBMOE_RETURN_IF_ERROR(work.save_hidden(l, h, tokens, H));
    hook();
    compute_seconds += std::chrono::duration<double>(Clock::now() - t_layer).count();
    ++layers_computed;
    summary.layers.push_back(report);
  }

  // Provenance (deterministic: no times) and the artifact.
  if (progress) {
    Progress p;
    p.layer = L;
    p.layers = L;
    p.stage = "assemble";
    p.elapsed_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    progress(p);
  }
  json layers = json::array();
  double sparsity_sum = 0, weight_sum = 0;
  size_t tmin = SIZE_MAX, tmax = 0;
  double tmean_sum = 0;
  for (const LayerReport& r : summary.layers) {
    layers.push_back(layer_report_json(r, false));
    summary.rtn_fallbacks += r.rtn_fallbacks;
    summary.expert_weights += r.weights;
    if (!r.sparse) continue;
    sparsity_sum += r.sparsity_mean * static_cast<double>(r.weights);
    weight_sum += static_cast<double>(r.weights);
    tmin = std::min(tmin, r.tokens_min);
    tmax = std::max(tmax, r.tokens_max);
    tmean_sum += r.tokens_mean;
  }
  summary.natural_sparsity = weight_sum > 0 ? sparsity_sum / weight_sum : 0;
  json provenance = {
      {"source_checkpoint", fs::path(o.model_dir).filename().string()},
      {"source_sha256", source_hash},
      {"calibration_file", fs::path(o.calib_path).filename().string()},
      {"calibration_sha256", set.text_sha256},
      {"calibration_tokens_sha256", set.tokens_sha256},
      {"calibration_selection", "consecutive windows of seq_len tokens, samples taken at window floor(i*W/N)"},
      {"samples", set.samples},
      {"seq_len", set.seq_len},
      {"calibration_tokens", tokens},
      {"masked_token_ids", mask_ids},
      {"masked_positions", masked_count},
      {"tokens_per_expert",
       {{"min", sparse_layers.empty() ? 0 : tmin},
        {"mean", sparse_layers.empty() ? 0.0 : tmean_sum / static_cast<double>(sparse_layers.size())},
        {"max", tmax}}},
      {"method", o.method == QuantMethod::kGptq ? "gptq" : "rtn"},
      {"grid", grid_of(rates)},
      {"damp", o.damp},
      {"expert_group", o.expert_group},
      {"act_order", o.act_order},
      {"true_sequential", o.true_sequential},
      {"token_cap_factor", o.token_cap_factor},
      {"rtn_fallbacks", summary.rtn_fallbacks},
      {"natural_sparsity", summary.natural_sparsity},
      {"layers", layers}};
  if (!rates.provenance.is_null()) provenance["allocation"] = rates.provenance;
  provenance["representations"] = json::array();
  for (const auto& codec_k : packer->codecs()) {
    json r = codec_k->record();
    if (!codec_k->provenance().is_null()) r["writer"] = codec_k->provenance();
    provenance["representations"].push_back(r);
  }

  if (!dense_plan.empty()) {
    json d = json::object();
    for (const auto& [cls, codec] : dense_plan.codecs)
      d[model::dense_class_name(cls)] = {{"method", "rtn"}, {"representation", codec->record()}};
    provenance["dense_weights"] = d;
  }

  detail::AssemblyInputs ai;
  ai.options = &o;
  ai.source = source.get();
  ai.expert_tensor_names = expert_names;
  ai.sparse_layers = sparse_layers;
  ai.codecs = packer->codecs();
  ai.records = rates.records;
  ai.dense = &dense_plan;
  ai.provenance_json = provenance.dump();
  ai.work = &work;
  hook();
  SUBMOE_RETURN_IF_ERROR(detail::assemble_artifact(ai, &summary));
  hook();
  SUBMOE_RETURN_IF_ERROR(work.remove());

  summary.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  summary.peak_rss_mb = peak_rss_mb();
  json run_layers = json::array();
  for (const LayerReport& r : summary.layers) run_layers.push_back(layer_report_json(r, true));
  const json report = {{"seconds", summary.seconds},
                       {"peak_rss_mb", summary.peak_rss_mb},
                       {"threads", threads},
                       {"resumed_layers", summary.resumed_layers},
                       {"layers", run_layers}};
  SUBMOE_RETURN_IF_ERROR(io::write_file_atomic(o.out_dir + "/compress_report.json", report.dump(2) + "\n"));
  return summary;
}

}  // namespace submoe::calib
