// Driver of the fused ternary kernels: argument checks, activation preparation
// (conversion to f32 and the layout the chosen kernel reads), row split across
// the thread pool, dispatch to the ISA table chosen by the caller.
#include "submoe/kernels/ternary_gemv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

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
    nullptr,
    nullptr,
    detail::quantize_i8_f32_avx2,
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

// The AVX-512 table with what this CPU's VBMI and VNNI add.
TernaryGemvKernels avx512_kernels_for_cpu() {
  TernaryGemvKernels k = kAvx512Kernels;
  if (cpu_features().avx512_vbmi) {
    k.gemv_bf16_name = "gemv_bf16_ternary_dict_perm_avx512";
    k.gemv_bf16 = detail::gemv_bf16_ternary_dict_perm_avx512;
    if (cpu_features().avx512_vnni) {
      k.gemv_i8_name = "gemv_i8_ternary_dict_perm_avx512";
      k.gemv_i8 = detail::gemv_i8_ternary_dict_perm_avx512;
      k.quantize_i8 = detail::quantize_i8_f32_avx512;
    }
  }
  return k;
}

// ActivationQuant::kInt8 for one token: q = round-to-nearest-even(x * inv)
// clamped to +-127 (a NaN lands on -127: unspecified but defined; every q is 0
// when the token has no finite positive maximum, inv = 0), activation s * q.
struct Int8Quantizer {
  float scale = 0.0f;
  float inv = 0.0f;

  int8_t quantize(float v) const { return detail::int8_quantize(v, inv); }
};

template <typename Load>
Int8Quantizer make_quantizer(Load load, uint32_t n) {
  float m = 0.0f;
  for (uint32_t c = 0; c < n; ++c) {
    const float a = std::fabs(load(c));
    m = a > m ? a : m;
  }
  Int8Quantizer qz;
  detail::int8_scale(m, &qz.scale, &qz.inv);  // inv = 0 when not finite and positive: every q is 0
  return qz;
}

// fn(load) with load(c) = token t's activation c as f32, the type decided once.
template <typename Fn>
auto with_token(const ActivationsView& x, uint32_t t, Fn fn) {
  const size_t base = static_cast<size_t>(t) * x.stride;
  if (x.type == ActivationType::kF32) {
    const float* p = static_cast<const float*>(x.data) + base;
    return fn([p](uint32_t c) { return p[c]; });
  }
  const bf16_t* p = static_cast<const bf16_t*>(x.data) + base;
  return fn([p](uint32_t c) { return bf16_to_float(p[c]); });
}

// Token t's kInt8 quantization into q[0, n), with the table's vector
// quantizer when it has one (the same q and s); returns s.

// Each token's kInt8 quantization s_t q_t, quantized once per call.
struct QuantizedTokens {
  const int8_t* q = nullptr;  // token t at q + t * cols
  const float* scale = nullptr;
  float at(uint32_t t, uint32_t cols, uint32_t c) const {
    return scale[t] * static_cast<float>(q[static_cast<size_t>(t) * cols + c]);
  }
};

