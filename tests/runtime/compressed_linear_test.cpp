// The compressed LinearOps on their own: each ISA's kernels behind the op
// against a float64 product with the reference-decoded weights, token counts
// across the 64-token kernel chunks, thread pools, concurrent forwards on one
// op (per-thread workspaces), and the factories' argument checks.
#include "submoe/runtime/compressed_linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "submoe/codec/ternary_grid.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/quantization_config.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::kScalar};
  if (cpu_features().avx2) v.push_back(Isa::kAvx2);
  if (cpu_features().avx512) v.push_back(Isa::kAvx512);
  return v;
}

std::vector<float> random_weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> w(n);
  for (float& v : w) v = nd(rng);
  return w;
}

intn::PackedIntMatrix int_matrix(uint32_t rows, uint32_t cols, uint32_t bits, uint32_t gs, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t groups = intn::int_groups_per_row(cols, gs);
  std::vector<uint8_t> codes(static_cast<size_t>(rows) * cols);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << bits));
  std::vector<float> scales(static_cast<size_t>(rows) * groups), zeros(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = f16_bits_to_float(float_to_f16_bits(0.01f * static_cast<float>(rng() % 100 + 1)));
    zeros[i] = static_cast<float>(rng() % (1u << bits));
  }
  return std::move(intn::pack_int_codes(codes, rows, cols, bits, gs, scales, zeros)).value();
}

// How the op under test rounds its inputs: to bf16 (ExecutionMode::kFusedBf16)
// or to int8 per token (kFusedInt8, the definition's s q from
// kernels::quantize_activations_int8, which the kernel tests hold to it); the
// float64 reference takes the rounded inputs.
enum class Inputs { kExact, kBf16, kInt8 };

void round_inputs(std::vector<float>& x, size_t n, size_t cols, Inputs inputs) {
  if (inputs == Inputs::kBf16) {
    for (float& v : x) v = bf16_to_float(float_to_bf16(v));
  } else if (inputs == Inputs::kInt8) {
    std::vector<int8_t> q(cols);
    const std::vector<float> orig = x;
    for (size_t t = 0; t < n; ++t) {
      const float s = kernels::quantize_activations_int8(kernels::ActivationsView::f32(orig.data(), static_cast<uint32_t>(n), cols),
                                                         static_cast<uint32_t>(t), static_cast<uint32_t>(cols), q.data());
      for (size_t c = 0; c < cols; ++c) x[t * cols + c] = s * static_cast<float>(q[c]);
    }
  }
}

void check_op(const model::LinearOp& op, const std::vector<float>& dense, size_t n, ThreadPool* pool, uint32_t seed,
              Inputs inputs = Inputs::kExact) {
  const size_t rows = op.out_features(), cols = op.in_features();
  std::vector<float> x = random_weights(n * cols, seed);
  std::vector<float> y(n * rows, NAN);
  op.forward(x.data(), n, y.data(), pool);
  round_inputs(x, n, cols, inputs);
  for (size_t t = 0; t < n; ++t)
    for (size_t r = 0; r < rows; ++r) {
      double want = 0, mag = 0;
      for (size_t c = 0; c < cols; ++c) {
        want += double(dense[r * cols + c]) * x[t * cols + c];
        mag += std::fabs(double(dense[r * cols + c]) * x[t * cols + c]);
      }
      const double bound = 1.01 * double(cols + 2) * std::ldexp(1.0, -24) * mag;
      ASSERT_LE(std::fabs(y[t * rows + r] - want), bound) << op.describe() << " n=" << n << " t=" << t << " r=" << r;
    }
}

