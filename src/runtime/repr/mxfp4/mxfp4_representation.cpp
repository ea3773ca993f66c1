// mxfp4 as a representation. Fields per matrix: blocks U8 [rows, cols / 2]
// (two FP4 codes a byte, even column low) and scales U8 [rows, cols / 32]
// (E8M0). No parameters, no shared tensors. The encoder fits each group's
// scale from its current values when GPTQ reaches it (group width 32), so RTN
// and GPTQ both work, and re-encoding a matrix that is already MXFP4 (a hub
// GPT-OSS checkpoint) gives back exactly its values.
#include "runtime/repr/mxfp4/mxfp4_representation.h"

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/mxfp4.h"
#include "submoe/kernels/mxfp4_gemv.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "mxfp4";
constexpr std::string_view kFieldBlocks = "blocks";
using kernels::kMxfp4Block;

class Mxfp4Encoder final : public MatrixEncoder {
 public:
  Mxfp4Encoder(uint32_t rows, uint32_t cols)
      : rows_(rows), cols_(cols), codes_(size_t{rows} * cols), scales_(size_t{rows} * (cols / kMxfp4Block)) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return kMxfp4Block; }
  void begin_row(size_t r, std::span<const float> original) override {
    // RTN (no begin_group from the solver) still gets its scales.
    for (size_t c = 0; c < cols_; c += kMxfp4Block) begin_group(r, c, original.subspan(c, kMxfp4Block));
  }
  void begin_group(size_t r, size_t c, std::span<const float> current) override {
    scales_[r * (cols_ / kMxfp4Block) + c / kMxfp4Block] = mxfp4::group_scale(current.first(kMxfp4Block));
  }
  void quantize(size_t r, size_t c, const float* v, float* rec) override {
    const uint8_t s = scales_[r * (cols_ / kMxfp4Block) + c / kMxfp4Block];
    const uint8_t code = mxfp4::quantize_value(*v, s);
    codes_[r * cols_ + c] = code;
    *rec = mxfp4::fp4_e2m1_value(code) * mxfp4::e8m0_value(s);
  }
  std::vector<float> dequantize() const override { return mxfp4::decode(matrix()); }
  Result<std::vector<PackedTensor>> pack() const override {
    const mxfp4::Mxfp4Matrix m = matrix();
    const auto r = static_cast<int64_t>(rows_);
    return std::vector<PackedTensor>{
        {std::string(kFieldBlocks), io::DType::kU8, {r, static_cast<int64_t>(cols_ / 2)}, m.blocks},
        {std::string(artifact::kFieldScales), io::DType::kU8, {r, static_cast<int64_t>(cols_ / kMxfp4Block)},
         m.scales}};
  }

 private:
  mxfp4::Mxfp4Matrix matrix() const {
    mxfp4::Mxfp4Matrix m;
    m.rows = rows_;
    m.cols = cols_;
    m.blocks.resize(codes_.size() / 2);
    for (size_t i = 0; i < m.blocks.size(); ++i)
      m.blocks[i] = static_cast<uint8_t>(codes_[2 * i] | (codes_[2 * i + 1] << 4));
    m.scales = scales_;
    return m;
  }

  uint32_t rows_, cols_;
  std::vector<uint8_t> codes_, scales_;
};

class Mxfp4Codec final : public MatrixCodec {
 public:
  const Representation& representation() const override { return mxfp4_representation(); }
  nlohmann::json record() const override { return {{"representation", std::string(kName)}}; }
  std::string summary() const override { return "mxfp4 (FP4 E2M1, E8M0 scale per 32, 4.25 bits)"; }
  std::string grid_name() const override { return "mxfp4"; }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "scalar-fp-microscaling";
    c.packing_layout = "ocp-mxfp4-v1: blocks u8 [rows, cols/2] E2M1, even column in the low nibble; scales u8 "
                       "[rows, cols/32] E8M0";
    c.required_kernel = "mxfp4_gemv";
    c.op.scale = "e8m0";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return mxfp4::check_shape(rows, cols); }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    return {FieldSpec{std::string(kFieldBlocks), io::DType::kU8, {r, static_cast<int64_t>(cols / 2)}},
            FieldSpec{std::string(artifact::kFieldScales), io::DType::kU8, {r, static_cast<int64_t>(cols / kMxfp4Block)}}};
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(mxfp4::Mxfp4Matrix m, matrix(rows, cols, f));
    return mxfp4::decode(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(mxfp4::Mxfp4Matrix m, matrix(rows, cols, f));
    if (mode == ExecutionMode::kReferenceDecode)
      return make_reference_decoded_linear(mxfp4::decode(m), rows, cols, "mxfp4");
    return model::make_mxfp4_linear(std::move(m), execution_activations(mode), execution_quant(mode));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new Mxfp4Encoder(rows, cols));
  }

 private:
  static Result<mxfp4::Mxfp4Matrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) {
    if (f.size() != 2) return corrupt_data("mxfp4: " + std::to_string(f.size()) + " fields given, 2 expected");
    return mxfp4::from_fields(rows, cols, as_u8(f[0]), as_u8(f[1]));
  }
};

class Mxfp4Representation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "mxfp4: OCP MXFP4, FP4 E2M1 codes with an E8M0 scale per 32 columns, 4.25 bits (GPT-OSS's format)";
  }
  std::optional<ReprOptions> from_grid_name(std::string_view grid) const override {
    if (grid != kName) return std::nullopt;
    return ReprOptions{std::string(kName)};
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_RETURN_IF_ERROR(refuse_extra_options(o, kName));
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.bits && *o.bits != 4.25)
      return invalid_argument("mxfp4 stores 4.25 bits per weight (4-bit codes, one 8-bit scale per 32); --bits " +
                              std::to_string(*o.bits) + " does not apply");
    if (o.group_size && *o.group_size != kMxfp4Block)
      return invalid_argument("mxfp4 scales groups of 32 columns; --group-size " + std::to_string(*o.group_size) +
                              " does not apply");
    return codec();
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation"}));
    return codec();
  }

 private:
  static std::shared_ptr<const MatrixCodec> codec() {
    static const std::shared_ptr<const MatrixCodec> c = std::make_shared<Mxfp4Codec>();
    return c;
  }
};

}  // namespace

const Representation& mxfp4_representation() {
  static const Mxfp4Representation r;
  return r;
}

}  // namespace submoe::runtime::repr
