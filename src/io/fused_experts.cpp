// GPT-OSS's expert tensors (doc §7.2). transformers keeps a layer's experts
// fused and transposed for `x @ W`: experts.gate_up_proj [E, H, 2I] with gate
// in the even and up in the odd columns, experts.down_proj [E, I, H], each
// with a bias (experts.gate_up_proj_bias [E, 2I], experts.down_proj_bias
// [E, H]). The hub's MXFP4 files hold the same matrices as OCP MX blocks in the
// Linear orientation: experts.gate_up_proj_blocks [E, 2I, H/32, 16] (two FP4
// E2M1 codes per byte, low nibble first) with experts.gate_up_proj_scales
// [E, 2I, H/32] (E8M0: 2^(s - 127)), and down_proj_blocks [E, H, I/32, 16] /
// down_proj_scales [E, H, I/32].
//
// When a checkpoint is opened each such layer is rewritten, in memory, as
// per-expert tensors experts.{e}.gate_proj.weight [I, H], up_proj.weight [I, H]
// and down_proj.weight [H, I] (the hub's per-expert names of the other
// families), so the weight loader, compress, inspect and the codebook tools
// read GPT-OSS like any other family. Dense sources keep their dtype; MXFP4 is
// dequantized to BF16, which holds every MXFP4 value exactly (at most 3
// significant bits, exponents within BF16's range) unless a scale overflows it,
// which is an error. The biases stay as they are: the weight loader reads them.
#include <cmath>
#include <cstring>
#include <string>

#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

constexpr std::string_view kGateUp = "experts.gate_up_proj";
constexpr std::string_view kBlocksSuffix = "_blocks";
constexpr int64_t kMxBlock = 32;  // elements per E8M0 scale
// FP4 E2M1 code -> value (sign bit 3).
constexpr float kFp4[16] = {+0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

std::string shape_text(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

Status expect_shape(const TensorView& t, std::initializer_list<int64_t> dims, std::string_view why) {
  if (std::equal(t.shape.begin(), t.shape.end(), dims.begin(), dims.end())) return Status::ok();
  return invalid_argument("GPT-OSS experts: tensor '" + t.name + "' has shape " + t.shape_string() + ", expected " +
                          shape_text(dims) + " (" + std::string(why) + ")");
}

struct Derived {
  std::string name;
  DType dtype;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
};

Derived make(const std::string& name, DType dtype, int64_t rows, int64_t cols) {
  return {name, dtype, rows, cols, std::vector<uint8_t>(static_cast<size_t>(rows * cols) * dtype_size(dtype))};
}

// Dense fused experts: gate/up de-interleaved and both matrices transposed.
Status split_dense(const TensorView& gu, const TensorView& dn, const std::string& prefix, std::vector<Derived>* out) {
  if (gu.shape.size() != 3 || gu.shape[2] % 2 != 0 || gu.shape[2] == 0)
    return invalid_argument("GPT-OSS experts: tensor '" + gu.name + "' has shape " + gu.shape_string() +
                            ", expected [experts, hidden, 2 x intermediate]");
  const int64_t E = gu.shape[0], H = gu.shape[1], I = gu.shape[2] / 2;
  SUBMOE_RETURN_IF_ERROR(expect_shape(dn, {E, I, H}, "experts, intermediate, hidden as gate_up_proj implies"));
  for (const TensorView* t : {&gu, &dn}) {
    if (t->dtype != DType::kF32 && t->dtype != DType::kBF16 && t->dtype != DType::kF16)
      return invalid_argument("GPT-OSS experts: tensor '" + t->name + "' has dtype " +
                              std::string(dtype_name(t->dtype)) + "; fused experts are read as F32, BF16 or F16");
  }
  if (dn.dtype != gu.dtype)
    return invalid_argument("GPT-OSS experts: '" + dn.name + "' and '" + gu.name + "' differ in dtype");
  const size_t es = dtype_size(gu.dtype);
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = prefix + std::to_string(e) + ".";
    Derived g = make(p + "gate_proj.weight", gu.dtype, I, H), u = make(p + "up_proj.weight", gu.dtype, I, H),
            d = make(p + "down_proj.weight", gu.dtype, H, I);
    const uint8_t* src = gu.data + static_cast<size_t>(e * H * 2 * I) * es;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < I; ++i) {
        const uint8_t* pair = src + static_cast<size_t>(h * 2 * I + 2 * i) * es;
        std::memcpy(&g.bytes[static_cast<size_t>(i * H + h) * es], pair, es);
        std::memcpy(&u.bytes[static_cast<size_t>(i * H + h) * es], pair + es, es);
      }
    const uint8_t* dsrc = dn.data + static_cast<size_t>(e * I * H) * es;
    for (int64_t i = 0; i < I; ++i)
      for (int64_t h = 0; h < H; ++h)
        std::memcpy(&d.bytes[static_cast<size_t>(h * I + i) * es], dsrc + static_cast<size_t>(i * H + h) * es, es);
    out->push_back(std::move(g));
    out->push_back(std::move(u));
    out->push_back(std::move(d));
  }
  return Status::ok();
}