TEST(CompressedLinear, IntOpEveryIsaTokenCountAndPool) {
  ThreadPool pool(2);
  const intn::PackedIntMatrix m = int_matrix(256, 520, 3, 64, 1);
  const std::vector<float> dense = *intn::decode_int_to_float(m.view());
  for (Isa isa : isas()) {
    auto op = make_int_linear(std::move(intn::PackedIntMatrix::from_parts(256, 520, 3, 64, m.qweight(), m.scales(), m.zeros())).value(),
                              kernels::int_gemv_kernels(isa));
    ASSERT_TRUE(op.is_ok());
    EXPECT_EQ((*op)->weight_bytes(), m.storage_bytes());
    EXPECT_NE((*op)->describe().find("int3-g64 [256, 520]"), std::string::npos) << (*op)->describe();
    for (size_t n : {1, 2, 5, 64, 65, 130})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) check_op(**op, dense, n, p, static_cast<uint32_t>(n));
  }
}

TEST(CompressedLinear, TernaryOpEveryIsaTokenCountAndPool) {
  auto dict = ternary::build_dictionary(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0);
  ASSERT_TRUE(dict.is_ok());
  auto cb = TernaryCodebook::create(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0, dict->entry_span());
  ASSERT_TRUE(cb.is_ok()) << cb.status().to_string();
  const uint32_t rows = 200, cols = 333;
  auto grid = ternary::round_to_ternary_grid(random_weights(size_t{rows} * cols, 3), rows, cols);
  ASSERT_TRUE(grid.is_ok());
  ThreadPool pool(3);
  for (Isa isa : isas()) {
    auto packed = ternary::encode_ternary(grid->symbols, rows, cols, grid->scales, (*cb)->dictionary());
    ASSERT_TRUE(packed.is_ok());
    const std::vector<float> dense = *ternary::decode_to_float(packed->view());
    auto op = make_ternary_dict_linear(std::move(packed).value(), *cb, kernels::ternary_gemv_kernels(isa));
    ASSERT_TRUE(op.is_ok()) << op.status().to_string();
    for (size_t n : {1, 3, 64, 100})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) check_op(**op, dense, n, p, static_cast<uint32_t>(n + 7));
  }
  // A matrix encoded on another dictionary object is refused.
  auto other = ternary::encode_ternary(grid->symbols, rows, cols, grid->scales, *dict);
  ASSERT_TRUE(other.is_ok());
  EXPECT_FALSE(make_ternary_dict_linear(std::move(other).value(), *cb).is_ok());
  EXPECT_FALSE(make_ternary_dict_linear(ternary::PackedTernaryMatrix(), nullptr).is_ok());
}

// The ternary and int ops of one execution mode: the product of the decoded
// weights with the inputs as the mode rounds them, every ISA, token counts
// across the chunking, with and without a pool; and measurably not the product
// with the unrounded inputs. Seeds: the weights' (and seed + 1 for the int
// matrix), the tokens' (seed_x + n, seed_x + 100 + n) and the last check's.
struct RoundingCase {
  kernels::ActivationType type;
  kernels::ActivationQuant quant;
  Inputs inputs;
  const char* describe;
  uint32_t seed, seed_x, seed_last;
};

