// Side-by-side batch-1 matrix-vector timing: llama.cpp's CPU kernels (BF16,
// F16, the ternary TQ1_0 / TQ2_0, MXFP4 (against submoe's mxfp4), and the types nearest submoe's rvq and int
// rates: IQ2_XXS 2.06 bits (against submoe's e8p, the lattice-derived pair,
// and aqlm 2x8 / 1x16 and vptq 8+8, the learned-codebook codes),
// Q2_K 2.63, Q3_K 3.44 (against submoe's 3-bit squeezellm and spqr), IQ4_NL
// 4.5 (against submoe's nf4); through
// ggml's public API, built out of tree by scripts/peer_llamacpp.sh) and submoe's
// dense and compressed kernels, in one process, interleaved call by call, each on
// a working set of distinct matrices larger than the last-level cache. The shared
// VM's speed drifts (a busy SMT sibling, other tenants' DRAM traffic), so only
// numbers taken side by side compare.
//
// Usage: llamacpp_gemv ROWS COLS THREADS [ITERS]
// Prints one JSON object per kernel: {"kernel", "bits_per_weight", "matrices",
// "median_us", "min_us"}.
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/hadamard.h"
#include "submoe/kernels/dense_gemv.h"
#include "submoe/kernels/e8p_gemv.h"
#include "submoe/kernels/aqlm_gemv.h"
#include "submoe/kernels/vptq_gemv.h"
#include "submoe/kernels/gemv_bench.h"
#include "submoe/kernels/mxfp4_gemv.h"
#include "submoe/kernels/nf4_gemv.h"
#include "submoe/kernels/rvq_gemv.h"
#include "submoe/kernels/spqr_gemv.h"
#include "submoe/kernels/squeezellm_gemv.h"
#include "submoe/kernels/ternary_gemv.h"
#include "submoe/kernels/ternary_kernel_table.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Timed {
  std::string name;
  double bits_per_weight = 0;
  uint32_t count = 0;
  std::function<void(uint32_t)> call;
  std::vector<double> us;
};

// A ggml working set of `count` matrices of one type, and one mul_mat graph per
// matrix (weights [cols, rows] times an f32 vector [cols, 1]).
struct GgmlSet {
  ggml_context* ctx = nullptr;
  std::vector<ggml_cgraph*> graphs;
  ggml_cplan plan{};
  std::vector<uint8_t> work;
  ~GgmlSet() {
    if (ctx != nullptr) ggml_free(ctx);
  }
};

uint32_t matrices_for(size_t bytes, size_t llc) {
  return std::max<uint32_t>(64, static_cast<uint32_t>(std::ceil(2.0 * static_cast<double>(llc) /
                                                                static_cast<double>(bytes))));
}

// For the widened layouts (aqlm, vptq: u16 indices, several MB a matrix in
// memory): matrices_for's count, capped at 256 MiB of stored bytes (8x this
// host's 32 MiB L3), else every kernel's set together outgrows the 24 GiB.
uint32_t matrices_past_llc(size_t bytes, size_t llc) {
  const auto cap = static_cast<uint32_t>(std::max<size_t>(4, (size_t{256} << 20) / bytes));
  return std::min(matrices_for(bytes, llc), cap);
}

