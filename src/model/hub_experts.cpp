#include "hub_experts.h"

#include <cstring>
#include <memory>
#include <string>

namespace submoe::model::detail {
namespace {

using Bytes = std::vector<uint8_t>;

// A view named after its source, [rows, cols] of `dtype`, into `bytes`.
io::TensorView view_of(const std::string& name, io::DType dtype, int64_t rows, int64_t cols, const Bytes& bytes) {
  io::TensorView v;
  v.name = name;
  v.dtype = dtype;
  v.shape = {rows, cols};
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

// "<name>[e]<tail>" (built by appends: GCC 12 misreads chained + here as an overlapping copy).
std::string expert_name(const std::string& name, int64_t e, std::string_view tail = {}) {
  std::string s = name;
  s.append("[").append(std::to_string(e)).append("]").append(tail);
  return s;
}

struct Owned {
  std::vector<Bytes> buffers;  // three per expert: gate, up, down
};

// Row `row` of matrix `e` of an MXFP4 pair, validated: its code bytes and scales.
struct MxRows {
  const io::TensorView& blocks;
  const io::TensorView& scales;
  int64_t rows, cols;
  // Copies rows {row0, row0 + step, ...} (count of them) of matrix e into one matrix.
  Result<mxfp4::Mxfp4Matrix> take(int64_t e, int64_t row0, int64_t step, int64_t count) const {
    const size_t rb = static_cast<size_t>(cols / 2), rs = static_cast<size_t>(cols / mxfp4::kBlock);
    Bytes b(static_cast<size_t>(count) * rb), s(static_cast<size_t>(count) * rs);
    for (int64_t i = 0; i < count; ++i) {
      const auto r = static_cast<size_t>(e * rows + row0 + i * step);
      std::memcpy(&b[static_cast<size_t>(i) * rb], blocks.data + r * rb, rb);
      std::memcpy(&s[static_cast<size_t>(i) * rs], scales.data + r * rs, rs);
    }
    auto m = mxfp4::from_fields(static_cast<uint32_t>(count), static_cast<uint32_t>(cols), b, s);
    if (!m.is_ok()) {
      std::string what = "tensor '";
      what.append(scales.name).append("', expert ").append(std::to_string(e)).append(": ").append(m.status().message());
      return Status(m.status().code(), what);
    }
    return m;
  }
};

Bytes to_bf16_bytes(const std::vector<float>& w) {
  Bytes out(w.size() * 2);
  for (size_t i = 0; i < w.size(); ++i) {
    const bf16_t b = float_to_bf16(w[i]);  // exact: MXFP4 values have at most 3 significant bits
    std::memcpy(&out[2 * i], &b.bits, 2);
  }
  return out;
}

}  // namespace

Result<LayerExpertWeights> split_fused_dense(const FusedDense& t, int64_t E, int64_t H, int64_t I) {
  for (const io::TensorView* v : {t.gate_up, t.down})
    if (v->dtype != io::DType::kF32 && v->dtype != io::DType::kBF16 && v->dtype != io::DType::kF16)
      return invalid_argument("tensor '" + v->name + "' has dtype " + std::string(io::dtype_name(v->dtype)) +
                              "; fused GPT-OSS experts are read as F32, BF16 or F16");
  if (t.down->dtype != t.gate_up->dtype)
    return invalid_argument("tensors '" + t.gate_up->name + "' and '" + t.down->name + "' differ in dtype");
  const size_t es = io::dtype_size(t.gate_up->dtype);
  auto owned = std::make_shared<Owned>();
  LayerExpertWeights out;
  out.experts.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    Bytes g(static_cast<size_t>(I * H) * es), u(g.size()), d(g.size());
    const uint8_t* src = t.gate_up->data + static_cast<size_t>(e * H * 2 * I) * es;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < I; ++i) {
        const uint8_t* pair = src + static_cast<size_t>(h * 2 * I + 2 * i) * es;
        std::memcpy(&g[static_cast<size_t>(i * H + h) * es], pair, es);
        std::memcpy(&u[static_cast<size_t>(i * H + h) * es], pair + es, es);
      }
    const uint8_t* dsrc = t.down->data + static_cast<size_t>(e * I * H) * es;
    for (int64_t i = 0; i < I; ++i)
      for (int64_t h = 0; h < H; ++h)
        std::memcpy(&d[static_cast<size_t>(h * I + i) * es], dsrc + static_cast<size_t>(i * H + h) * es, es);
    owned->buffers.push_back(std::move(g));
    owned->buffers.push_back(std::move(u));
    owned->buffers.push_back(std::move(d));
  }
  for (int64_t e = 0; e < E; ++e) {
    const auto& b = owned->buffers;
    const size_t k = static_cast<size_t>(3 * e);
    out.experts[static_cast<size_t>(e)] = {
        view_of(expert_name(t.gate_up->name, e, ".gate"), t.gate_up->dtype, I, H, b[k]),
        view_of(expert_name(t.gate_up->name, e, ".up"), t.gate_up->dtype, I, H, b[k + 1]),
        view_of(expert_name(t.down->name, e), t.down->dtype, H, I, b[k + 2])};
  }
  out.storage = owned;
  return out;
}

