// End-to-end compression of tiny HF fixtures (tests/fixtures): the artifact's
// layout (docs/format.md 9), that the packed experts decode to QMoE's grid,
// that GPTQ beats RTN on the calibration inputs, determinism, resume after
// kill -9 at any step, and bad input.
#include "submoe/calib/compress.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "submoe/calib/calibration_set.h"
#include "submoe/codec/int_packed.h"
#include "submoe/codec/ternary_dictionary.h"
#include "submoe/codec/ternary_grid.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/layer_runner.h"
#include "submoe/runtime/artifact.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::calib {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";
const std::string kCalib = kFixtures + "calib/shakespeare-excerpt.txt";

std::string temp_dir(const std::string& name) {
  const std::string d = (fs::temp_directory_path() / ("submoe_calib_" + name + "_" + std::to_string(getpid()))).string();
  fs::remove_all(d);
  return d;
}

CompressOptions small_options(const std::string& model, const std::string& out) {
  CompressOptions o;
  o.model_dir = kFixtures + model;
  o.calib_path = kCalib;
  o.out_dir = out;
  o.samples = 16;
  o.seq_len = 64;
  o.expert_group = 4;
  o.threads = 2;
  return o;
}

std::string file_bytes(const std::string& path) {
  auto r = io::read_file_to_string(path);
  return r.is_ok() ? r.value() : std::string("<missing " + path + ">");
}

// The files that make up an artifact (compress_report.json holds timings).
std::map<std::string, std::string> artifact_files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "compress_report.json")
      out[e.path().filename().string()] = file_bytes(e.path().string());
  return out;
}

TEST(CalibrationSet, EvenlySpacedWindows) {
  std::vector<int32_t> ids(1050);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  auto s = select_calibration_windows(ids, 4, 100);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s.value().windows, 10u);
  ASSERT_EQ(s.value().samples, 4u);
  const int32_t starts[4] = {0, 200, 500, 700};  // windows floor(i * 10 / 4)
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 100; ++j) EXPECT_EQ(s.value().sample(i)[j], starts[i] + static_cast<int32_t>(j));
  // Fewer windows than samples: all of them.
  auto few = select_calibration_windows(ids, 50, 300);
  ASSERT_TRUE(few.is_ok());
  EXPECT_EQ(few.value().samples, 3u);
  EXPECT_FALSE(select_calibration_windows(ids, 4, 2000).is_ok());
  EXPECT_FALSE(select_calibration_windows(ids, 0, 10).is_ok());
  // The token hash depends on the selection.
  EXPECT_NE(select_calibration_windows(ids, 4, 100).value().tokens_sha256,
            select_calibration_windows(ids, 4, 99).value().tokens_sha256);
}

struct CompressedFixture {
  std::string dir;
  CompressSummary summary;
};

CompressedFixture compress_or_die(const CompressOptions& o) {
  auto r = compress_model(o, nullptr);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return {o.out_dir, r.is_ok() ? r.value() : CompressSummary{}};
}

