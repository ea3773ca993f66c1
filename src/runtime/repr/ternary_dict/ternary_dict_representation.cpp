// ternary_dict: per-row {w_min, 0, w_max} grids coded with a shared 2^16-entry
// dictionary (QMoE). Fields per matrix: row_offsets I32 [rows+1], scales BF16
// [rows, 2], codes U16 [n] (n even; padding past row_offsets[rows] is zero).
// Shared: the dictionary, U64 [65536] (docs/format.md 9.3).
#include "runtime/repr/ternary_dict/ternary_dict_representation.h"

#include <algorithm>
#include <cstdio>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/quant/grid.h"
#include "submoe/runtime/artifact_format.h"
#include "submoe/runtime/ternary_codebook.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "ternary_dict";

std::vector<uint8_t> dictionary_bytes(const ternary::TernaryDictionary& dict) {
  std::vector<uint8_t> out(ternary::kDictEntries * 8);
  const ternary::DictEntry* e = dict.entries();
  for (size_t i = 0; i < ternary::kDictEntries; ++i) {
    const uint64_t v = uint64_t{e[i].word[0]} | (uint64_t{e[i].word[1]} << 32);
    for (int b = 0; b < 8; ++b) out[i * 8 + static_cast<size_t>(b)] = static_cast<uint8_t>(v >> (8 * b));
  }
  return out;
}

Result<std::shared_ptr<const TernaryCodebook>> load_dictionary(const io::TensorView* t, const std::string& name,
                                                               ternary::DictKind kind, double p0) {
  if (t == nullptr) return not_found("model.safetensors has no dictionary tensor '" + name + "'");
  const std::vector<int64_t> want = {static_cast<int64_t>(ternary::kDictEntries)};
  if (t->dtype != io::DType::kU64 || t->shape != want)
    return corrupt_data("dictionary tensor '" + t->name + "' is " + std::string(io::dtype_name(t->dtype)) + " " +
                        t->shape_string() + ", the format stores U64 [65536]");
  std::vector<ternary::DictEntry> entries(ternary::kDictEntries);
  for (size_t i = 0; i < entries.size(); ++i) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(t->data[i * 8 + static_cast<size_t>(b)]) << (8 * b);
    entries[i].word[0] = static_cast<uint32_t>(v);
    entries[i].word[1] = static_cast<uint32_t>(v >> 32);
  }
  auto cb = TernaryCodebook::create(kind, p0, entries);
  if (!cb.is_ok()) return cb.status().with_context("dictionary tensor '" + t->name + "'");
  return cb;
}

class TernaryDictCodec;

// GPTQ onto QMoE's grid (levels from the original rows), packed with the dictionary.
class TernaryEncoder final : public MatrixEncoder {
 public:
  TernaryEncoder(std::shared_ptr<const TernaryCodebook> cb, uint32_t rows, uint32_t cols)
      : codebook_(std::move(cb)), grid_(quant::GridSpec::ternary(), rows, cols, &q_) {}
  size_t rows() const override { return grid_.rows(); }
  size_t cols() const override { return grid_.cols(); }
  size_t block_width() const override { return 1; }
  void begin_row(size_t r, std::span<const float> original) override { grid_.begin_row(r, original); }
  void quantize(size_t r, size_t c, const float* v, float* rec) override { grid_.quantize(r, c, v, rec); }
  std::vector<float> dequantize() const override { return q_.dequantize(); }
  Result<std::vector<PackedTensor>> pack() const override {
    const auto rows = static_cast<uint32_t>(q_.rows), cols = static_cast<uint32_t>(q_.cols);
    SUBMOE_ASSIGN_OR_RETURN(ternary::PackedTernaryMatrix m,
                            ternary::encode_ternary(q_.codes, rows, cols, q_.ternary_scales, codebook_->dictionary()));
    const size_t codes = m.num_codes() + (m.num_codes() % 2);  // even: keeps the next tensor 4-byte aligned
    std::vector<PackedTensor> out;
    out.push_back({std::string(artifact::kFieldRowOffsets), io::DType::kI32, {static_cast<int64_t>(rows) + 1},
                   bytes_of(m.row_offsets(), rows + 1)});
    out.push_back({std::string(artifact::kFieldScales), io::DType::kBF16, {static_cast<int64_t>(rows), 2},
                   bytes_of(m.scales(), rows)});
    out.push_back({std::string(artifact::kFieldCodes), io::DType::kU16, {static_cast<int64_t>(codes)},
                   bytes_of(m.codes(), codes)});
    return out;
  }

