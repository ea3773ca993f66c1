// Driver of the fused ternary kernels: argument checks, activation preparation
// (conversion to f32 and the layout the chosen kernel reads), row split across
// the thread pool, dispatch to the ISA table chosen by the caller.
#include "submoe/kernels/ternary_gemv.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/ternary_gemv_internal.h"
#include "submoe/core/thread_pool.h"
#include "row_dispatch.h"
#include "workspace_layout.h"

namespace submoe::kernels {

using ternary::PackedTernaryView;

namespace {

using detail::activation;
using detail::align_up;
using detail::kAlignFloats;

const TernaryGemvKernels kScalarKernels = {
    Isa::kScalar,
    nullptr,
    nullptr,
    XLayout::kPadded,
    "gemv_f32_ternary_dict_scalar",
    detail::gemv_f32_ternary_dict_scalar,
    XLayout::kPadded,
    "gemm_f32_ternary_dict_scalar",
    detail::gemm_f32_ternary_dict_scalar,
    nullptr,
    nullptr,
};

const TernaryGemvKernels kAvx2Kernels = {
    Isa::kAvx2,
    nullptr,
    nullptr,
    XLayout::kDoubled,
    "gemv_f32_ternary_dict_slots_avx2",
    detail::gemv_f32_ternary_dict_slots_avx2,
    XLayout::kDoubled,
    "gemm_f32_ternary_dict_slots_avx2",
    detail::gemm_f32_ternary_dict_slots_avx2,
    nullptr,
    nullptr,
};

// Without VBMI (Skylake-SP, Cascade Lake) bf16 activations take the f32 paths.
const TernaryGemvKernels kAvx512Kernels = {
    Isa::kAvx512,
    "gemv_f32_ternary_dict_perm_avx512",
    detail::gemv_f32_ternary_dict_perm_avx512,
    XLayout::kPadded,
    "gemv_f32_ternary_dict_masks_avx512",
    detail::gemv_f32_ternary_dict_masks_avx512,
    XLayout::kPadded,
    "gemm_f32_ternary_dict_slots_avx512",
    detail::gemm_f32_ternary_dict_slots_avx512,
    nullptr,
    nullptr,
};

const TernaryGemvKernels kAvx512VbmiKernels = [] {
  TernaryGemvKernels k = kAvx512Kernels;
  k.gemv_bf16_name = "gemv_bf16_ternary_dict_perm_avx512";
  k.gemv_bf16 = detail::gemv_bf16_ternary_dict_perm_avx512;
  return k;
}();

// Token 0 as f32 followed by kTailPadCols zeros.
void prepare_padded(const ActivationsView& x, uint32_t cols, float* xs) {
  if (x.type == ActivationType::kF32) {
    std::memcpy(xs, x.data, sizeof(float) * cols);
  } else {
    const auto* src = static_cast<const bf16_t*>(x.data);
    for (uint32_t c = 0; c < cols; ++c) xs[c] = bf16_to_float(src[c]);
  }
  std::fill(xs + cols, xs + cols + detail::kTailPadCols, 0.0f);
}

// Token 0's bf16 bits followed by kTailPadCols zero words.
void prepare_padded_bf16(const ActivationsView& x, uint32_t cols, float* xs) {
  auto* dst = reinterpret_cast<bf16_t*>(xs);
  std::memcpy(dst, x.data, sizeof(bf16_t) * cols);
  std::fill(dst + cols, dst + cols + detail::kTailPadCols, bf16_t{0});
}

// Column c: row 2c holds the B tokens' values (zero past B and past cols), row
// 2c + 1 zeros.
void prepare_doubled(const ActivationsView& x, uint32_t cols, uint32_t stride, float* xs) {
  const size_t total_rows = 2 * (static_cast<size_t>(cols) + detail::kPadCols);
  std::fill(xs, xs + total_rows * stride, 0.0f);
  for (uint32_t c = 0; c < cols; ++c) {
    float* row = xs + 2 * static_cast<size_t>(c) * stride;
    for (uint32_t t = 0; t < x.batch; ++t) row[t] = activation(x, t, c);
  }
}

Status check_args(const TernaryGemvKernels& k, const TernaryKernelTable& table, const PackedTernaryView& w,
                  const ActivationsView& x, const OutputView& y, std::span<float> workspace) {
  if (k.gemv_any == nullptr || k.gemm == nullptr) return invalid_argument("gemm_ternary_dict: empty kernel table");
  if (table.source == nullptr || table.lengths.empty()) {
    return invalid_argument("gemm_ternary_dict: kernel table was not built");
  }
  if (w.dict != table.source) {
    return invalid_argument("gemm_ternary_dict: the kernel table was built from a different dictionary than w.dict");
  }
  if (x.batch < 1 || x.batch > kMaxKernelBatch) {
    return invalid_argument("gemm_ternary_dict: batch " + std::to_string(x.batch) + " outside 1.." +
                            std::to_string(kMaxKernelBatch));
  }
  if (w.rows == 0) return Status::ok();
  if (y.data == nullptr) return invalid_argument("gemm_ternary_dict: null output");
  if (x.batch > 1 && y.stride < w.rows) return invalid_argument("gemm_ternary_dict: output stride < rows");
  if (w.cols == 0) return Status::ok();
  if (x.data == nullptr) return invalid_argument("gemm_ternary_dict: null activations");
  if (x.type != ActivationType::kF32 && x.type != ActivationType::kBF16) {
    return invalid_argument("gemm_ternary_dict: unknown activation type");
  }
  if (x.batch > 1 && x.stride < w.cols) return invalid_argument("gemm_ternary_dict: activation stride < cols");
  if (w.row_offsets == nullptr || w.scales == nullptr || (w.num_codes > 0 && w.codes == nullptr)) {
    return invalid_argument("gemm_ternary_dict: packed matrix has null arrays");
  }
  if (w.row_offsets[0] != 0 || static_cast<size_t>(w.row_offsets[w.rows]) != w.num_codes) {
    return invalid_argument("gemm_ternary_dict: row offsets do not span the codewords");
  }
  for (uint32_t r = 0; r < w.rows; ++r) {
    if (w.row_offsets[r + 1] < w.row_offsets[r]) {
      return invalid_argument("gemm_ternary_dict: row offsets decrease at row " + std::to_string(r));
    }
  }
  if (workspace.size() < ternary_gemm_workspace_floats(w.cols, x.batch)) {
    return invalid_argument("gemm_ternary_dict: workspace of " + std::to_string(workspace.size()) + " floats, need " +
                            std::to_string(ternary_gemm_workspace_floats(w.cols, x.batch)));
  }
  return Status::ok();
}

}  // namespace

const char* activation_type_name(ActivationType t) {
  switch (t) {
    case ActivationType::kF32:
      return "f32";
    case ActivationType::kBF16:
      return "bf16";
  }
  return "?";
}

const TernaryGemvKernels& ternary_gemv_kernels(Isa isa) {
  return detail::table_for_isa(isa, kScalarKernels, kAvx2Kernels,
                               cpu_features().avx512_vbmi ? kAvx512VbmiKernels : kAvx512Kernels);
}

const TernaryGemvKernels& best_ternary_gemv_kernels() {
  static const TernaryGemvKernels& best = ternary_gemv_kernels(best_isa());
  return best;
}

namespace {

bool use_bf16_gemv(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                   ActivationType type) {
  return batch == 1 && type == ActivationType::kBF16 && k.gemv_bf16 != nullptr && table.has_perm;
}

}  // namespace

const char* ternary_kernel_name(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                                ActivationType type) {
  if (batch > 1) return k.gemm_name;
  if (use_bf16_gemv(k, table, batch, type)) return k.gemv_bf16_name;
  return (k.gemv_perm != nullptr && table.has_perm) ? k.gemv_perm_name : k.gemv_any_name;
}

uint32_t ternary_batch_stride(uint32_t batch) {
  if (batch <= 1) return 1;
  if (batch <= 4) return 4;
  if (batch <= 8) return 8;
  return (batch + 15) / 16 * 16;
}

size_t ternary_gemm_workspace_floats(uint32_t cols, uint32_t batch) {
  const size_t padded_cols = static_cast<size_t>(cols) + detail::kPadCols;
  const size_t doubled = 2 * padded_cols * ternary_batch_stride(batch);
  const size_t padded = static_cast<size_t>(cols) + detail::kTailPadCols;  // batch-1 layouts
  return kAlignFloats + std::max(doubled, padded);
}

Status gemm_ternary_dict(const TernaryGemvKernels& kernels, const TernaryKernelTable& table,
                         const PackedTernaryView& w, const ActivationsView& x, const OutputView& y,
                         std::span<float> workspace, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_args(kernels, table, w, x, y, workspace));
  if (w.rows == 0) return Status::ok();
  if (w.cols == 0) {
    for (uint32_t t = 0; t < x.batch; ++t) std::fill(y.data + t * y.stride, y.data + t * y.stride + w.rows, 0.0f);
    return Status::ok();
  }