Result<LayerExpertWeights> dequantize_fused_mxfp4(const FusedMxfp4& t, int64_t E, int64_t H, int64_t I) {
  const MxRows gu{*t.gate_up_blocks, *t.gate_up_scales, 2 * I, H}, dn{*t.down_blocks, *t.down_scales, H, I};
  auto owned = std::make_shared<Owned>();
  for (int64_t e = 0; e < E; ++e) {
    SUBMOE_ASSIGN_OR_RETURN(const mxfp4::Mxfp4Matrix g, gu.take(e, 0, 2, I));
    SUBMOE_ASSIGN_OR_RETURN(const mxfp4::Mxfp4Matrix u, gu.take(e, 1, 2, I));
    SUBMOE_ASSIGN_OR_RETURN(const mxfp4::Mxfp4Matrix d, dn.take(e, 0, 1, H));
    for (const mxfp4::Mxfp4Matrix* m : {&g, &u, &d}) owned->buffers.push_back(to_bf16_bytes(mxfp4::decode(*m)));
  }
  LayerExpertWeights out;
  out.experts.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    const auto& b = owned->buffers;
    const size_t k = static_cast<size_t>(3 * e);
    out.experts[static_cast<size_t>(e)] = {
        view_of(expert_name(t.gate_up_blocks->name, e, ".gate"), io::DType::kBF16, I, H, b[k]),
        view_of(expert_name(t.gate_up_blocks->name, e, ".up"), io::DType::kBF16, I, H, b[k + 1]),
        view_of(expert_name(t.down_blocks->name, e), io::DType::kBF16, H, I, b[k + 2])};
  }
  out.storage = owned;
  return out;
}

Result<std::vector<ResidentExpertProvider::Expert>> fused_mxfp4_ops(const FusedMxfp4& t, int64_t E, int64_t H,
                                                                    int64_t I) {
  const MxRows gu{*t.gate_up_blocks, *t.gate_up_scales, 2 * I, H}, dn{*t.down_blocks, *t.down_scales, H, I};
  std::vector<ResidentExpertProvider::Expert> out(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    auto& x = out[static_cast<size_t>(e)];
    SUBMOE_ASSIGN_OR_RETURN(mxfp4::Mxfp4Matrix g, gu.take(e, 0, 2, I));
    SUBMOE_ASSIGN_OR_RETURN(mxfp4::Mxfp4Matrix u, gu.take(e, 1, 2, I));
    SUBMOE_ASSIGN_OR_RETURN(mxfp4::Mxfp4Matrix d, dn.take(e, 0, 1, H));
    x.gate = make_mxfp4_linear(std::move(g));
    x.up = make_mxfp4_linear(std::move(u));
    x.down = make_mxfp4_linear(std::move(d));
  }
  return out;
}

}  // namespace submoe::model::detail