void expect_ops_round_their_inputs(const RoundingCase& rc) {
  ThreadPool pool(2);
  auto dict = ternary::build_dictionary(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0);
  ASSERT_TRUE(dict.is_ok());
  auto cb = TernaryCodebook::create(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0, dict->entry_span());
  ASSERT_TRUE(cb.is_ok());
  const uint32_t rows = 150, cols = 610;
  auto grid = ternary::round_to_ternary_grid(random_weights(size_t{rows} * cols, rc.seed), rows, cols);
  ASSERT_TRUE(grid.is_ok());
  const intn::PackedIntMatrix im = int_matrix(rows, cols, 4, 128, rc.seed + 1);
  for (Isa isa : isas()) {
    auto packed = ternary::encode_ternary(grid->symbols, rows, cols, grid->scales, (*cb)->dictionary());
    ASSERT_TRUE(packed.is_ok());
    const std::vector<float> tdense = *ternary::decode_to_float(packed->view());
    auto top = make_ternary_dict_linear(std::move(packed).value(), *cb, kernels::ternary_gemv_kernels(isa), rc.type,
                                        rc.quant);
    ASSERT_TRUE(top.is_ok());
    EXPECT_NE((*top)->describe().find(rc.describe), std::string::npos) << (*top)->describe();
    auto iop = make_int_linear(std::move(intn::PackedIntMatrix::from_parts(rows, cols, 4, 128, im.qweight(), im.scales(), im.zeros())).value(),
                               kernels::int_gemv_kernels(isa), rc.type, rc.quant);
    ASSERT_TRUE(iop.is_ok());
    EXPECT_NE((*iop)->describe().find(rc.describe), std::string::npos) << (*iop)->describe();
    const std::vector<float> idense = *intn::decode_int_to_float(im.view());
    for (size_t n : {1, 2, 64, 70})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        check_op(**top, tdense, n, p, static_cast<uint32_t>(n + rc.seed_x), rc.inputs);
        check_op(**iop, idense, n, p, static_cast<uint32_t>(n + rc.seed_x + 100), rc.inputs);
      }
    // The rounding is real: against the unrounded inputs the batch-1 output is
    // off by far more than the summation bound.
    const std::vector<float> x = random_weights(cols, rc.seed_last);
    std::vector<float> y(rows);
    (*top)->forward(x.data(), 1, y.data(), nullptr);
    double worst = 0;
    for (size_t r = 0; r < rows; ++r) {
      double want = 0;
      for (size_t c = 0; c < cols; ++c) want += double(tdense[r * cols + c]) * x[c];
      worst = std::max(worst, std::fabs(y[r] - want));
    }
    EXPECT_GT(worst, 1e-4) << isa_name(isa);
  }
}

TEST(CompressedLinear, Bf16ActivationOpsRoundTheirInputs) {
  // ExecutionMode::kFusedBf16's ops round their inputs to bf16.
  EXPECT_EQ(execution_activations(ExecutionMode::kFusedBf16), kernels::ActivationType::kBF16);
  EXPECT_EQ(execution_activations(ExecutionMode::kFused), kernels::ActivationType::kF32);
  expect_ops_round_their_inputs({kernels::ActivationType::kBF16, kernels::ActivationQuant::kExact, Inputs::kBf16,
                                 "bf16 activations", 11, 100, 5});
}

TEST(CompressedLinear, Int8ActivationOpsQuantizeTheirInputs) {
  // ExecutionMode::kFusedInt8's ops multiply the inputs' int8 quantization s q.
  EXPECT_EQ(execution_quant(ExecutionMode::kFusedInt8), kernels::ActivationQuant::kInt8);
  EXPECT_EQ(execution_activations(ExecutionMode::kFusedInt8), kernels::ActivationType::kF32);
  EXPECT_EQ(execution_quant(ExecutionMode::kFused), kernels::ActivationQuant::kExact);
  EXPECT_EQ(execution_quant(ExecutionMode::kFusedBf16), kernels::ActivationQuant::kExact);
  expect_ops_round_their_inputs({kernels::ActivationType::kF32, kernels::ActivationQuant::kInt8, Inputs::kInt8,
                                 "int8 activations", 21, 300, 6});
  auto dict = ternary::build_dictionary(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0);
  ASSERT_TRUE(dict.is_ok());
  auto cb = TernaryCodebook::create(ternary::DictKind::kQmoe, ternary::kQmoeDefaultP0, dict->entry_span());
  ASSERT_TRUE(cb.is_ok());
  const uint32_t rows = 150, cols = 610;
  auto grid = ternary::round_to_ternary_grid(random_weights(size_t{rows} * cols, 21), rows, cols);
  ASSERT_TRUE(grid.is_ok());
  // bf16 rounding and int8 quantization together are refused.
  auto packed = ternary::encode_ternary(grid->symbols, rows, cols, grid->scales, (*cb)->dictionary());
  ASSERT_TRUE(packed.is_ok());
  EXPECT_FALSE(make_ternary_dict_linear(std::move(packed).value(), *cb, kernels::best_ternary_gemv_kernels(),
                                        kernels::ActivationType::kBF16, kernels::ActivationQuant::kInt8)
                   .is_ok());
}