  TernaryRowsFn fn;
  XLayout layout;
  if (x.batch > 1) {
    fn = kernels.gemm;
    layout = XLayout::kDoubled;
  } else if (use_bf16_gemv(kernels, table, x.batch, x.type)) {
    fn = kernels.gemv_bf16;
    layout = XLayout::kPaddedBf16;
  } else if (kernels.gemv_perm != nullptr && table.has_perm) {
    fn = kernels.gemv_perm;
    layout = kernels.gemv_perm_layout;
  } else {
    fn = kernels.gemv_any;
    layout = kernels.gemv_any_layout;
  }

  TernaryGemmArgs args;
  args.w = w;
  args.table = &table;
  args.batch = x.batch;
  args.batch_stride = layout == XLayout::kDoubled ? ternary_batch_stride(x.batch) : 1;
  args.y = y.data;
  args.y_stride = y.stride;
  float* xs = align_up(workspace.data());
  switch (layout) {
    case XLayout::kPadded:
      prepare_padded(x, w.cols, xs);
      break;
    case XLayout::kPaddedBf16:
      prepare_padded_bf16(x, w.cols, xs);
      break;
    case XLayout::kDoubled:
      prepare_doubled(x, w.cols, args.batch_stride, xs);
      break;
  }
  args.xs = xs;

  // Rows are independent; blocks of 48 rows are a multiple of every kernel's row
  // interleave (6 and 4 at batch 1, 4 and 2 for the small-batch kernels).
  constexpr size_t kGrain = 48;
  detail::run_rows(fn, args, w.rows, kGrain, pool);
  return Status::ok();
}

}  // namespace submoe::kernels