// Layout, grid and ledger of a ternary GPTQ artifact.
TEST(Compress, TernaryArtifactLayoutAndGrid) {
  const std::string out = temp_dir("layout");
  const CompressedFixture a = compress_or_die(small_options("qwen3_moe", out));
  auto src = io::SafetensorsModel::open(kFixtures + "qwen3_moe");
  auto art = io::SafetensorsFile::open(out + "/model.safetensors");
  ASSERT_TRUE(src.is_ok() && art.is_ok());
  auto cfg = io::load_hf_config(out);
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().message();
  const io::MoeModelConfig& c = cfg.value();
  const json qc = json::parse(file_bytes(out + "/config.json"))["quantization_config"];
  EXPECT_EQ(qc["quant_method"], "submoe");
  EXPECT_EQ(qc["format_version"], 2);
  ASSERT_EQ(qc["representations"].size(), 1u);
  EXPECT_EQ(qc["representations"][0]["representation"], "ternary_dict");
  EXPECT_FALSE(qc.contains("expert_matrices"));  // every matrix uses record 0

  // 1. The dictionary, first.
  const auto& tensors = art.value()->tensors();
  ASSERT_FALSE(tensors.empty());
  EXPECT_EQ(tensors[0].name, artifact::kDictionaryTensor);
  auto dict = ternary::build_qmoe_dictionary(0.885);
  ASSERT_TRUE(dict.is_ok());
  ASSERT_EQ(tensors[0].nbytes, ternary::kDictEntries * 8u);
  for (size_t i = 0; i < ternary::kDictEntries; i += 997) {
    uint64_t v;
    std::memcpy(&v, tensors[0].data + 8 * i, 8);
    EXPECT_EQ(v, uint64_t{dict.value().entries()[i].word[0]} | (uint64_t{dict.value().entries()[i].word[1]} << 32));
  }
  // 2. Every non-expert source tensor, byte for byte.
  size_t dense = 0;
  for (const io::TensorView* t : src.value()->tensors()) {
    if (t->name.find(".experts.") != std::string::npos) {
      EXPECT_EQ(art.value()->find(t->name), nullptr) << t->name;
      continue;
    }
    const io::TensorView* a2 = art.value()->find(t->name);
    ASSERT_NE(a2, nullptr) << t->name;
    EXPECT_EQ(a2->dtype, t->dtype);
    EXPECT_EQ(0, std::memcmp(a2->data, t->data, t->nbytes)) << t->name;
    ++dense;
  }
  // 3. Experts in (layer, expert, gate/up/down) order, each expert contiguous,
  //    decoding to QMoE's grid with levels from the ORIGINAL rows.
  const int64_t H = c.hidden_size, I = c.moe_intermediate_size;
  size_t next = 1 + dense;
  const std::string fields[3] = {"row_offsets", "scales", "codes"};
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    for (int e = 0; e < c.num_experts; ++e) {
      const char* hub[3] = {"gate_proj", "up_proj", "down_proj"};
      for (int p = 0; p < 3; ++p) {
        const auto proj = static_cast<artifact::Projection>(p);
        const io::TensorView* parts[3];
        for (int f = 0; f < 3; ++f) {
          ASSERT_LT(next, tensors.size());
          EXPECT_EQ(tensors[next].name, artifact::expert_tensor_name(l, e, proj, fields[f]));
          parts[f] = &tensors[next++];
        }
        const uint32_t rows = static_cast<uint32_t>(p == 2 ? H : I), cols = static_cast<uint32_t>(p == 2 ? I : H);
        int32_t used = 0;  // codes past row_offsets[rows] are padding (format 9.3)
        std::memcpy(&used, parts[0]->data + 4 * rows, 4);
        ASSERT_GE(parts[2]->nbytes, 2u * static_cast<uint64_t>(used));
        ASSERT_LE(parts[2]->nbytes, 2u * static_cast<uint64_t>(used) + 2);
        auto view = ternary::make_packed_view(rows, cols, {reinterpret_cast<const std::byte*>(parts[2]->data), 2u * static_cast<size_t>(used)},
                                              {reinterpret_cast<const std::byte*>(parts[0]->data), parts[0]->nbytes},
                                              {reinterpret_cast<const std::byte*>(parts[1]->data), parts[1]->nbytes},
                                              dict.value().entries());
        ASSERT_TRUE(view.is_ok()) << view.status().message();
        auto w = ternary::decode_to_float(view.value());
        ASSERT_TRUE(w.is_ok()) << w.status().message();
        const io::TensorView* orig =
            src.value()->find("model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + hub[p] + ".weight");
        ASSERT_NE(orig, nullptr);
        auto ow = io::to_f32(*orig);
        ASSERT_TRUE(ow.is_ok());
        for (uint32_t r = 0; r < rows; ++r) {
          const ternary::RowScales s = ternary::ternary_row_scales({ow.value().data() + r * cols, cols});
          const float lo = bf16_to_float(s.w_min), hi = bf16_to_float(s.w_max);
          for (uint32_t k = 0; k < cols; ++k) {
            const float v = w.value()[r * cols + k];
            EXPECT_TRUE(v == 0.0f || v == lo || v == hi) << l << " " << e << " " << p << " " << r << " " << k;
          }
        }
      }
    }
  }
  EXPECT_EQ(next, tensors.size());
  // 4. Ledger = bytes actually stored.
  uint64_t expert_bytes = 0;
  for (size_t i = 1 + dense; i < tensors.size(); ++i) expert_bytes += tensors[i].nbytes;
  EXPECT_EQ(a.summary.expert_bytes, expert_bytes + tensors[0].nbytes);
  EXPECT_EQ(a.summary.expert_weights, static_cast<uint64_t>(c.num_hidden_layers * c.num_experts * 3 * H * I));
  const json manifest = json::parse(file_bytes(out + "/submoe_manifest.json"));
  EXPECT_EQ(manifest["ledger"]["expert_bytes"].get<uint64_t>(), a.summary.expert_bytes);
  EXPECT_EQ(manifest["provenance"]["samples"].get<size_t>(), 16u);
  EXPECT_FALSE(fs::exists(out + "/.submoe-work"));
  EXPECT_TRUE(fs::exists(out + "/tokenizer.json"));
  fs::remove_all(out);
}