// Row `row` of matrix `e` of an MXFP4 pair ([E, rows, cols/32, 16] blocks,
// [E, rows, cols/32] scales) as BF16 into dst[cols].
Status dequantize_row(const TensorView& blocks, const TensorView& scales, int64_t e, int64_t row, int64_t rows,
                      int64_t cols, bf16_t* dst) {
  const int64_t nb = cols / kMxBlock;
  const uint8_t* b = blocks.data + static_cast<size_t>((e * rows + row) * nb * 16);
  const uint8_t* s = scales.data + static_cast<size_t>((e * rows + row) * nb);
  for (int64_t k = 0; k < nb; ++k) {
    if (s[k] == 0xFF)
      return corrupt_data("GPT-OSS experts: tensor '" + scales.name + "' holds the E8M0 NaN scale 255 (matrix " +
                          std::to_string(e) + ", row " + std::to_string(row) + ", block " + std::to_string(k) + ")");
    const float scale = std::ldexp(1.0f, static_cast<int>(s[k]) - 127);
    for (int64_t j = 0; j < 16; ++j) {
      const uint8_t byte = b[k * 16 + j];
      const float lo = kFp4[byte & 0xF] * scale, hi = kFp4[byte >> 4] * scale;
      const bf16_t blo = float_to_bf16(lo), bhi = float_to_bf16(hi);
      if (!std::isfinite(bf16_to_float(blo)) || !std::isfinite(bf16_to_float(bhi)))
        return corrupt_data("GPT-OSS experts: tensor '" + scales.name + "' scale " + std::to_string(s[k]) +
                            " overflows (matrix " + std::to_string(e) + ", row " + std::to_string(row) + ")");
      dst[k * kMxBlock + 2 * j] = blo;
      dst[k * kMxBlock + 2 * j + 1] = bhi;
    }
  }
  return Status::ok();
}

Status check_mx_pair(const TensorView& blocks, const TensorView& scales) {
  if (blocks.dtype != DType::kU8 || scales.dtype != DType::kU8)
    return invalid_argument("GPT-OSS MXFP4 experts: '" + blocks.name + "' and '" + scales.name + "' must be U8");
  if (blocks.shape.size() != 4 || blocks.shape[3] != 16)
    return invalid_argument("GPT-OSS MXFP4 experts: tensor '" + blocks.name + "' has shape " + blocks.shape_string() +
                            ", expected [experts, rows, cols / 32, 16]");
  return expect_shape(scales, {blocks.shape[0], blocks.shape[1], blocks.shape[2]},
                      "one E8M0 scale per 32-element block of '" + blocks.name + "'");
}

Status split_mxfp4(const TensorView& gub, const TensorView& gus, const TensorView& dnb, const TensorView& dns,
                   const std::string& prefix, std::vector<Derived>* out) {
  SUBMOE_RETURN_IF_ERROR(check_mx_pair(gub, gus));
  SUBMOE_RETURN_IF_ERROR(check_mx_pair(dnb, dns));
  const int64_t E = gub.shape[0], two_i = gub.shape[1], H = gub.shape[2] * kMxBlock;
  if (two_i % 2 != 0 || two_i == 0)
    return invalid_argument("GPT-OSS MXFP4 experts: tensor '" + gub.name + "' has " + std::to_string(two_i) +
                            " rows; gate and up interleave, so it must be even");
  const int64_t I = two_i / 2;
  if (I % kMxBlock != 0)
    return invalid_argument("GPT-OSS MXFP4 experts: intermediate size " + std::to_string(I) +
                            " is not a multiple of 32, so down_proj cannot be MXFP4 blocks");
  SUBMOE_RETURN_IF_ERROR(expect_shape(dnb, {E, H, I / kMxBlock, 16}, "experts, hidden, intermediate / 32, 16"));
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = prefix + std::to_string(e) + ".";
    Derived g = make(p + "gate_proj.weight", DType::kBF16, I, H), u = make(p + "up_proj.weight", DType::kBF16, I, H),
            d = make(p + "down_proj.weight", DType::kBF16, H, I);
    auto* gp = reinterpret_cast<bf16_t*>(g.bytes.data());
    auto* up = reinterpret_cast<bf16_t*>(u.bytes.data());
    auto* dp = reinterpret_cast<bf16_t*>(d.bytes.data());
    for (int64_t i = 0; i < I; ++i) {
      SUBMOE_RETURN_IF_ERROR(dequantize_row(gub, gus, e, 2 * i, two_i, H, gp + i * H));
      SUBMOE_RETURN_IF_ERROR(dequantize_row(gub, gus, e, 2 * i + 1, two_i, H, up + i * H));
    }
    for (int64_t h = 0; h < H; ++h) SUBMOE_RETURN_IF_ERROR(dequantize_row(dnb, dns, e, h, H, I, dp + h * I));
    out->push_back(std::move(g));
    out->push_back(std::move(u));
    out->push_back(std::move(d));
  }
  return Status::ok();
}

}  // namespace