TEST(CompressedLinear, ConcurrentForwardsOnOneOpAgreeBitForBit) {
  const intn::PackedIntMatrix m = int_matrix(96, 300, 4, 32, 9);
  auto op = make_int_linear(std::move(intn::PackedIntMatrix::from_parts(96, 300, 4, 32, m.qweight(), m.scales(), m.zeros())).value());
  ASSERT_TRUE(op.is_ok());
  const size_t n = 9;
  const std::vector<float> x = random_weights(n * 300, 4);
  std::vector<float> want(n * 96);
  (*op)->forward(x.data(), n, want.data(), nullptr);
  std::vector<std::vector<float>> got(4, std::vector<float>(n * 96));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 50; ++rep) (*op)->forward(x.data(), 1 + (rep % 2 ? n - 1 : 0), got[i].data(), nullptr);
    });
  for (auto& t : threads) t.join();
  for (const auto& g : got)
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], want[i]);
}

TEST(CompressedLinear, FactoriesRejectBadArguments) {
  EXPECT_FALSE(make_int_linear(intn::PackedIntMatrix()).is_ok());
  EXPECT_FALSE(make_reference_decoded_linear(std::vector<float>(10), 3, 4, "x").is_ok());
  EXPECT_FALSE(make_reference_decoded_linear({}, 0, 4, "x").is_ok());
  auto ok = make_reference_decoded_linear(std::vector<float>(12, 1.0f), 3, 4, "int4");
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ((*ok)->describe(), "int4 reference-decoded to dense f32 [3, 4]");
  std::vector<float> x(4, 2.0f), y(3);
  (*ok)->forward(x.data(), 1, y.data(), nullptr);
  EXPECT_EQ(y, std::vector<float>(3, 8.0f));
}

TEST(QuantizationConfigParse, TernaryAndIntSummaries) {
  auto t = parse_quantization_config(R"({"model_type": "x", "quantization_config": {"quant_method": "submoe",
      "format_version": 1, "experts": {"representation": "ternary_dict", "code": "tunstall", "p0": 0.9,
      "dictionary_tensor": "d"}, "method": "gptq", "grid": "ternary", "damp": 0.01, "expert_group": 8,
      "act_order": true, "true_sequential": false, "modules_not_converted": ["lm_head"]}})",
                                     "config.json");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_EQ(t->representations.size(), 1u);
  EXPECT_EQ(t->representations[0]["representation"], "ternary_dict");
  EXPECT_EQ(t->representations[0]["code"], "tunstall");
  EXPECT_EQ(t->record_paths[0], "quantization_config.experts");
  EXPECT_TRUE(t->expert_matrices.empty());
  EXPECT_EQ(t->damp, 0.01);
  EXPECT_EQ(t->expert_group, 8);
  EXPECT_EQ(t->act_order, true);
  EXPECT_EQ(t->true_sequential, false);
  EXPECT_EQ(t->modules_not_converted, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(t->method, "gptq");
  EXPECT_EQ(t->grid, "ternary");
  auto i = parse_quantization_config(R"({"quantization_config": {"quant_method": "submoe", "format_version": 1,
      "experts": {"representation": "int", "bits": 4, "group_size": 128}}})",
                                     "c.json");
  ASSERT_TRUE(i.is_ok()) << i.status().to_string();
  auto codec = codec_from_record(i->representations[0], i->record_paths[0], [](std::string_view) { return nullptr; });
  ASSERT_TRUE(codec.is_ok()) << codec.status().to_string();
  EXPECT_EQ((*codec)->summary(), "int (4 bits, group 128)");
  EXPECT_EQ((*codec)->grid_name(), "int4-g128");
  EXPECT_FALSE(i->damp.has_value());
  auto dup = parse_quantization_config(R"({"quantization_config": {"quant_method": "submoe", "quant_method": "submoe"}})",
                                       "dup.json");
  EXPECT_FALSE(dup.is_ok());
  EXPECT_FALSE(parse_quantization_config("{not json", "bad.json").is_ok());
}

}  // namespace
}  // namespace submoe::runtime