// Squared error of W x - Q x summed over the tokens routed to each expert of
// layer 0 (whose inputs do not depend on compression), for gate_proj.
double layer0_gate_error(const std::string& artifact_dir, const CompressOptions& o, std::vector<double>* per_expert) {
  auto model = model::MoeModel::load(o.model_dir);
  auto tok = io::Tokenizer::load(o.model_dir + "/tokenizer.json");
  auto set = make_calibration_set(o.calib_path, tok.value(), false, o.samples, o.seq_len);
  auto art = io::SafetensorsFile::open(artifact_dir + "/model.safetensors");
  auto src = io::SafetensorsModel::open(o.model_dir);
  const auto& c = model.value()->config();
  const size_t H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.moe_intermediate_size);
  const size_t L = set.value().seq_len, E = static_cast<size_t>(c.num_experts);
  model::LayerRunner runner(*model.value(), nullptr);
  std::vector<std::vector<float>> w(E), q(E);
  auto dict = ternary::build_qmoe_dictionary(0.885);
  for (size_t e = 0; e < E; ++e) {
    const std::string base = "model.layers.0.mlp.experts." + std::to_string(e) + ".gate_proj";
    w[e] = io::to_f32(*src.value()->find(base + ".weight")).value();
    auto f = [&](const char* field) {
      const io::TensorView* t = art.value()->find(base + "." + field);
      return std::span<const std::byte>(reinterpret_cast<const std::byte*>(t->data), t->nbytes);
    };
    if (art.value()->find(base + ".codes")) {
      int32_t used = 0;
      std::memcpy(&used, art.value()->find(base + ".row_offsets")->data + 4 * I, 4);
      auto v = ternary::make_packed_view(static_cast<uint32_t>(I), static_cast<uint32_t>(H),
                                         f("codes").subspan(0, 2 * static_cast<size_t>(used)),
                                         f("row_offsets"), f("scales"), dict.value().entries());
      q[e] = ternary::decode_to_float(v.value()).value();
    } else {
      const auto bits = static_cast<uint32_t>(*o.repr.bits);
      auto v = intn::make_packed_int_view(static_cast<uint32_t>(I), static_cast<uint32_t>(H), bits, 0, f("qweight"), f("scales"), f("zeros"));
      q[e] = intn::decode_int_to_float(v.value()).value();
    }
  }
  per_expert->assign(E, 0.0);
  double total = 0;
  std::vector<float> h(L * H), x(L * H);
  model::Routing r;
  for (size_t s = 0; s < set.value().samples; ++s) {
    EXPECT_TRUE(runner.embed({set.value().sample(s), L}, h.data()).is_ok());
    runner.attention(0, h.data(), L, x.data());
    runner.route(0, x.data(), L, &r);
    for (size_t t = 0; t < L; ++t)
      for (size_t j = 0; j < r.k; ++j) {
        const auto e = static_cast<size_t>(r.experts[t * r.k + j]);
        for (size_t row = 0; row < I; ++row) {
          double d = 0;
          for (size_t k = 0; k < H; ++k) d += (double{w[e][row * H + k]} - q[e][row * H + k]) * x[t * H + k];
          (*per_expert)[e] += d * d;
          total += d * d;
        }
      }
  }
  return total;
}