 private:
  std::shared_ptr<const TernaryCodebook> codebook_;
  quant::QuantizedMatrix q_;
  quant::GridQuantizer grid_;
};

class TernaryDictCodec final : public MatrixCodec {
 public:
  TernaryDictCodec(std::shared_ptr<const TernaryCodebook> cb, std::string tensor)
      : codebook_(std::move(cb)), tensor_(std::move(tensor)) {}

  const Representation& representation() const override { return ternary_dict_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"code", ternary::dict_kind_name(codebook_->dictionary().kind())},
            {"p0", codebook_->dictionary().p0()},
            {"dictionary_tensor", tensor_}};
  }
  std::string summary() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "ternary_dict (%s, p0 %.4g)", ternary::dict_kind_name(codebook_->dictionary().kind()),
                  codebook_->dictionary().p0());
    return buf;
  }
  std::string grid_name() const override { return "ternary"; }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "dictionary-ternary";
    c.vector_axis = "input";
    c.vector_dim = 0;  // entries cover variable runs of trits
    c.packing_layout = "qmoe-dict-v1: codes u16 into the shared u64 [65536] dictionary, row_offsets i32 [rows+1], "
                       "scales bf16 [rows, 2] (w_min, w_max)";
    c.required_kernel = "ternary_dict_gemv";
    c.op.decoded_operand = "ternary {w_min, 0, w_max}";
    c.op.scale = "bf16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override {
    if (rows == 0 || cols == 0) return invalid_argument("ternary_dict: empty matrix");
    return Status::ok();
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t) const override {
    const auto r = static_cast<int64_t>(rows);
    return {FieldSpec{std::string(artifact::kFieldRowOffsets), io::DType::kI32, {r + 1}},
            FieldSpec{std::string(artifact::kFieldScales), io::DType::kBF16, {r, 2}},
            FieldSpec{std::string(artifact::kFieldCodes), io::DType::kU16, {}, 2}};
  }
  std::vector<PackedTensor> shared_tensors() const override {
    return {PackedTensor{tensor_, io::DType::kU64, {static_cast<int64_t>(ternary::kDictEntries)},
                         dictionary_bytes(codebook_->dictionary())}};
  }

  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(ternary::PackedTernaryMatrix m, matrix(rows, cols, f));
    return ternary::decode_to_float(m.view());
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(ternary::PackedTernaryMatrix m, matrix(rows, cols, f));
    if (mode != ExecutionMode::kReferenceDecode)
      return make_ternary_dict_linear(std::move(m), codebook_, kernels::best_ternary_gemv_kernels(),
                                      execution_activations(mode), execution_quant(mode));
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, ternary::decode_to_float(m.view()));
    return make_reference_decoded_linear(std::move(w), rows, cols, std::string(kName));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new TernaryEncoder(codebook_, rows, cols));
  }

 private:
  // The packed matrix from untrusted field bytes (validated by from_parts).
  Result<ternary::PackedTernaryMatrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) const {
    if (f.size() != 3) return corrupt_data("ternary_dict: " + std::to_string(f.size()) + " fields given, 3 expected");
    const std::vector<int32_t> offsets = copy_as<int32_t>(f[0]);
    const std::vector<ternary::RowScales> scales = copy_as<ternary::RowScales>(f[1]);
    const std::vector<uint16_t> codes = copy_as<uint16_t>(f[2]);
    if (offsets.size() != static_cast<size_t>(rows) + 1 || scales.size() != rows)
      return corrupt_data("row_offsets / scales sizes do not match " + std::to_string(rows) + " rows");
    const int64_t used = offsets[rows];
    if (used < 0 || static_cast<uint64_t>(used) > codes.size())
      return corrupt_data("row_offsets[" + std::to_string(rows) + "] = " + std::to_string(used) +
                          " but the codes tensor holds " + std::to_string(codes.size()) + " codewords");
    for (size_t i = static_cast<size_t>(used); i < codes.size(); ++i)
      if (codes[i] != 0)
        return corrupt_data("codes: padding codeword " + std::to_string(i) + " past row_offsets[" +
                            std::to_string(rows) + "] is not zero");
    return ternary::PackedTernaryMatrix::from_parts(
        rows, cols, std::span<const uint16_t>(codes).first(static_cast<size_t>(used)), offsets, scales,
        codebook_->entries(),
        // validated once, when the codec was made
        ternary::PackedTernaryMatrix::DictCheck::kTrusted, codebook_->dictionary().entry_lengths());
  }

  std::shared_ptr<const TernaryCodebook> codebook_;
  std::string tensor_;
};

class TernaryDictRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::vector<std::string_view> aliases() const override { return {"ternary"}; }
  std::string_view help() const override {
    return "ternary_dict (alias ternary): QMoE's per-row {w_min, 0, w_max} grid in the sub-1-bit dictionary code "
           "(--code qmoe|tunstall, --dict-p0)";
  }
  std::optional<ReprOptions> from_grid_name(std::string_view grid) const override {
    if (grid != "ternary") return std::nullopt;
    return ReprOptions{std::string(kName)};
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_RETURN_IF_ERROR(refuse_extra_options(o, kName));
    if (o.bits) return invalid_argument("--bits does not apply to ternary_dict (ternary codes have 3 levels)");
    if (o.group_size && *o.group_size != 0)
      return invalid_argument("--group-size applies to int grids only; the ternary grid is per row");
    const std::string code = o.code.value_or("qmoe");
    ternary::DictKind kind;
    if (!ternary::parse_dict_kind(code, &kind))
      return invalid_argument("unknown dictionary code '" + code + "' (qmoe or tunstall)");
    const double p0 = o.p0.value_or(ternary::kQmoeDefaultP0);
    if (!(p0 > 0.0 && p0 < 1.0)) return invalid_argument("--dict-p0 must lie in (0, 1), got " + std::to_string(p0));
    SUBMOE_ASSIGN_OR_RETURN(ternary::TernaryDictionary dict, ternary::build_dictionary(kind, p0));
    SUBMOE_ASSIGN_OR_RETURN(std::shared_ptr<const TernaryCodebook> cb,
                            TernaryCodebook::create(kind, p0, {dict.entries(), ternary::kDictEntries}));
    return std::shared_ptr<const MatrixCodec>(new TernaryDictCodec(std::move(cb), std::string(artifact::kDictionaryTensor)));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup& tensors) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "code", "p0", "dictionary_tensor"}));
    SUBMOE_ASSIGN_OR_RETURN(const std::string code, k.string("code"));
    ternary::DictKind kind;
    if (!ternary::parse_dict_kind(code, &kind)) return k.bad("code", "'" + code + "' is not qmoe or tunstall");
    SUBMOE_ASSIGN_OR_RETURN(const double p0, k.number("p0"));
    if (!(p0 >= 0.0 && p0 <= 1.0)) return k.bad("p0", "= " + std::to_string(p0) + " is outside [0, 1]");
    SUBMOE_ASSIGN_OR_RETURN(const std::string tensor, k.string("dictionary_tensor"));
    if (tensor.empty()) return k.bad("dictionary_tensor", "is empty");
    auto cb = load_dictionary(tensors(tensor), tensor, kind, p0);
    if (!cb.is_ok()) return cb.status().with_context(where + ".dictionary_tensor");
    return std::shared_ptr<const MatrixCodec>(new TernaryDictCodec(std::move(cb).value(), tensor));
  }
};

}  // namespace

const Representation& ternary_dict_representation() {
  static const TernaryDictRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
