// int: bits in {2, 3, 4}, one (scale, zero) per row or per group of 32/64/128
// columns. Fields per matrix: qweight U8 [rows, row_bytes], scales F16
// [rows, groups], zeros U8 [rows, groups] (codec/int_packed.h).
#include "runtime/repr/int/int_representation.h"

#include <cmath>
#include <cstdio>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/int_packed.h"
#include "submoe/quant/grid.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "int";

class IntEncoder final : public MatrixEncoder {
 public:
  IntEncoder(uint32_t bits, uint32_t group_size, uint32_t rows, uint32_t cols)
      : grid_(quant::GridSpec::integer(static_cast<int>(bits), group_size), rows, cols, &q_) {}
  size_t rows() const override { return grid_.rows(); }
  size_t cols() const override { return grid_.cols(); }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return grid_.group_width(); }
  void begin_row(size_t r, std::span<const float> original) override { grid_.begin_row(r, original); }
  void begin_group(size_t r, size_t c, std::span<const float> current) override { grid_.begin_group(r, c, current); }
  void quantize(size_t r, size_t c, const float* v, float* rec) override { grid_.quantize(r, c, v, rec); }
  std::vector<float> dequantize() const override { return q_.dequantize(); }
  Result<std::vector<PackedTensor>> pack() const override {
    const auto rows = static_cast<uint32_t>(q_.rows), cols = static_cast<uint32_t>(q_.cols);
    SUBMOE_ASSIGN_OR_RETURN(intn::PackedIntMatrix m,
                            intn::pack_int_codes(q_.codes, rows, cols, static_cast<uint32_t>(q_.grid.bits),
                                                 static_cast<uint32_t>(q_.grid.group_size), q_.scales, q_.zeros));
    const auto groups = static_cast<int64_t>(m.view().groups());
    std::vector<PackedTensor> out;
    out.push_back({std::string(artifact::kFieldQweight), io::DType::kU8,
                   {static_cast<int64_t>(rows), static_cast<int64_t>(m.row_bytes())},
                   bytes_of(m.qweight(), m.qweight().size())});
    out.push_back({std::string(artifact::kFieldScales), io::DType::kF16, {static_cast<int64_t>(rows), groups},
                   bytes_of(m.scales(), m.scales().size())});
    out.push_back({std::string(artifact::kFieldZeros), io::DType::kU8, {static_cast<int64_t>(rows), groups},
                   bytes_of(m.zeros(), m.zeros().size())});
    return out;
  }

 private:
  quant::QuantizedMatrix q_;
  quant::GridQuantizer grid_;
};

class IntCodec final : public MatrixCodec {
 public:
  IntCodec(uint32_t bits, uint32_t group_size) : bits_(bits), group_size_(group_size) {}