TEST(Compress, GptqBeatsRtnOnCalibrationInputs) {
  for (const char* grid : {"ternary", "int2"}) {
    CompressOptions g = small_options("qwen3_moe", temp_dir(std::string("gptq_") + grid));
    CompressOptions r = g;
    r.out_dir = temp_dir(std::string("rtn_") + grid);
    r.method = QuantMethod::kRtn;
    g.repr = r.repr = std::string(grid) == "ternary" ? runtime::ReprOptions{"ternary_dict"}
                                                     : runtime::ReprOptions{"int", 2.0};
    const CompressSummary sg = compress_or_die(g).summary, sr = compress_or_die(r).summary;
    // The layer reports' relative errors: weight space for both, output space
    // (on the calibration Hessians) only where GPTQ had them.
    for (const CompressSummary* s : {&sg, &sr})
      for (const LayerReport& l : s->layers) {
        if (!l.sparse) continue;
        for (int p = 0; p < 2; ++p) {
          EXPECT_GT(l.weight_rel_error[p], 0.0) << grid << " layer " << l.layer;
          EXPECT_LT(l.weight_rel_error[p], 1.5) << grid << " layer " << l.layer;
          if (s == &sr) {
            EXPECT_EQ(l.output_rel_error[p], -1.0);
          } else {
            EXPECT_GT(l.output_rel_error[p], 0.0) << grid << " layer " << l.layer;
            EXPECT_LT(l.output_rel_error[p], l.weight_rel_error[p] * 4) << grid << " layer " << l.layer;
          }
        }
      }
    std::vector<double> eg, er;
    const double gptq = layer0_gate_error(g.out_dir, g, &eg), rtn = layer0_gate_error(r.out_dir, r, &er);
    size_t better = 0, used = 0;
    for (size_t e = 0; e < eg.size(); ++e) {
      if (er[e] == 0) continue;  // expert without tokens
      ++used;
      better += eg[e] < er[e];
    }
    EXPECT_LT(gptq, 0.8 * rtn) << grid;
    EXPECT_GE(better * 4, used * 3) << grid << ": GPTQ better on " << better << " of " << used << " experts";
    fs::remove_all(g.out_dir);
    fs::remove_all(r.out_dir);
  }
}

TEST(Compress, DeterministicAcrossThreadCounts) {
  CompressOptions a = small_options("qwen2_moe", temp_dir("det1"));
  a.threads = 1;
  CompressOptions b = a;
  b.out_dir = temp_dir("det2");
  b.threads = 2;
  CompressOptions g = a;
  g.out_dir = temp_dir("det3");
  g.expert_group = 3;
  compress_or_die(a);
  compress_or_die(b);
  compress_or_die(g);
  EXPECT_TRUE(artifact_files(a.out_dir) == artifact_files(b.out_dir));
  // Grouping is a schedule, not a result: the same tensors (the provenance
  // records the group size, so the headers differ).
  auto fa = io::SafetensorsFile::open(a.out_dir + "/model.safetensors");
  auto fg = io::SafetensorsFile::open(g.out_dir + "/model.safetensors");
  ASSERT_TRUE(fa.is_ok() && fg.is_ok());
  ASSERT_EQ(fa.value()->tensors().size(), fg.value()->tensors().size());
  for (size_t i = 0; i < fa.value()->tensors().size(); ++i) {
    const io::TensorView& x = fa.value()->tensors()[i];
    const io::TensorView& y = fg.value()->tensors()[i];
    ASSERT_EQ(x.name, y.name);
    ASSERT_EQ(x.nbytes, y.nbytes) << x.name;
    EXPECT_EQ(0, std::memcmp(x.data, y.data, x.nbytes)) << x.name;
  }
  for (const auto& d : {a.out_dir, b.out_dir, g.out_dir}) fs::remove_all(d);
}