// Token 0 as f32 (or its kInt8 quantization s q when qt is set) followed by
// kTailPadCols zeros.
void prepare_padded(const ActivationsView& x, uint32_t cols, const QuantizedTokens* qt, float* xs) {
  if (qt != nullptr) {
    for (uint32_t c = 0; c < cols; ++c) xs[c] = qt->at(0, cols, c);
  } else if (x.type == ActivationType::kF32) {
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

// Token 0's int8 quantization followed by kTailPadCols zero bytes; returns s.
float prepare_padded_i8(const TernaryGemvKernels& k, const ActivationsView& x, uint32_t cols, float* xs) {
  auto* dst = reinterpret_cast<int8_t*>(xs);
  const float s = detail::quantize_token_i8(k.quantize_i8, x, 0, cols, dst);
  std::fill(dst + cols, dst + cols + detail::kTailPadCols, int8_t{0});
  return s;
}

// Column c: row 2c holds the B tokens' values (zero past B and past cols; the
// kInt8 quantization s q when qt is set), row 2c + 1 zeros. Each row is
// written once (values, then zeros to the stride), not cleared first.
void prepare_doubled(const ActivationsView& x, uint32_t cols, uint32_t stride, const QuantizedTokens* qt, float* xs) {
  for (uint32_t c = 0; c < cols; ++c) {
    float* row = xs + 2 * static_cast<size_t>(c) * stride;
    if (qt != nullptr) {
      for (uint32_t t = 0; t < x.batch; ++t) row[t] = qt->at(t, cols, c);
    } else {
      for (uint32_t t = 0; t < x.batch; ++t) row[t] = activation(x, t, c);
    }
    std::fill(row + x.batch, row + 2 * static_cast<size_t>(stride), 0.0f);
  }
  const size_t pad_rows = 2 * static_cast<size_t>(detail::kPadCols);
  float* tail = xs + 2 * static_cast<size_t>(cols) * stride;
  std::fill(tail, tail + pad_rows * stride, 0.0f);
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

const char* activation_quant_name(ActivationQuant q) {
  switch (q) {
    case ActivationQuant::kExact:
      return "exact";
    case ActivationQuant::kInt8:
      return "int8";
  }
  return "?";
}

float quantize_activations_int8(const ActivationsView& x, uint32_t token, uint32_t n, int8_t* q) {
  return with_token(x, token, [n, q](auto load) {
    const Int8Quantizer qz = make_quantizer(load, n);
    for (uint32_t c = 0; c < n; ++c) q[c] = qz.quantize(load(c));
    return qz.scale;
  });
}

float quantize_activations_int8_fast(const ActivationsView& x, uint32_t token, uint32_t n, int8_t* q) {
  static const detail::QuantizeI8Fn vector = [] {
    const CpuFeatures& f = cpu_features();
    if (best_isa() == Isa::kAvx512 && f.avx512_vbmi && f.avx512_vnni) return &detail::quantize_i8_f32_avx512;
    return best_isa() != Isa::kScalar ? &detail::quantize_i8_f32_avx2 : detail::QuantizeI8Fn{nullptr};
  }();
  return detail::quantize_token_i8(vector, x, token, n, q);
}

const TernaryGemvKernels& ternary_gemv_kernels(Isa isa) {
  static const TernaryGemvKernels avx512 = avx512_kernels_for_cpu();
  return detail::table_for_isa(isa, kScalarKernels, kAvx2Kernels, avx512);
}

const TernaryGemvKernels& best_ternary_gemv_kernels() {
  static const TernaryGemvKernels& best = ternary_gemv_kernels(best_isa());
  return best;
}

namespace {

bool use_bf16_gemv(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                   ActivationType type, ActivationQuant quant) {
  return batch == 1 && type == ActivationType::kBF16 && quant == ActivationQuant::kExact && k.gemv_bf16 != nullptr &&
         table.has_perm;
}

bool use_i8_gemv(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                 ActivationQuant quant) {
  return batch == 1 && quant == ActivationQuant::kInt8 && k.gemv_i8 != nullptr && table.has_perm;
}

}  // namespace

const char* ternary_kernel_name(const TernaryGemvKernels& k, const TernaryKernelTable& table, uint32_t batch,
                                ActivationType type, ActivationQuant quant) {
  if (batch > 1) return k.gemm_name;
  if (use_i8_gemv(k, table, batch, quant)) return k.gemv_i8_name;
  if (use_bf16_gemv(k, table, batch, type, quant)) return k.gemv_bf16_name;
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
                         std::span<float> workspace, ThreadPool* pool, ActivationQuant quant) {
  SUBMOE_RETURN_IF_ERROR(check_args(kernels, table, w, x, y, workspace));
  if (quant != ActivationQuant::kExact && quant != ActivationQuant::kInt8) {
    return invalid_argument("gemm_ternary_dict: unknown activation quantization");
  }
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
  } else if (use_i8_gemv(kernels, table, x.batch, quant)) {
    fn = kernels.gemv_i8;
    layout = XLayout::kPaddedI8;
  } else if (use_bf16_gemv(kernels, table, x.batch, x.type, quant)) {
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
  thread_local std::vector<int8_t> q8;
  float scales[kMaxKernelBatch];
  QuantizedTokens tokens;
  const QuantizedTokens* qz = nullptr;
  if (quant == ActivationQuant::kInt8 && layout != XLayout::kPaddedI8) {
    q8.resize(static_cast<size_t>(x.batch) * w.cols);
    for (uint32_t t = 0; t < x.batch; ++t)
      scales[t] = detail::quantize_token_i8(kernels.quantize_i8, x, t, w.cols, q8.data() + static_cast<size_t>(t) * w.cols);
    tokens = {q8.data(), scales};
    qz = &tokens;
  }
  switch (layout) {
    case XLayout::kPadded:
      prepare_padded(x, w.cols, qz, xs);
      break;
    case XLayout::kPaddedBf16:
      prepare_padded_bf16(x, w.cols, xs);
      break;
    case XLayout::kPaddedI8:
      args.x_scale = prepare_padded_i8(kernels, x, w.cols, xs);
      break;
    case XLayout::kDoubled:
      prepare_doubled(x, w.cols, args.batch_stride, qz, xs);
      break;
  }
  args.xs = xs;

  // Rows are independent; threads take blocks of kRowBlock rows.
  detail::run_rows(fn, args, w.rows, detail::kRowBlock, pool);
  return Status::ok();
}

}  // namespace submoe::kernels