  const Representation& representation() const override { return int_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)}, {"bits", bits_}, {"group_size", group_size_}};
  }
  std::string summary() const override {
    char buf[64];
    if (group_size_ == 0)
      std::snprintf(buf, sizeof buf, "int (%u bits, per row)", bits_);
    else
      std::snprintf(buf, sizeof buf, "int (%u bits, group %u)", bits_, group_size_);
    return buf;
  }
  std::string grid_name() const override {
    return quant::GridSpec::integer(static_cast<int>(bits_), group_size_).name();
  }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "scalar-affine";
    c.packing_layout = "int-lsb-bitstream-v1: qweight u8 [rows, row_bytes], codes LSB-first, rows 32-bit padded; "
                       "scales f16 and zeros u8 [rows, groups]";
    c.required_kernel = "int_gemv";
    c.op.scale = "f16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override {
    if (rows == 0 || cols == 0) return invalid_argument("int: empty matrix");
    return Status::ok();  // the format allows a partial last group
  }
  Status check_encodable(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    return quant::GridSpec::integer(static_cast<int>(bits_), group_size_).validate(cols);
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    const auto row_bytes = static_cast<int64_t>(intn::int_row_bytes(cols, bits_));
    const auto groups = static_cast<int64_t>(intn::int_groups_per_row(cols, group_size_));
    return {FieldSpec{std::string(artifact::kFieldQweight), io::DType::kU8, {r, row_bytes}},
            FieldSpec{std::string(artifact::kFieldScales), io::DType::kF16, {r, groups}},
            FieldSpec{std::string(artifact::kFieldZeros), io::DType::kU8, {r, groups}}};
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(intn::PackedIntMatrix m, matrix(rows, cols, f));
    return intn::decode_int_to_float(m.view());
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(intn::PackedIntMatrix m, matrix(rows, cols, f));
    if (mode != ExecutionMode::kReferenceDecode)
      return make_int_linear(std::move(m), kernels::best_int_gemv_kernels(), execution_activations(mode),
                             execution_quant(mode));
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, intn::decode_int_to_float(m.view()));
    return make_reference_decoded_linear(std::move(w), rows, cols, "int" + std::to_string(bits_));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new IntEncoder(bits_, group_size_, rows, cols));
  }

 private:
  Result<intn::PackedIntMatrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) const {
    if (f.size() != 3) return corrupt_data("int: " + std::to_string(f.size()) + " fields given, 3 expected");
    const auto* qweight = reinterpret_cast<const uint8_t*>(f[0].data());
    const std::vector<uint16_t> scales = copy_as<uint16_t>(f[1]);
    const auto* zeros = reinterpret_cast<const uint8_t*>(f[2].data());
    return intn::PackedIntMatrix::from_parts(rows, cols, bits_, group_size_, {qweight, f[0].size()}, scales,
                                             {zeros, f[2].size()});
  }

  uint32_t bits_, group_size_;
};

class IntRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "int: asymmetric 2/3/4-bit grid per row or per group of 32/64/128 columns (--bits, --group-size)";
  }
  // "int2", "int3", "int4".
  std::optional<ReprOptions> from_grid_name(std::string_view grid) const override {
    if (grid.size() != 4 || grid.substr(0, 3) != "int" || grid[3] < '2' || grid[3] > '4') return std::nullopt;
    return ReprOptions{std::string(kName), static_cast<double>(grid[3] - '0')};
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_RETURN_IF_ERROR(refuse_extra_options(o, kName));
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (!o.bits) return invalid_argument("int needs --bits 2, 3 or 4");
    const double b = *o.bits;
    if (!(b == 2.0 || b == 3.0 || b == 4.0))
      return invalid_argument("the artifact stores int2, int3 or int4 experts, not --bits " + std::to_string(b));
    const uint32_t gs = o.group_size.value_or(0);
    SUBMOE_RETURN_IF_ERROR(intn::check_int_params(static_cast<uint32_t>(b), gs));
    return std::shared_ptr<const MatrixCodec>(new IntCodec(static_cast<uint32_t>(b), gs));
  }
  RateLadder rate_ladder(const ReprOptions& base) const override {
    if (!base.bits) return {};
    const int b = static_cast<int>(*base.bits);
    return {2 - b, 4 - b, 1.0};  // int2, int3, int4
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "bits", "group_size"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t bits, k.integer("bits"));
    if (bits < intn::kMinBits || bits > intn::kMaxBits)
      return k.bad("bits", "= " + std::to_string(bits) + ", must be 2, 3 or 4");
    SUBMOE_ASSIGN_OR_RETURN(const int64_t gs, k.integer("group_size"));
    if (gs != 0 && gs != 32 && gs != 64 && gs != 128)
      return k.bad("group_size", "= " + std::to_string(gs) + ", must be 0, 32, 64 or 128");
    return std::shared_ptr<const MatrixCodec>(new IntCodec(static_cast<uint32_t>(bits), static_cast<uint32_t>(gs)));
  }
};

}  // namespace

const Representation& int_representation() {
  static const IntRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