// kill -9 at step k (a child process), then --resume: the same bytes as an
// uninterrupted run.
// Kills a run of `ref` at several progress steps (SIGKILL from the step hook)
// and resumes each: every resumed artifact equals the uninterrupted one.
void expect_resume_byte_identical(CompressOptions ref, bool all_points) {
  uint64_t steps = 0;
  ref.step_hook = [&](uint64_t) { ++steps; };
  compress_or_die(ref);
  ref.step_hook = nullptr;
  ASSERT_GT(steps, 6u);
  const auto expected = artifact_files(ref.out_dir);
  std::vector<uint64_t> points = {2, steps / 2};
  if (all_points) points = {0, 2, steps / 2, steps - 2, steps - 1};
  for (uint64_t k : points) {
    CompressOptions o = ref;
    o.out_dir = ref.out_dir + "_kill" + std::to_string(k);
    o.step_hook = [k](uint64_t step) {
      if (step == k) raise(SIGKILL);
    };
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      (void)compress_model(o, nullptr);
      _exit(0);  // not reached when the hook fires
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "step " << k;
    o.step_hook = nullptr;
    o.resume = true;
    auto r = compress_model(o, nullptr);
    ASSERT_TRUE(r.is_ok()) << "step " << k << ": " << r.status().message();
    EXPECT_TRUE(artifact_files(o.out_dir) == expected) << "kill at step " << k;
    fs::remove_all(o.out_dir);
  }
  fs::remove_all(ref.out_dir);
}

TEST(Compress, ResumeAfterKillIsByteIdentical) {
  CompressOptions ref = small_options("mixtral", temp_dir("ref"));
  ref.repr = {"int", 3.0};
  expect_resume_byte_identical(ref, true);
}

// Per-expert rates (--alloc thirds on int's 2/3/4 ladder): the artifact holds
// one record per rate and expert_matrices, loads, and resumes byte-identically
// (the allocation is part of the job identity).
TEST(Compress, PerExpertRatesLoadAndResumeByteIdentical) {
  CompressOptions ref = small_options("qwen3_moe", temp_dir("alloc"));
  ref.repr = {"int", 3.0};
  ref.alloc = RateAlloc::kThirds;
  const CompressSummary s = compress_or_die(ref).summary;
  auto art = runtime::Artifact::open(ref.out_dir);
  ASSERT_TRUE(art.is_ok()) << art.status().to_string();
  std::map<std::string, int> experts_per_codec;
  for (int e = 0; e < 8; ++e) ++experts_per_codec[art.value()->expert_codec(0, e, artifact::Projection::kGate).summary()];
  // 8 experts: 2 at int4, 2 at int2, 4 at int3.
  EXPECT_EQ(experts_per_codec.size(), 3u);
  EXPECT_EQ(experts_per_codec["int (4 bits, per row)"], 2);
  EXPECT_EQ(experts_per_codec["int (2 bits, per row)"], 2);
  // Every layer's mean rate is exactly the requested 3 bits (the manifest's record).
  auto manifest = io::read_file_to_string(ref.out_dir + "/submoe_manifest.json");
  ASSERT_TRUE(manifest.is_ok());
  const nlohmann::json alloc = nlohmann::json::parse(*manifest)["provenance"]["allocation"];
  EXPECT_EQ(alloc["policy"], "thirds");
  EXPECT_EQ(alloc["popularity"]["source"], "calibration");
  ASSERT_EQ(alloc["layers"].size(), 2u);
  for (const auto& l : alloc["layers"]) EXPECT_EQ(l["mean_bits"].get<double>(), 3.0);
  EXPECT_GT(s.expert_bytes, 0u);
  fs::remove_all(ref.out_dir);
  ref.out_dir = temp_dir("alloc_resume");
  expect_resume_byte_identical(ref, false);
}

TEST(Compress, RefusesToClobberOrMixJobs) {
  CompressOptions o = small_options("qwen3_moe", temp_dir("clobber"));
  compress_or_die(o);
  auto again = compress_model(o, nullptr);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("--overwrite"), std::string::npos);
  o.overwrite = true;
  EXPECT_TRUE(compress_model(o, nullptr).is_ok());
  // An interrupted run of other options cannot be resumed with these.
  fs::create_directories(o.out_dir + "/.submoe-work");
  ASSERT_TRUE(io::write_file_atomic(o.out_dir + "/.submoe-work/job.json", "{\"other\": 1}").is_ok());
  auto no_resume = compress_model(o, nullptr);
  ASSERT_FALSE(no_resume.is_ok());
  EXPECT_NE(no_resume.status().message().find("--resume"), std::string::npos);
  o.resume = true;
  auto mixed = compress_model(o, nullptr);
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("job.json"), std::string::npos);
  fs::remove_all(o.out_dir);
}

