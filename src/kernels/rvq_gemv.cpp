// Driver of the residual-VQ LUT kernels: argument checks, activation
// preparation, the workspace layout, the two phases of a call (table blocks
// split across the pool, then rows split across it) per slab of tokens, and
// dispatch to the ISA table chosen by the caller.
#include "submoe/kernels/rvq_gemv.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/rvq_gemv_internal.h"
#include "row_dispatch.h"
#include "submoe/core/thread_pool.h"
#include "workspace_layout.h"

namespace submoe::kernels {

namespace {

using detail::activation;
using detail::align_up;
using detail::kAlignFloats;

const RvqGemvKernels kScalarKernels = {
    Isa::kScalar,
    "gemv_rvq_i8lut_scalar", detail::rvq_build_i8_scalar, detail::rvq_rows_i8_scalar,
    "gemm_f32_rvq_lut_slab_scalar", detail::rvq_build_slab_scalar, detail::rvq_rows_slab_scalar,
    8, 1, /*gemm_table=*/true,
};

const RvqGemvKernels kAvx2Kernels = {
    Isa::kAvx2,
    "gemv_rvq_i8lut_shuffle_avx2", detail::rvq_build_i8_avx2, detail::rvq_rows_i8_avx2,
    "gemm_rvq_decode_avx2", nullptr, detail::rvq_rows_decode_avx2,
    detail::kRvqDecodeSlab, detail::kRvqDecodeSlab, /*gemm_table=*/false,
};

// AVX-512 CPUs run the AVX2 kernels (rvq_gemv_internal.h says why).
const RvqGemvKernels kAvx512Kernels = [] {
  RvqGemvKernels k = kAvx2Kernels;
  k.isa = Isa::kAvx512;
  return k;
}();

// Bytes of slab table one column tile of the row pass reads (half of a 512 KiB
// L2). Tiles are at least 16 blocks and a multiple of 16.
constexpr size_t kTileBytesSlab = 256 << 10;

uint32_t tile_blocks(uint32_t token_pad) {
  const size_t per_block = size_t{rvq::kRvqEntries} * token_pad * sizeof(float);
  return static_cast<uint32_t>(std::max<size_t>(16, kTileBytesSlab / per_block / 16 * 16));
}

size_t round_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

struct Layout {
  size_t cbt = 0, xs = 0, table = 0, qtable = 0, tile_scale = 0, part = 0, total = 0;
};

Layout workspace_layout(const RvqGemvKernels& k, uint32_t rows, uint32_t cols, uint32_t stages, uint32_t batch) {
  const uint32_t tp = batch == 1 ? 1 : rvq_token_pad(k, std::min(batch, k.slab));
  const size_t n = size_t{rvq::rvq_groups(cols)} * stages;
  Layout l;
  l.cbt = 0;
  l.xs = l.cbt + round_floats(size_t{stages} * rvq::kRvqCodebookFloats);
  l.table = l.xs + round_floats(size_t{batch} * cols);
  const bool table = batch == 1 || k.gemm_table;
  l.qtable = l.table + round_floats(table ? n * rvq::kRvqEntries * tp : 0);
  // Batch 1: int8 slices of every pair (pairs * 512 bytes >= n * 256) and the tile scales.
  const size_t q_floats = batch == 1 ? size_t{rvq_pairs(cols, stages)} * 16 * kRvqPairBytes / sizeof(float) : 0;
  l.tile_scale = l.qtable + round_floats(q_floats);
  l.part = l.tile_scale + round_floats(batch == 1 ? rvq_i8_tiles(cols) : 0);
  l.total = kAlignFloats + l.part + round_floats(size_t{rvq_panels(rows)} * kRvqPanelRows * tp);
  return l;
}

Status check_args(const RvqGemvKernels& k, const RvqPanelView& w, const ActivationsView& x, const OutputView& y,
                  std::span<float> workspace) {
  if (k.gemv_build == nullptr || k.gemv_rows == nullptr || (k.gemm_table && k.gemm_build == nullptr) ||
      k.gemm_rows == nullptr || k.slab == 0 || k.slab > 16)
    return invalid_argument("gemm_rvq: empty kernel table");
  if (x.batch < 1 || x.batch > kMaxKernelBatch)
    return invalid_argument("gemm_rvq: batch " + std::to_string(x.batch) + " outside 1.." +
                            std::to_string(kMaxKernelBatch));
  SUBMOE_RETURN_IF_ERROR(check_rvq_shape("gemm_rvq", w.rows, w.cols, w.stages));
  if (w.panels == nullptr || w.scales == nullptr || w.codebooks == nullptr)
    return invalid_argument("gemm_rvq: packed matrix has null arrays");
  if (y.data == nullptr) return invalid_argument("gemm_rvq: null output");
  if (x.batch > 1 && y.stride < w.rows) return invalid_argument("gemm_rvq: output stride < rows");
  if (x.data == nullptr) return invalid_argument("gemm_rvq: null activations");
  if (x.type != ActivationType::kF32 && x.type != ActivationType::kBF16)
    return invalid_argument("gemm_rvq: unknown activation type");
  if (x.batch > 1 && x.stride < w.cols) return invalid_argument("gemm_rvq: activation stride < cols");
  const size_t need = rvq_gemm_workspace_floats(k, w.rows, w.cols, w.stages, x.batch);
  if (workspace.size() < need)
    return invalid_argument("gemm_rvq: workspace of " + std::to_string(workspace.size()) + " floats, need " +
                            std::to_string(need));
  return Status::ok();
}

// Table blocks of one slab, or tiles of a batch-1 table: split across the
// pool when there are enough.
void build_table(RvqBuildFn fn, const RvqGemmArgs& a, uint32_t units, size_t grain, ThreadPool* pool) {
  if (pool == nullptr || pool->num_threads() <= 1 || units < 2 * grain) {
    fn(a, 0, units);
    return;
  }
  pool->parallel_for_dynamic(units, grain, [&](size_t begin, size_t end, int) {
    fn(a, static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
  });
}

}  // namespace

const RvqGemvKernels& rvq_gemv_kernels(Isa isa) {
  return detail::table_for_isa(isa, kScalarKernels, kAvx2Kernels, kAvx512Kernels);
}

const RvqGemvKernels& best_rvq_gemv_kernels() {
  static const RvqGemvKernels& best = rvq_gemv_kernels(best_isa());
  return best;
}

const char* rvq_kernel_name(const RvqGemvKernels& k, uint32_t batch) {
  return batch <= 1 ? k.gemv_name : k.gemm_name;
}

uint32_t rvq_token_pad(const RvqGemvKernels& k, uint32_t tokens) {
  return std::max(k.min_token_pad, std::bit_ceil(std::max(tokens, 1u)));
}

size_t rvq_gemm_workspace_floats(const RvqGemvKernels& k, uint32_t rows, uint32_t cols, uint32_t stages,
                                 uint32_t batch) {
  return workspace_layout(k, rows, cols, std::max(stages, 1u), std::max(batch, 1u)).total;
}

namespace {
constexpr double kUnitRoundoff = 0x1p-24;  // u of f32
// gamma_k = k u / (1 - k u): the bound of k f32 roundings.
double gamma(double k) { return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff); }
}  // namespace

double rvq_error_bound(uint32_t groups, uint32_t stages, double sum_abs_products, double abs_scale) {
  const double u = kUnitRoundoff;
  const double n = static_cast<double>(groups) * stages, cols = static_cast<double>(groups) * rvq::kRvqDim;
  const double g16 = gamma(16.0), gs = gamma(stages > 0 ? stages - 1.0 : 0.0);
  const double tables = g16 + gamma(n > 0 ? n - 1 : 0) * (1.0 + g16);
  const double decoded = gs + gamma(cols) * (1.0 + gs);
  return abs_scale * sum_abs_products * (std::max(tables, decoded) * (1.0 + u) + u);
}

double rvq_i8_error_bound(uint64_t tiles, double sum_abs_products, double sum_tile_steps, double abs_scale) {
  const double g16 = gamma(16.0);
  const double gt = gamma(static_cast<double>(tiles + 1));
  const double e = sum_tile_steps * (0.5 + std::ldexp(1.0, -12));
  return abs_scale * ((g16 * sum_abs_products + e) * (1.0 + gt) + gt * (1.0 + g16) * sum_abs_products);
}

Status gemm_rvq(const RvqGemvKernels& kernels, const RvqPanelView& w, const ActivationsView& x, const OutputView& y,
                std::span<float> workspace, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_args(kernels, w, x, y, workspace));
  const Layout l = workspace_layout(kernels, w.rows, w.cols, w.stages, x.batch);
  float* base = align_up(workspace.data());
  float* xs = base + l.xs;
  for (uint32_t t = 0; t < x.batch; ++t) {
    float* dst = xs + size_t{t} * w.cols;
    if (x.type == ActivationType::kF32) {
      std::memcpy(dst, static_cast<const float*>(x.data) + t * x.stride, sizeof(float) * w.cols);
    } else {
      for (uint32_t c = 0; c < w.cols; ++c) dst[c] = activation(x, t, c);
    }
  }
  const uint32_t blocks = w.groups() * w.stages;
  const size_t threads = pool ? static_cast<size_t>(std::max(pool->num_threads(), 1)) : 1;

