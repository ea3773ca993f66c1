// nf4 as a representation. Record: {"representation": "nf4", "block_size": B,
// "scales": "dq8" | "fp16" | "fp32"}. Fields per matrix: codes U8 [rows, cols / 2]
// (first column in the high nibble), absmax [rows, cols / B] (F32, F16, or U8
// codes of the dynamic map under dq8), and under dq8 absmax2 F32
// [ceil(rows cols / B / 256)] and absmax_offset F32 [1]. No shared tensors.
// The encoder takes each block's absmax from its current values when GPTQ
// reaches it (group width B), so RTN reproduces bitsandbytes' quantize_4bit and
// GPTQ feeds the codes' error back; under dq8 GPTQ sees the float32 absmax and
// the double quantization happens at pack time, as in QLoRA.
#include "runtime/repr/nf4/nf4_representation.h"

#include <cmath>
#include <cstring>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/nf4.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "nf4";
constexpr std::string_view kFieldAbsmax = "absmax";
constexpr std::string_view kFieldAbsmax2 = "absmax2";
constexpr std::string_view kFieldOffset = "absmax_offset";

struct Nf4Params {
  uint32_t block = nf4::kDefaultBlock;
  nf4::Nf4Scales scales = nf4::Nf4Scales::kDq8;
};

Result<nf4::Nf4Scales> parse_scales(const std::string& s) {
  for (auto v : {nf4::Nf4Scales::kDq8, nf4::Nf4Scales::kF16, nf4::Nf4Scales::kF32})
    if (s == nf4::scales_name(v)) return v;
  return invalid_argument("nf4 scales '" + s + "': expected dq8 (QLoRA's double quantization), fp16 or fp32");
}

io::DType absmax_dtype(nf4::Nf4Scales s) {
  return s == nf4::Nf4Scales::kF32 ? io::DType::kF32 : s == nf4::Nf4Scales::kF16 ? io::DType::kF16 : io::DType::kU8;
}

class Nf4Encoder final : public MatrixEncoder {
 public:
  Nf4Encoder(uint32_t rows, uint32_t cols, Nf4Params p)
      : rows_(rows), cols_(cols), p_(p), codes_(size_t{rows} * cols), absmax_(size_t{rows} * (cols / p.block)) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return p_.block; }
  void begin_row(size_t r, std::span<const float> original) override {
    // RTN (no begin_group from the solver) still gets its absmaxes.
    for (size_t c = 0; c < cols_; c += p_.block) begin_group(r, c, original.subspan(c, p_.block));
  }
  void begin_group(size_t r, size_t c, std::span<const float> current) override {
    absmax_[r * (cols_ / p_.block) + c / p_.block] = nf4::block_absmax(current.first(p_.block), p_.scales);
  }
  void quantize(size_t r, size_t c, const float* v, float* rec) override {
    const float a = absmax_[r * (cols_ / p_.block) + c / p_.block];
    const uint8_t code = nf4::quantize_value(*v, a);
    codes_[r * cols_ + c] = code;
    *rec = nf4::kNf4[code] * a;
  }
  std::vector<float> dequantize() const override { return nf4::decode(matrix()); }
  Result<std::vector<PackedTensor>> pack() const override {
    const nf4::Nf4Matrix m = matrix();
    const auto r = static_cast<int64_t>(rows_), nb = static_cast<int64_t>(cols_ / p_.block);
    std::vector<PackedTensor> out;
    out.push_back({std::string(artifact::kFieldCodes), io::DType::kU8, {r, static_cast<int64_t>(cols_ / 2)}, m.codes});
    switch (p_.scales) {
      case nf4::Nf4Scales::kF32:
        out.push_back({std::string(kFieldAbsmax), io::DType::kF32, {r, nb},
                       bytes_of(m.absmax_f32)});
        break;
      case nf4::Nf4Scales::kF16:
        out.push_back({std::string(kFieldAbsmax), io::DType::kF16, {r, nb},
                       bytes_of(m.absmax_f16)});
        break;
      case nf4::Nf4Scales::kDq8:
        out.push_back({std::string(kFieldAbsmax), io::DType::kU8, {r, nb}, m.absmax_codes});
        out.push_back({std::string(kFieldAbsmax2), io::DType::kF32, {static_cast<int64_t>(m.absmax2.size())},
                       bytes_of(m.absmax2)});
        out.push_back({std::string(kFieldOffset), io::DType::kF32, {1}, bytes_of(std::vector<float>{m.offset})});
        break;
    }
    return out;
  }

 private:
  nf4::Nf4Matrix matrix() const {
    nf4::Nf4Matrix m;
    m.rows = rows_;
    m.cols = cols_;
    m.block = p_.block;
    m.scales = p_.scales;
    m.codes = nf4::pack_codes(codes_);
    switch (p_.scales) {
      case nf4::Nf4Scales::kF32: m.absmax_f32 = absmax_; break;
      case nf4::Nf4Scales::kF16:
        m.absmax_f16.resize(absmax_.size());
        for (size_t b = 0; b < absmax_.size(); ++b) m.absmax_f16[b] = float_to_f16_bits(absmax_[b]);  // exact
        break;
      case nf4::Nf4Scales::kDq8: nf4::double_quantize(absmax_, &m); break;
    }
    return m;
  }

  uint32_t rows_, cols_;
  Nf4Params p_;
  std::vector<uint8_t> codes_;
  std::vector<float> absmax_;  // as stored (fp16-rounded under fp16), float32 under dq8
};