TEST(Compress, NonFiniteWeightNamesTensorAndLayer) {
  const std::string model = temp_dir("nan_model");
  fs::copy(kFixtures + "qwen3_moe", model, fs::copy_options::recursive);
  const std::string victim = "model.layers.1.mlp.experts.3.up_proj.weight";
  uint64_t offset = 0;
  {
    auto f = io::SafetensorsFile::open(model + "/model.safetensors");
    ASSERT_TRUE(f.is_ok());
    const io::TensorView* t = f.value()->find(victim);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->dtype, io::DType::kF32);
    offset = t->file_offset + 4 * 5;
  }
  {
    std::fstream f(model + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    const float nan = std::nanf("");
    f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  CompressOptions o = small_options("qwen3_moe", temp_dir("nan_out"));
  o.model_dir = model;
  auto r = compress_model(o, nullptr);
  ASSERT_FALSE(r.is_ok());
  // Caught when the layer's weights are read: the message names the tensor
  // (layer 1, expert 3, up_proj) and the element.
  EXPECT_NE(r.status().message().find(victim), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("NaN or infinite value at element 5"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().code(), ErrorCode::kNumerical);
  fs::remove_all(model);
  fs::remove_all(o.out_dir);
}

TEST(Compress, MaskAndTokenCapAreReported) {
  CompressOptions o = small_options("olmoe", temp_dir("mask"));
  auto tok = io::Tokenizer::load(o.model_dir + "/tokenizer.json");
  auto set = make_calibration_set(o.calib_path, tok.value(), false, o.samples, o.seq_len);
  ASSERT_TRUE(set.is_ok());
  std::map<int32_t, size_t> freq;
  for (int32_t t : set.value().tokens) ++freq[t];
  const auto top = std::max_element(freq.begin(), freq.end(), [](auto& a, auto& b) { return a.second < b.second; });
  o.mask_token_ids = {top->first};
  o.default_mask = false;
  o.token_cap_factor = 1.0;  // every expert above the mean is capped
  const CompressedFixture a = compress_or_die(o);
  EXPECT_EQ(a.summary.masked_tokens, top->second);
  size_t capped = 0;
  for (const auto& l : a.summary.layers) capped += l.capped_experts;
  EXPECT_GT(capped, 0u);
  const json p = json::parse(file_bytes(o.out_dir + "/submoe_manifest.json"))["provenance"];
  EXPECT_EQ(p["masked_positions"].get<size_t>(), top->second);
  EXPECT_EQ(p["masked_token_ids"][0].get<int32_t>(), top->first);
  fs::remove_all(o.out_dir);
}

TEST(Compress, BadArguments) {
  CompressOptions o = small_options("qwen3_moe", temp_dir("bad"));
  o.repr = {"int", 4.0, 32u};  // fixture intermediate size 16: 32 does not divide it
  auto st = compress_model(o, nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.status().message().find("group size 32 does not divide the 16 input columns"), std::string::npos)
      << st.status().message();
  // Unknown representations are an error, never a fallback.
  o = small_options("qwen3_moe", temp_dir("bad"));
  o.repr = {"nf3"};
  st = compress_model(o, nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.status().message().find("unknown representation 'nf3' (registered: ternary_dict, int"),
            std::string::npos)
      << st.status().message();
  o.repr = {"ternary", 2.0};
  EXPECT_NE(compress_model(o, nullptr).status().message().find("--bits does not apply to ternary_dict"),
            std::string::npos);
  o.repr = {"int", 5.0};
  EXPECT_NE(compress_model(o, nullptr).status().message().find("int2, int3 or int4"), std::string::npos);
  o = small_options("qwen3_moe", temp_dir("bad"));
  o.calib_path = kFixtures + "calib/does-not-exist.txt";
  EXPECT_FALSE(compress_model(o, nullptr).is_ok());
  o = small_options("qwen3_moe", temp_dir("bad"));
  o.expert_group = 0;
  EXPECT_FALSE(compress_model(o, nullptr).is_ok());
  fs::remove_all(o.out_dir);
}

}  // namespace
}  // namespace submoe::calib