  RvqGemmArgs a;
  a.w = w;
  a.x_stride = w.cols;
  a.table = base + l.table;
  a.qtable = reinterpret_cast<int8_t*>(base + l.qtable);
  a.tile_scale = base + l.tile_scale;
  a.part = base + l.part;
  a.y_stride = y.stride;
  if (x.batch == 1) {
    // The codebooks transposed once per matrix when the caller keeps them
    // (RvqLinearOp does); else here, S x 4096 floats (~7 us at 4 stages).
    if (w.codebooks_t == nullptr) transpose_rvq_codebooks(w.codebooks, w.stages, base + l.cbt);
    a.cbt = w.codebooks_t != nullptr ? w.codebooks_t : base + l.cbt;
    a.xs = xs;
    a.tokens = 1;
    a.token_pad = 1;
    a.y = y.data;
    build_table(kernels.gemv_build, a, rvq_i8_spans(w.cols), 1, pool);
    // Panels in about two chunks per thread (each chunk reads the whole table).
    const uint32_t panels = rvq_panels(w.rows);
    const size_t panel_grain = std::max<size_t>(1, (panels + 2 * threads - 1) / (2 * threads));
    detail::run_rows(kernels.gemv_rows, a, panels, panel_grain, pool);
    return Status::ok();
  }
  // Slab tables are 4-16x larger (12.6 MB at 2080 x 6144 x 8 tokens) and each
  // chunk re-reads all of it: about one chunk per thread (run_rows keeps a
  // matrix under two grains on the calling thread). Without a table, about
  // two chunks per thread.
  const size_t slab_grain =
      kernels.gemm_table ? std::max<size_t>(16, w.rows / threads / 16 * 16)
                         : std::max<size_t>(16, (w.rows + 2 * threads - 1) / (2 * threads) + 15) / 16 * 16;
  for (uint32_t t0 = 0; t0 < x.batch; t0 += kernels.slab) {
    a.tokens = std::min(kernels.slab, x.batch - t0);
    a.token_pad = rvq_token_pad(kernels, a.tokens);
    a.tile_blocks = tile_blocks(a.token_pad);
    a.xs = xs + size_t{t0} * w.cols;
    a.y = y.data + size_t{t0} * y.stride;
    if (kernels.gemm_table) build_table(kernels.gemm_build, a, blocks, 16, pool);
    detail::run_rows(kernels.gemm_rows, a, w.rows, slab_grain, pool);
  }
  return Status::ok();
}

}  // namespace submoe::kernels