class Nf4Codec final : public MatrixCodec {
 public:
  explicit Nf4Codec(Nf4Params p) : p_(p) {}
  const Representation& representation() const override { return nf4_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"block_size", p_.block},
            {"scales", std::string(nf4::scales_name(p_.scales))}};
  }
  std::string summary() const override {
    return "nf4 (block " + std::to_string(p_.block) + ", " + std::string(nf4::scales_name(p_.scales)) +
           " absmax, " + bits_text() + " bits)";
  }
  std::string grid_name() const override {
    return "nf4-g" + std::to_string(p_.block) + "-" + std::string(nf4::scales_name(p_.scales));
  }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "scalar-lut";
    c.packing_layout = "bnb-nf4-v1: codes u8 [rows, cols/2], first column in the high nibble, NF4 table; absmax "
                       "per block of block_size columns";
    c.required_kernel = "nf4_gemv";
    c.op.scale = p_.scales == nf4::Nf4Scales::kF32   ? "f32"
                 : p_.scales == nf4::Nf4Scales::kF16 ? "f16"
                                                      : "dq8 (u8 dynamic map, f32 absmax2 per 256 blocks, f32 offset)";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return nf4::check_shape(rows, cols, p_.block); }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows), nb = static_cast<int64_t>(cols / p_.block);
    std::vector<FieldSpec> f{FieldSpec{std::string(artifact::kFieldCodes), io::DType::kU8, {r, static_cast<int64_t>(cols / 2)}},
                             FieldSpec{std::string(kFieldAbsmax), absmax_dtype(p_.scales), {r, nb}}};
    if (p_.scales == nf4::Nf4Scales::kDq8) {
      f.push_back(FieldSpec{std::string(kFieldAbsmax2), io::DType::kF32,
                            {static_cast<int64_t>(nf4::dq8_groups(size_t{rows} * (cols / p_.block)))}});
      f.push_back(FieldSpec{std::string(kFieldOffset), io::DType::kF32, {1}});
    }
    return f;
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(nf4::Nf4Matrix m, matrix(rows, cols, f));
    return nf4::decode(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(nf4::Nf4Matrix m, matrix(rows, cols, f));
    if (mode == ExecutionMode::kReferenceDecode)
      return make_reference_decoded_linear(nf4::decode(m), rows, cols, "nf4");
    return model::make_nf4_linear(std::move(m), execution_activations(mode), execution_quant(mode));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new Nf4Encoder(rows, cols, p_));
  }

 private:
  std::string bits_text() const {
    const double b = p_.block;
    const double bits = p_.scales == nf4::Nf4Scales::kF32   ? 4 + 32 / b
                        : p_.scales == nf4::Nf4Scales::kF16 ? 4 + 16 / b
                                                             : 4 + 8 / b + 32 / (b * nf4::kDq8Group);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", bits);
    return buf;
  }
  Result<nf4::Nf4Matrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) const {
    const size_t want = p_.scales == nf4::Nf4Scales::kDq8 ? 4 : 2;
    if (f.size() != want)
      return corrupt_data("nf4: " + std::to_string(f.size()) + " fields given, " + std::to_string(want) + " expected");
    nf4::Nf4Fields fields{as_u8(f[0]), as_u8(f[1]), {}, {}};
    if (want == 4) {
      fields.absmax2 = as_u8(f[2]);
      fields.offset = as_u8(f[3]);
    }
    return nf4::from_fields(rows, cols, p_.block, p_.scales, fields);
  }

  Nf4Params p_;
};

class Nf4Representation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "nf4: QLoRA's NormalFloat-4 (bitsandbytes' layout), absmax per block of 64 columns (--group-size 32..4096), "
           "double-quantized (4.127 bits) or --repr-opt scales=fp16|fp32 (4.25 / 4.5 bits)";
  }
  std::optional<ReprOptions> from_grid_name(std::string_view grid) const override {
    if (grid != kName) return std::nullopt;
    return ReprOptions{std::string(kName)};
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.bits && *o.bits != 4)
      return invalid_argument("nf4 stores 4-bit codes; --bits " + std::to_string(*o.bits) +
                              " does not apply (the absmaxes add 0.127 to 0.5 bits: --repr-opt scales=...)");
    Nf4Params p;
    if (o.group_size) {
      SUBMOE_RETURN_IF_ERROR(nf4::check_block(*o.group_size));
      p.block = *o.group_size;
    }
    for (const auto& [key, value] : o.extra) {
      if (key == "scales") {
        SUBMOE_ASSIGN_OR_RETURN(p.scales, parse_scales(value));
      } else {
        return invalid_argument("--repr-opt " + key + " is not an nf4 option (scales=dq8|fp16|fp32)");
      }
    }
    return std::shared_ptr<const MatrixCodec>(std::make_shared<Nf4Codec>(p));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "block_size", "scales"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t block, k.integer("block_size"));
    if (block < 0 || block > 4096 || !nf4::check_block(static_cast<uint32_t>(block)).is_ok())
      return k.bad("block_size", "must be a power of two from 32 to 4096, got " + std::to_string(block));
    SUBMOE_ASSIGN_OR_RETURN(const std::string scales, k.string("scales"));
    Result<nf4::Nf4Scales> s = parse_scales(scales);
    if (!s.is_ok()) return k.bad("scales", "must be dq8, fp16 or fp32, got '" + scales + "'");
    return std::shared_ptr<const MatrixCodec>(std::make_shared<Nf4Codec>(Nf4Params{static_cast<uint32_t>(block), *s}));
  }
};

}  // namespace

const Representation& nf4_representation() {
  static const Nf4Representation r;
  return r;
}

}  // namespace submoe::runtime::repr