const TensorView* SafetensorsModel::add_derived(TensorView view, std::vector<uint8_t> bytes) {
  derived_bytes_.push_back(std::move(bytes));
  view.data = derived_bytes_.back().data();
  view.nbytes = derived_bytes_.back().size();
  view.file.clear();
  view.file_offset = 0;
  derived_views_.push_back(std::move(view));
  const TensorView* t = &derived_views_.back();
  tensors_.push_back(t);
  by_name_[t->name] = t;
  return t;
}

void SafetensorsModel::remove_tensors(const std::vector<const TensorView*>& gone) {
  for (const TensorView* t : gone) {
    by_name_.erase(t->name);
    std::erase(tensors_, t);
  }
}

Status SafetensorsModel::split_transposed_fused_experts() {
  // Collect first: the listing changes below.
  std::vector<std::string> prefixes;
  for (const TensorView* t : tensors_) {
    std::string_view name = t->name;
    if (name.ends_with(kBlocksSuffix)) name.remove_suffix(kBlocksSuffix.size());
    if (!name.ends_with(kGateUp)) continue;
    prefixes.emplace_back(name.substr(0, name.size() - kGateUp.size()));
  }
  for (const std::string& block : prefixes) {
    const std::string experts = block + "experts.";
    const TensorView* gu = find(experts + "gate_up_proj");
    const TensorView* gub = find(experts + "gate_up_proj_blocks");
    if (gu == nullptr && gub == nullptr) continue;  // listed twice (dense and MXFP4): done already
    // Only GPT-OSS has expert biases; a fused gate_up_proj without one is
    // transformers v5's untransposed [E, 2I, H] layout (the weight loader's).
    if (gu != nullptr && find(experts + "gate_up_proj_bias") == nullptr) continue;
    std::vector<Derived> derived;
    std::vector<const TensorView*> sources;
    if (gub != nullptr) {
      const TensorView* gus = find(experts + "gate_up_proj_scales");
      const TensorView* dnb = find(experts + "down_proj_blocks");
      const TensorView* dns = find(experts + "down_proj_scales");
      for (const auto& [t, n] : {std::pair{gus, "gate_up_proj_scales"}, {dnb, "down_proj_blocks"}, {dns, "down_proj_scales"}})
        if (t == nullptr)
          return not_found("GPT-OSS MXFP4 experts: '" + gub->name + "' has no companion tensor '" + experts + n + "'");
      SUBMOE_RETURN_IF_ERROR(split_mxfp4(*gub, *gus, *dnb, *dns, experts, &derived));
      sources = {gub, gus, dnb, dns};
    } else {
      const TensorView* dn = find(experts + "down_proj");
      if (dn == nullptr) return not_found("GPT-OSS experts: '" + gu->name + "' has no companion '" + experts + "down_proj'");
      SUBMOE_RETURN_IF_ERROR(split_dense(*gu, *dn, experts, &derived));
      sources = {gu, dn};
    }
    for (const Derived& d : derived)
      if (find(d.name) != nullptr)
        return corrupt_data("GPT-OSS experts: the checkpoint holds both fused experts under '" + experts +
                            "' and the per-expert tensor '" + d.name + "'");
    remove_tensors(sources);
    for (Derived& d : derived) {
      TensorView v;
      v.name = d.name;
      v.dtype = d.dtype;
      v.shape = {d.rows, d.cols};
      add_derived(std::move(v), std::move(d.bytes));
    }
  }
  return Status::ok();
}

}  // namespace submoe::io