std::unique_ptr<GgmlSet> make_ggml_set(ggml_type type, uint32_t rows, uint32_t cols, int threads,
                                       ggml_threadpool* pool, const std::vector<float>& x, size_t llc,
                                       uint32_t* count_out, double* bpw_out) {
  const size_t row_bytes = ggml_row_size(type, cols);
  const size_t bytes = row_bytes * rows;
  const uint32_t count = matrices_for(bytes, llc);
  auto set = std::make_unique<GgmlSet>();
  ggml_init_params p{};
  p.mem_size = count * (bytes + 4 * ggml_tensor_overhead() + ggml_graph_overhead_custom(8, false) + rows * 4 + 256) +
               (1u << 24);
  p.mem_buffer = nullptr;
  p.no_alloc = false;
  set->ctx = ggml_init(p);
  if (set->ctx == nullptr) return nullptr;
  ggml_tensor* xt = ggml_new_tensor_2d(set->ctx, GGML_TYPE_F32, cols, 1);
  std::memcpy(xt->data, x.data(), sizeof(float) * cols);

  // One matrix of data, quantized once; the others are its rows in other orders.
  std::mt19937_64 rng(7);
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  const bool ternary = type == GGML_TYPE_TQ1_0 || type == GGML_TYPE_TQ2_0;
  // The i-quants need importance weights; uniform ones give the plain
  // weighted fit (timing does not depend on them).
  const std::vector<float> importance(cols, 1.0f);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  for (float& v : w) v = ternary ? (ud(rng) < 0.885 ? 0.0f : (ud(rng) < 0.5 ? -0.03f : 0.03f)) : nd(rng);
  std::vector<uint8_t> q0(bytes);
  ggml_quantize_chunk(type, w.data(), q0.data(), 0, rows, cols, importance.data());
  std::vector<uint32_t> order(rows);
  for (uint32_t r = 0; r < rows; ++r) order[r] = r;
  for (uint32_t i = 0; i < count; ++i) {
    ggml_tensor* wt = ggml_new_tensor_2d(set->ctx, type, cols, rows);
    if (i > 0) std::shuffle(order.begin(), order.end(), rng);
    auto* dst = static_cast<uint8_t*>(wt->data);
    for (uint32_t r = 0; r < rows; ++r) std::memcpy(dst + r * row_bytes, q0.data() + order[r] * row_bytes, row_bytes);
    ggml_cgraph* g = ggml_new_graph_custom(set->ctx, 8, false);
    ggml_build_forward_expand(g, ggml_mul_mat(set->ctx, wt, xt));
    set->graphs.push_back(g);
  }
  set->plan = ggml_graph_plan(set->graphs[0], threads, pool);
  set->work.resize(set->plan.work_size + 64);
  set->plan.work_data = set->work.data();
  *count_out = count;
  *bpw_out = 8.0 * static_cast<double>(bytes) / (static_cast<double>(rows) * cols);
  return set;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace submoe;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROWS COLS THREADS [ITERS]\n", argv[0]);
    return 2;
  }
  const uint32_t rows = static_cast<uint32_t>(std::atoi(argv[1]));
  const uint32_t cols = static_cast<uint32_t>(std::atoi(argv[2]));
  const int threads = std::atoi(argv[3]);
  const uint32_t iters = argc > 4 ? static_cast<uint32_t>(std::atoi(argv[4])) : 100;
  if (rows == 0 || cols == 0 || threads < 1 || iters == 0) {
    std::fprintf(stderr, "rows, cols, threads and iters must be positive\n");
    return 2;
  }
  const size_t llc = kernels::last_level_cache_bytes();

  std::vector<float> x(cols);
  std::mt19937_64 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& v : x) v = nd(rng);
  std::vector<bf16_t> xb(cols);
  for (uint32_t c = 0; c < cols; ++c) xb[c] = float_to_bf16(x[c]);

  // poll 0: ggml's workers sleep between graphs instead of spinning through the
  // submoe calls of the same round (two spinning pools on two cores would each
  // slow the other down). submoe's pool spins up to 50 us after each of its calls.
  ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
  tpp.poll = 0;
  ggml_threadpool* gpool = ggml_threadpool_new(&tpp);
  std::vector<Timed> timed;
  std::vector<std::unique_ptr<GgmlSet>> sets;
  for (ggml_type t : {GGML_TYPE_BF16, GGML_TYPE_F16, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_IQ2_XXS,
                      GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4}) {
    if (cols % ggml_blck_size(t) != 0) {  // TQ1_0 / TQ2_0 blocks are 256 weights of a row
      std::printf("{\"kernel\": \"llama.cpp %s\", \"rows\": %u, \"cols\": %u, \"threads\": %d, "
                  "\"skipped\": \"cols not a multiple of its block size %lld\"}\n",
                  ggml_type_name(t), rows, cols, threads, static_cast<long long>(ggml_blck_size(t)));
      continue;
    }
    uint32_t count = 0;
    double bpw = 0;
    std::unique_ptr<GgmlSet> s = make_ggml_set(t, rows, cols, threads, gpool, x, llc, &count, &bpw);
    if (s == nullptr) {
      std::fprintf(stderr, "ggml_init failed for %s\n", ggml_type_name(t));
      return 1;
    }
    GgmlSet* sp = s.get();
    timed.push_back({std::string("llama.cpp ") + ggml_type_name(t), bpw, count,
                     [sp](uint32_t i) { ggml_graph_compute(sp->graphs[i], &sp->plan); }, {}});
    sets.push_back(std::move(s));
  }

  // submoe: dense bf16 and the compressed kernel (qmoe code, p0 0.885) with f32
  // and bf16 activations, and with the f32 activations quantized to int8 in the
  // call (as llama.cpp's TQ kernels quantize theirs to q8_K).
  ThreadPool pool(threads);
  const kernels::DenseWorkingSet dense = kernels::make_dense_working_set(
      kernels::DenseType::kBF16, rows, cols, matrices_for(static_cast<size_t>(rows) * cols * 2, llc), 1);
  std::vector<float> y(rows);
  const kernels::DenseGemvKernels& dk = kernels::dense_gemv_kernels(best_isa());
  timed.push_back({"submoe dense bf16", 16.0, static_cast<uint32_t>(dense.storage.size()), [&](uint32_t i) {
                     (void)kernels::gemm_dense(dk, dense.view(i), x.data(), cols, 1, kernels::OutputView{y.data(), rows},
                                               &pool);
                   },
                   {}});
  Result<ternary::TernaryDictionary> dict = ternary::build_qmoe_dictionary(0.885);
  if (!dict.is_ok()) return 1;
  Result<kernels::TernaryKernelTable> table = kernels::build_ternary_kernel_table(dict->entries());
  Result<kernels::TernaryWorkingSet> probe = kernels::make_ternary_working_set(*dict, rows, cols, 0.885, 1, 1, 1, &pool);
  if (!table.is_ok() || !probe.is_ok()) return 1;
  const uint32_t ccount = matrices_for(probe->bytes_per_matrix(), llc);
  Result<kernels::TernaryWorkingSet> ws = kernels::make_ternary_working_set(*dict, rows, cols, 0.885, ccount, 2, 1, &pool);
  if (!ws.is_ok()) return 1;
  const double cbpw = 8.0 * static_cast<double>(ws->bytes_per_matrix()) / (static_cast<double>(rows) * cols);
  const kernels::TernaryGemvKernels& tk = kernels::best_ternary_gemv_kernels();
  std::vector<float> workspace(kernels::ternary_gemm_workspace_floats(cols, 1));
  for (kernels::ActivationType at : {kernels::ActivationType::kF32, kernels::ActivationType::kBF16}) {
    const kernels::ActivationsView xv = at == kernels::ActivationType::kF32 ? kernels::ActivationsView::f32(x.data(), 1, cols)
                                                                           : kernels::ActivationsView::bf16(xb.data(), 1, cols);
    timed.push_back({std::string("submoe ternary qmoe, ") + kernels::activation_type_name(at) + " activations", cbpw,
                     ccount, [&, xv](uint32_t i) {
                       (void)kernels::gemm_ternary_dict(tk, *table, ws->view(i), xv, kernels::OutputView{y.data(), rows},
                                                        workspace, &pool);
                     },
                     {}});
  }
  const kernels::ActivationsView xf = kernels::ActivationsView::f32(x.data(), 1, cols);
  timed.push_back({"submoe ternary qmoe, int8 activations", cbpw, ccount, [&, xf](uint32_t i) {
                     (void)kernels::gemm_ternary_dict(tk, *table, ws->view(i), xf, kernels::OutputView{y.data(), rows},
                                                      workspace, &pool, kernels::ActivationQuant::kInt8);
                   },
                   {}});

  // submoe rvq (kernels/rvq_gemv.h) at 1.5, 2 and 3 bits: codes + f16 row
  // scales (the shared codebooks are not counted, as ggml's tables are not).
  std::vector<std::unique_ptr<kernels::RvqWorkingSet>> rvq_sets;
  const kernels::RvqGemvKernels& rk = kernels::best_rvq_gemv_kernels();
  if (cols % 16 == 0) {
    for (uint32_t stages : {3u, 4u, 6u}) {
      const uint32_t count = matrices_for(rvq::rvq_matrix_bytes(rows, cols, stages), llc);
      Result<kernels::RvqWorkingSet> rs = kernels::make_rvq_working_set(rows, cols, stages, count, 3);
      if (!rs.is_ok()) return 1;
      rvq_sets.push_back(std::make_unique<kernels::RvqWorkingSet>(std::move(rs).value()));
      const kernels::RvqWorkingSet* set = rvq_sets.back().get();
      auto wsp = std::make_shared<std::vector<float>>(kernels::rvq_gemm_workspace_floats(rk, rows, cols, stages, 1));
      char name[64];
      std::snprintf(name, sizeof name, "submoe rvq %.1f bits, f32 activations", stages * 0.5);
      timed.push_back({name, 8.0 * static_cast<double>(set->bytes_per_matrix()) / (static_cast<double>(rows) * cols),
                       count, [&, set, wsp, xf](uint32_t i) {
                         (void)kernels::gemm_rvq(rk, set->panel_view(i), xf, kernels::OutputView{y.data(), rows}, *wsp,
                                                 &pool);
                       },
                       {}});
    }
  }

  // submoe mxfp4 (kernels/mxfp4_gemv.h): random codes and scales near 2^-6,
  // f32 activations and int8 ones (llama.cpp multiplies MXFP4 by q8_0).
  std::vector<mxfp4::Mxfp4Matrix> mx;
  const kernels::Mxfp4GemvKernels& mk = kernels::best_mxfp4_gemv_kernels();
  if (cols % 32 == 0) {
    const size_t mx_bytes = size_t{rows} * cols / 2 + size_t{rows} * cols / 32;
    const uint32_t count = matrices_for(mx_bytes, llc);
    std::mt19937 mrng(5);
    std::uniform_int_distribution<int> byte(0, 255), scale(118, 124);
    for (uint32_t i = 0; i < count; ++i) {
      std::vector<uint8_t> b(size_t{rows} * cols / 2), sc(size_t{rows} * cols / 32);
      for (auto& v : b) v = static_cast<uint8_t>(byte(mrng));
      for (auto& v : sc) v = static_cast<uint8_t>(scale(mrng));
      Result<mxfp4::Mxfp4Matrix> m = mxfp4::from_fields(rows, cols, b, sc);
      if (!m.is_ok()) return 1;
      mx.push_back(std::move(m).value());
    }
    auto q = std::make_shared<std::vector<int8_t>>(cols);
    auto qs = std::make_shared<float>(0.0f);
    const double bpw = 8.0 * static_cast<double>(mx_bytes) / (static_cast<double>(rows) * cols);
    timed.push_back({"submoe mxfp4, f32 activations", bpw, count, [&](uint32_t i) {
                       const kernels::Mxfp4View w{mx[i].blocks.data(), mx[i].scales.data(), rows, cols};
                       (void)kernels::gemm_mxfp4(mk, {w, x.data(), cols, 1, y.data(), rows}, &pool);
                     },
                     {}});
    timed.push_back({"submoe mxfp4, int8 activations", bpw, count, [&, q, qs, xf](uint32_t i) {
                       // quantized in the call, as the op does it
                       *qs = kernels::quantize_activations_int8_fast(xf, 0, cols, q->data());
                       const kernels::Mxfp4View w{mx[i].blocks.data(), mx[i].scales.data(), rows, cols};
                       (void)kernels::gemm_mxfp4_i8(mk, {w, q->data(), cols, qs.get(), 1, y.data(), rows}, &pool);
                     },
                     {}});
  }

  // submoe nf4 (kernels/nf4_gemv.h), QLoRA's layout: random codes, absmax
  // blocks of 64 double-quantized (4.127 bits), f32 activations; against
  // llama.cpp's IQ4_NL (its non-uniform 4-bit type, 4.5 bits).
  std::vector<nf4::Nf4Matrix> nf;
  const kernels::Nf4GemvKernels& nk = kernels::best_nf4_gemv_kernels();
  if (cols % 64 == 0) {
    std::mt19937 nrng(6);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> amax(0.01f, 0.05f);
    nf4::Nf4Matrix proto;
    proto.rows = rows;
    proto.cols = cols;
    proto.block = 64;
    proto.scales = nf4::Nf4Scales::kDq8;
    const uint32_t count = matrices_for(size_t{rows} * cols / 2 + proto.blocks() * 1, llc);
    for (uint32_t i = 0; i < count; ++i) {
      nf4::Nf4Matrix m = proto;
      m.codes.resize(size_t{rows} * cols / 2);
      for (auto& v : m.codes) v = static_cast<uint8_t>(byte(nrng));
      std::vector<float> absmax(m.blocks());
      for (float& a : absmax) a = amax(nrng);
      nf4::double_quantize(absmax, &m);
      nf.push_back(std::move(m));
    }
    const double bpw = 8.0 * static_cast<double>(nf[0].bytes()) / (static_cast<double>(rows) * cols);
    timed.push_back({"submoe nf4 (dq8), f32 activations", bpw, count, [&](uint32_t i) {
                       (void)kernels::gemm_nf4(nk, {kernels::Nf4View::of(nf[i]), x.data(), cols, 1, y.data(), rows},
                                               &pool);
                     },
                     {}});
    auto q = std::make_shared<std::vector<int8_t>>(cols);
    auto qs = std::make_shared<float>(0.0f);
    timed.push_back({"submoe nf4 (dq8), int8 activations", bpw, count, [&, q, qs, xf](uint32_t i) {
                       // quantized in the call, as the op does it (llama.cpp multiplies IQ4_NL by q8_0)
                       *qs = kernels::quantize_activations_int8_fast(xf, 0, cols, q->data());
                       (void)kernels::gemm_nf4_i8(
                           nk, {kernels::Nf4View::of(nf[i]), q->data(), cols, qs.get(), 1, y.data(), rows}, &pool);
                     },
                     {}});
  }

  // submoe squeezellm (kernels/squeezellm_gemv.h): random ascending fp16 row
  // tables and codes, 3 and 4 bits, and 3 bits with SqueezeLLM's 0.45%
  // exceptions at random columns; against llama.cpp's Q3_K (3.44 bits).
  std::vector<std::vector<squeezellm::SqueezeMatrix>> sq;
  sq.reserve(3);  // the timed calls keep pointers to the sets
  const kernels::SqueezeGemvKernels& sk = kernels::best_squeezellm_gemv_kernels();
  if (cols % 32 == 0 && cols < 65536) {
    struct SqCase {
      uint32_t bits;
      double exceptions;
    };
    for (const SqCase sc : {SqCase{3, 0.0}, SqCase{3, 0.0045}, SqCase{4, 0.0}}) {
      std::mt19937 srng(7 + sc.bits);
      std::normal_distribution<float> n01;
      const uint32_t k = 1u << sc.bits;
      const size_t rb = squeezellm::row_code_bytes(cols, sc.bits);
      auto make = [&]() {
        squeezellm::SqueezeMatrix m;
        m.rows = rows;
        m.cols = cols;
        m.bits = sc.bits;
        m.sparse = sc.exceptions > 0;
        m.codes.resize(size_t{rows} * rb);
        std::vector<uint8_t> codes(cols);
        if (m.sparse) m.row_ptr.push_back(0);
        for (uint32_t r = 0; r < rows; ++r) {
          std::vector<float> t(k);
          for (float& v : t) v = 0.02f * n01(srng);
          std::sort(t.begin(), t.end());
          for (float v : t) m.lut.push_back(float_to_f16_bits(v));
          for (auto& c : codes) c = static_cast<uint8_t>(srng() % k);
          if (m.sparse)
            for (uint32_t c = 0; c < cols; ++c)
              if (std::uniform_real_distribution<double>(0, 1)(srng) < sc.exceptions) {
                codes[c] = 0;
                m.col.push_back(static_cast<uint16_t>(c));
                m.value.push_back(float_to_f16_bits(0.1f * n01(srng)));
              }
          if (m.sparse) m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
          squeezellm::pack_row(codes, sc.bits, m.codes.data() + size_t{r} * rb);
        }
        return m;
      };
      const squeezellm::SqueezeMatrix first = make();
      const uint32_t count = matrices_for(first.bytes(), llc);
      sq.emplace_back();
      sq.back().push_back(first);
      while (sq.back().size() < count) sq.back().push_back(make());
      const std::vector<squeezellm::SqueezeMatrix>* set = &sq.back();
      char name[96];
      std::snprintf(name, sizeof name, "submoe squeezellm %u-bit%s, f32 activations", sc.bits,
                    sc.exceptions > 0 ? " + 0.45% exceptions" : "");
      timed.push_back({name, 8.0 * static_cast<double>(first.bytes()) / (static_cast<double>(rows) * cols), count,
                       [&, set](uint32_t i) {
                         kernels::SqueezeGemmArgs sa;
                         sa.w = kernels::SqueezeView::of((*set)[i]);
                         sa.x = x.data();
                         sa.x_stride = cols;
                         sa.y = y.data();
                         sa.y_stride = rows;
                         (void)kernels::gemm_squeezellm(sk, sa, &pool);
                       },
                       {}});
      std::snprintf(name, sizeof name, "submoe squeezellm %u-bit%s, int8 activations", sc.bits,
                    sc.exceptions > 0 ? " + 0.45% exceptions" : "");
      auto q = std::make_shared<std::vector<int8_t>>(cols);
      auto qs = std::make_shared<float>(0.0f);
      timed.push_back({name, 8.0 * static_cast<double>(first.bytes()) / (static_cast<double>(rows) * cols), count,
                       [&, set, q, qs, xf](uint32_t i) {
                         // quantized in the call, as the op does it (llama.cpp multiplies Q3_K by q8_K)
                         *qs = kernels::quantize_activations_int8_fast(xf, 0, cols, q->data());
                         (void)kernels::gemm_squeezellm_i8(
                             sk, {kernels::SqueezeView::of((*set)[i]), q->data(), cols, qs.get(), 1, y.data(), rows},
                             &pool);
                       },
                       {}});
    }
  }

  // submoe spqr (kernels/spqr_gemv.h): random codes, 3-bit statistics and
  // fp16 block parameters, 2 and 3 bits, without and with 1% exceptions;
  // against llama.cpp's Q2_K (2.63 bits) and Q3_K (3.44 bits).
  std::vector<std::vector<spqr::SpqrMatrix>> sp;
  sp.reserve(4);  // the timed calls keep pointers to the sets
  const kernels::SpqrGemvKernels& pk = kernels::best_spqr_gemv_kernels();
  if (cols % 16 == 0 && cols < 65536) {
    struct SpCase {
      uint32_t bits;
      double exceptions;
    };
    for (const SpCase sc : {SpCase{2, 0.0}, SpCase{3, 0.0}, SpCase{3, 0.01}}) {
      std::mt19937 srng(11 + sc.bits);
      std::normal_distribution<float> n01;
      auto make = [&]() {
        spqr::SpqrMatrix m;
        m.rows = rows;
        m.cols = cols;
        m.bits = sc.bits;
        m.codes.resize(size_t{rows} * spqr::row_code_bytes(cols, sc.bits));
        for (auto& b : m.codes) b = static_cast<uint8_t>(srng());
        std::vector<uint8_t> entries(spqr::stat_entries(rows, cols));
        for (auto& e : entries) e = static_cast<uint8_t>(srng() % 64);
        m.stat_codes.resize(spqr::stat_code_bytes(rows, cols));
        spqr::pack_stat_entries(entries, m.stat_codes.data());
        m.stat_params.resize(spqr::stat_blocks(rows) * m.groups() * 4);
        for (size_t i = 0; i < m.stat_params.size(); ++i)
          m.stat_params[i] = float_to_f16_bits(i % 2 ? 3.0f * n01(srng) : 0.001f * std::abs(n01(srng)));
        m.sparse.row_ptr.push_back(0);
        for (uint32_t r = 0; r < rows; ++r) {
          for (uint32_t c = 0; sc.exceptions > 0 && c < cols; ++c)
            if (std::uniform_real_distribution<double>(0, 1)(srng) < sc.exceptions) {
              m.sparse.col.push_back(static_cast<uint16_t>(c));
              m.sparse.value.push_back(float_to_f16_bits(0.1f * n01(srng)));
            }
          m.sparse.row_ptr.push_back(static_cast<int32_t>(m.sparse.col.size()));
        }
        return m;
      };
      const spqr::SpqrMatrix first = make();
      const uint32_t count = matrices_for(first.bytes(), llc);
      sp.emplace_back();
      sp.back().push_back(first);
      while (sp.back().size() < count) sp.back().push_back(make());
      const std::vector<spqr::SpqrMatrix>* set = &sp.back();
      char name[96];
      std::snprintf(name, sizeof name, "submoe spqr %u-bit%s, f32 activations", sc.bits,
                    sc.exceptions > 0 ? " + 1% exceptions" : "");
      const double sp_bpw = 8.0 * static_cast<double>(first.bytes()) / (static_cast<double>(rows) * cols);
      char name8[96];
      std::snprintf(name8, sizeof name8, "submoe spqr %u-bit%s, int8 activations", sc.bits,
                    sc.exceptions > 0 ? " + 1% exceptions" : "");
      auto q8 = std::make_shared<std::vector<int8_t>>(cols);
      auto s8 = std::make_shared<float>(0.0f);
      timed.push_back({name8, sp_bpw, count, [&, set, q8, s8, xf](uint32_t i) {
                         // quantized in the call, as the op does it
                         *s8 = kernels::quantize_activations_int8(xf, 0, cols, q8->data());
                         kernels::SpqrI8Args pa;
                         pa.w = kernels::SpqrView::of((*set)[i]);
                         pa.xq = q8->data();
                         pa.xq_stride = cols;
                         pa.x_scales = s8.get();
                         pa.y = y.data();
                         pa.y_stride = rows;
                         (void)kernels::gemm_spqr_i8(pk, pa, &pool);
                       },
                       {}});
      timed.push_back({name, sp_bpw, count,
                       [&, set](uint32_t i) {
                         kernels::SpqrGemmArgs pa;
                         pa.w = kernels::SpqrView::of((*set)[i]);
                         pa.x = x.data();
                         pa.x_stride = cols;
                         pa.y = y.data();
                         pa.y_stride = rows;
                         (void)kernels::gemm_spqr(pk, pa, &pool);
                       },
                       {}});
    }
  }

  // submoe e8p (kernels/e8p_gemv.h) at 2, 3 and 4 bits: random codes, f16
  // row scales; each call is the whole op: x rotated by T_i (RHT), the kernel,
  // y rotated back by T_o^T; with int8 activations the rotated x is quantized
  // in the call (llama.cpp's IQ2_XXS multiplies by q8_K).
  std::vector<std::vector<kernels::E8pPanels>> e8;
  const kernels::E8pGemvKernels& ek = kernels::best_e8p_gemv_kernels();
  Result<kernels::RandomizedHadamard> t_in = kernels::RandomizedHadamard::create(cols, 11);
  Result<kernels::RandomizedHadamard> t_out = kernels::RandomizedHadamard::create(rows, 12);
  if (cols % 8 == 0 && t_in.is_ok() && t_out.is_ok()) {
    auto xr = std::make_shared<std::vector<float>>(cols);
    auto q8 = std::make_shared<std::vector<int8_t>>(cols);
    auto s8 = std::make_shared<float>(0.0f);
    const kernels::RandomizedHadamard* ti = &*t_in;
    const kernels::RandomizedHadamard* to = &*t_out;
    e8.reserve(3);
    for (uint32_t bits : {2u, 3u, 4u}) {
      const size_t bytes = e8p::matrix_bytes(rows, cols, bits);
      const uint32_t count = matrices_for(bytes, llc);
      std::mt19937 erng(31 + bits);
      e8.emplace_back();
      for (uint32_t i = 0; i < count; ++i) {
        e8p::E8pMatrix m;
        m.rows = rows;
        m.cols = cols;
        m.bits = bits;
        m.codes.resize(size_t{rows} * cols / 8);
        for (auto& c : m.codes) c = static_cast<uint16_t>(erng());
        if (bits > 2) {
          m.residual.resize(m.codes.size());
          for (auto& c : m.residual) c = static_cast<uint16_t>(bits == 3 ? erng() % 256 : erng());
        }
        m.scales.assign(rows, float_to_f16_bits(0.02f));
        Result<kernels::E8pPanels> pk = kernels::E8pPanels::pack(m);
        if (!pk.is_ok()) return 1;
        e8.back().push_back(std::move(pk).value());
      }
      const std::vector<kernels::E8pPanels>* set = &e8.back();
      const double bpw = 8.0 * static_cast<double>(bytes) / (static_cast<double>(rows) * cols);
      char name[96], name8[96];
      std::snprintf(name, sizeof name, "submoe e8p %u-bit (rht both sides), f32 activations", bits);
      std::snprintf(name8, sizeof name8, "submoe e8p %u-bit (rht both sides), int8 activations", bits);
      timed.push_back({name8, bpw, count, [&, set, xr, q8, s8, ti, to](uint32_t i) {
                         std::copy(x.begin(), x.end(), xr->begin());
                         (void)ti->forward(xr->data(), 1, cols);
                         *s8 = kernels::quantize_activations_int8(kernels::ActivationsView::f32(xr->data(), 1, cols), 0,
                                                                  cols, q8->data());
                         (void)kernels::gemm_e8p_i8(ek, (*set)[i], q8->data(), s8.get(), 1, y.data(), &pool);
                         (void)to->transpose(y.data(), 1, rows);
                       },
                       {}});
      timed.push_back({name, bpw, count, [&, set, xr, ti, to](uint32_t i) {
                         std::copy(x.begin(), x.end(), xr->begin());
                         (void)ti->forward(xr->data(), 1, cols);
                         (void)kernels::gemm_e8p(ek, (*set)[i], xr->data(), 1, y.data(), &pool);
                         (void)to->transpose(y.data(), 1, rows);
                       },
                       {}});
    }
  }

  // submoe aqlm (kernels/aqlm_gemv.h) 2x8 and 1x16: random codes and N(0, 1)
  // f16 codebooks (one set per matrix), f16 row scales; no rotation.
  std::vector<std::vector<kernels::AqlmPanels>> aq;
  const kernels::AqlmGemvKernels& ak = kernels::best_aqlm_gemv_kernels();
  if (cols % aqlm::kDim == 0) {
    aq.reserve(2);
    for (aqlm::Shape shape : {aqlm::Shape{2, 8}, aqlm::Shape{1, 16}}) {
      const size_t bytes = aqlm::matrix_bytes(rows, cols, shape);
      const uint32_t count = matrices_past_llc(bytes, llc);
      std::mt19937 arng(41 + shape.code_bits);
      std::normal_distribution<float> nd;
      aq.emplace_back();
      for (uint32_t i = 0; i < count; ++i) {
        aqlm::AqlmMatrix m;
        m.rows = rows;
        m.cols = cols;
        m.shape = shape;
        m.codes.resize(size_t{rows} * (cols / aqlm::kDim) * shape.codebooks);
        for (auto& c : m.codes) c = static_cast<uint16_t>(arng() % shape.entries());
        m.codebooks.resize(size_t{shape.codebooks} * shape.entries() * aqlm::kDim);
        for (auto& c : m.codebooks) c = float_to_f16_bits(nd(arng));
        m.scales.assign(rows, float_to_f16_bits(0.02f));
        Result<kernels::AqlmPanels> pk = kernels::AqlmPanels::pack(m);
        if (!pk.is_ok()) return 1;
        aq.back().push_back(std::move(pk).value());
      }
      const std::vector<kernels::AqlmPanels>* set = &aq.back();
      char name[96];
      std::snprintf(name, sizeof name, "submoe aqlm %s, f32 activations", shape.name().c_str());
      timed.push_back({name, 8.0 * static_cast<double>(bytes) / (static_cast<double>(rows) * cols), count,
                       [&, set](uint32_t i) { (void)kernels::gemm_aqlm(ak, (*set)[i], x.data(), 1, y.data(), &pool); },
                       {}});
    }
  }

  // submoe vptq (kernels/vptq_gemv.h) 8+8 (2 index bits): random indices, N(0, 1)
  // f16 main and residual codebooks (one set per matrix), f16 column scales.
  std::vector<kernels::VptqPanels> vq;
  const kernels::VptqGemvKernels& vk = kernels::best_vptq_gemv_kernels();
  if (rows % vptq::kDim == 0) {
    const vptq::Shape shape{8, 8};
    const size_t bytes = vptq::matrix_bytes(rows, cols, shape, 0);
    const uint32_t count = matrices_past_llc(bytes, llc);
    std::mt19937 vrng(53);
    std::normal_distribution<float> nd;
    for (uint32_t i = 0; i < count; ++i) {
      vptq::VptqMatrix m;
      m.rows = rows;
      m.cols = cols;
      m.shape = shape;
      m.indices.resize(size_t{cols} * (rows / vptq::kDim));
      for (auto& c : m.indices) c = static_cast<uint16_t>(vrng() % shape.entries());
      m.residual_indices.resize(m.indices.size());
      for (auto& c : m.residual_indices) c = static_cast<uint16_t>(vrng() % shape.residual_entries());
      for (uint32_t e = 0; e < shape.entries() * vptq::kDim; ++e) m.codebook.push_back(float_to_f16_bits(nd(vrng)));
      for (uint32_t e = 0; e < shape.residual_entries() * vptq::kDim; ++e)
        m.residual_codebook.push_back(float_to_f16_bits(0.3f * nd(vrng)));
      m.scales.assign(cols, float_to_f16_bits(0.02f));
      Result<kernels::VptqPanels> pk = kernels::VptqPanels::pack(m);
      if (!pk.is_ok()) return 1;
      vq.push_back(std::move(pk).value());
    }
    timed.push_back({"submoe vptq 8+8, f32 activations",
                     8.0 * static_cast<double>(bytes) / (static_cast<double>(rows) * cols), count,
                     [&](uint32_t i) { (void)kernels::gemm_vptq(vk, vq[i], x.data(), 1, y.data(), &pool); },
                     {}});
  }

  // Interleaved rounds: every kernel once per round, 3 untimed rounds first.
  for (uint32_t round = 0; round < iters + 3; ++round) {
    for (Timed& t : timed) {
      const auto t0 = Clock::now();
      t.call(round % t.count);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (round >= 3) t.us.push_back(us);
    }
  }
  for (const Timed& t : timed) {
    std::printf("{\"kernel\": \"%s\", \"rows\": %u, \"cols\": %u, \"threads\": %d, \"bits_per_weight\": %.3f, "
                "\"matrices\": %u, \"median_us\": %.1f, \"min_us\": %.1f}\n",
                t.name.c_str(), rows, cols, threads, t.bits_per_weight, t.count, median(t.us),
                *std::min_element(t.us.begin(), t.us.end()));
  }
  ggml_threadpool_free(gpool);
  return 0;
}
