// squeezellm as a representation. Record: {"representation": "squeezellm",
// "bits": 3 | 4, "exceptions": true | false}. Fields per matrix: codes U8
// [rows, cols * bits / 8], lut F16 [rows, 2^bits], and with exceptions row_ptr
// I32 [rows + 1], exception_cols U16 [nnz], exception_values F16 [nnz]
// (codec/squeezellm.h). No shared tensors.
//
// The encoder sees the whole matrix first (begin_matrix): the sensitivity of
// column c is the Hessian diagonal of the calibration inputs, H[c][c]
// (SqueezeLLM uses the Fisher diagonal, which needs gradients submoe does not
// compute; uniform under round-to-nearest); the exceptions are the `outliers`
// fraction of largest |w| (magnitude path) and then the `sensitive` fraction
// of largest H[c][c] w^2 among the rest (sensitivity path, 0x03B); each row's
// table is weighted k-means over its other weights with weights H[c][c],
// stored fp16 ascending. GPTQ then codes each weight to its row's nearest
// entry (an exception keeps its current value, fp16), feeding the error back.
#include "runtime/repr/squeezellm/squeezellm_representation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/squeezellm.h"
#include "submoe/core/bf16.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "squeezellm";
constexpr uint32_t kDefaultIters = 30;

struct SqueezeParams {
  uint32_t bits = 4;
  double outliers = 0;   // fraction of weights kept as exceptions by magnitude
  double sensitive = 0;  // fraction kept by sensitivity
  uint32_t iters = kDefaultIters;
  bool sparse = false;  // whether exceptions (the CSR fields) are stored
  bool exceptions() const { return sparse; }
};

uint16_t half_saturating(float v) { return float_to_f16_bits(std::clamp(v, -65504.0f, 65504.0f)); }

class SqueezeEncoder final : public MatrixEncoder {
 public:
  SqueezeEncoder(uint32_t rows, uint32_t cols, SqueezeParams p)
      : rows_(rows), cols_(cols), p_(p), codes_(size_t{rows} * cols, 0), table_(size_t{rows} * 16, 0.0f),
        exc_cols_(rows), exc_values_(rows) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return 1; }
  // The whole row as one group: exceptions are chosen by (row, column), so the
  // solver must not permute columns (act-order is refused for grouped grids).
  size_t group_width() const override { return cols_; }

  void begin_matrix(std::span<const float> w, std::span<const float> h_diag) override {
    const size_t n = size_t{rows_} * cols_;
    std::vector<float> sens(cols_, 1.0f);
    for (size_t c = 0; c < h_diag.size() && c < cols_; ++c) sens[c] = std::max(h_diag[c], 0.0f);
    // Exceptions: the magnitude path, then the sensitivity path among the rest.
    std::vector<uint8_t> mask(n, 0);
    auto take_top = [&](double fraction, auto score) {
      const size_t want = std::min(n, static_cast<size_t>(std::llround(fraction * static_cast<double>(n))));
      if (want == 0) return;
      std::vector<size_t> idx;
      idx.reserve(n);
      for (size_t i = 0; i < n; ++i)
        if (!mask[i]) idx.push_back(i);
      const size_t k = std::min(want, idx.size());
      std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                       [&](size_t a, size_t b) { return score(a) > score(b) || (score(a) == score(b) && a < b); });
      for (size_t j = 0; j < k; ++j) mask[idx[j]] = 1;
    };
    take_top(p_.outliers, [&](size_t i) { return std::abs(w[i]); });
    take_top(p_.sensitive, [&](size_t i) { return double{sens[i % cols_]} * w[i] * w[i]; });
    std::vector<float> values, weights;
    for (uint32_t r = 0; r < rows_; ++r) {
      values.clear();
      weights.clear();
      exc_cols_[r].clear();
      for (uint32_t c = 0; c < cols_; ++c) {
        const size_t i = size_t{r} * cols_ + c;
        if (mask[i]) {
          exc_cols_[r].push_back(static_cast<uint16_t>(c));
        } else {
          values.push_back(w[i]);
          weights.push_back(sens[c]);
        }
      }
      exc_values_[r].assign(exc_cols_[r].size(), 0);
      fit_row(r, values, weights);
    }
    fitted_ = true;
  }

  void begin_row(size_t r, std::span<const float> original) override {
    if (fitted_) return;
    // Driven without begin_matrix: this row alone, uniform weights, no exceptions.
    const std::vector<float> ones(original.size(), 1.0f);
    fit_row(static_cast<uint32_t>(r), original, ones);
  }

  void quantize(size_t r, size_t c, const float* v, float* rec) override {
    const auto& ec = exc_cols_[r];
    const auto it = std::lower_bound(ec.begin(), ec.end(), static_cast<uint16_t>(c));
    if (it != ec.end() && *it == c) {
      const uint16_t h = half_saturating(*v);
      exc_values_[r][static_cast<size_t>(it - ec.begin())] = h;
      codes_[r * cols_ + c] = 0;  // the hole policy
      *rec = f16_bits_to_float(h);
      return;
    }
    const std::span<const float> t(&table_[r * 16], size_t{1} << p_.bits);
    const uint8_t code = squeezellm::nearest(t, *v);
    codes_[r * cols_ + c] = code;
    *rec = t[code];
  }

  std::vector<float> dequantize() const override { return squeezellm::decode(matrix()); }

  Result<std::vector<PackedTensor>> pack() const override {
    const squeezellm::SqueezeMatrix m = matrix();
    const auto r = static_cast<int64_t>(rows_);
    std::vector<PackedTensor> out;
    out.push_back({std::string(artifact::kFieldCodes), io::DType::kU8,
                   {r, static_cast<int64_t>(squeezellm::row_code_bytes(cols_, p_.bits))}, m.codes});
    out.push_back({"lut", io::DType::kF16, {r, int64_t{1} << p_.bits}, bytes_of(m.lut)});
    if (p_.exceptions()) {
      const auto nnz = static_cast<int64_t>(m.nnz());
      out.push_back({"row_ptr", io::DType::kI32, {r + 1}, bytes_of(m.row_ptr)});
      out.push_back({"exception_cols", io::DType::kU16, {nnz}, bytes_of(m.col)});
      out.push_back({"exception_values", io::DType::kF16, {nnz}, bytes_of(m.value)});
    }
    return out;
  }

 private:
  void fit_row(uint32_t r, std::span<const float> values, std::span<const float> weights) {
    const uint32_t k = 1u << p_.bits;
    const std::vector<float> c = squeezellm::weighted_kmeans(values, weights, k, p_.iters);
    for (uint32_t j = 0; j < k; ++j) table_[size_t{r} * 16 + j] = f16_bits_to_float(half_saturating(c[j]));
    // fp16 rounding keeps the order; make it non-decreasing exactly.
    std::sort(table_.begin() + static_cast<std::ptrdiff_t>(size_t{r} * 16),
              table_.begin() + static_cast<std::ptrdiff_t>(size_t{r} * 16 + k));
  }

  squeezellm::SqueezeMatrix matrix() const {
    squeezellm::SqueezeMatrix m;
    m.rows = rows_;
    m.cols = cols_;
    m.bits = p_.bits;
    const uint32_t k = m.entries();
    const size_t row_bytes = squeezellm::row_code_bytes(cols_, p_.bits);
    m.codes.resize(size_t{rows_} * row_bytes);
    m.lut.resize(size_t{rows_} * k);
    for (uint32_t r = 0; r < rows_; ++r) {
      squeezellm::pack_row(std::span<const uint8_t>(&codes_[size_t{r} * cols_], cols_), p_.bits,
                           m.codes.data() + r * row_bytes);
      for (uint32_t j = 0; j < k; ++j) m.lut[size_t{r} * k + j] = float_to_f16_bits(table_[size_t{r} * 16 + j]);
    }
    m.sparse = p_.exceptions();
    if (m.sparse) {
      m.row_ptr.push_back(0);
      for (uint32_t r = 0; r < rows_; ++r) {
        m.col.insert(m.col.end(), exc_cols_[r].begin(), exc_cols_[r].end());
        m.value.insert(m.value.end(), exc_values_[r].begin(), exc_values_[r].end());
        m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
      }
    }
    return m;
  }

  uint32_t rows_, cols_;
  SqueezeParams p_;
  std::vector<uint8_t> codes_;  // one per weight until packing
  std::vector<float> table_;    // [rows, 16]: the row's fp16 table as floats, ascending
  std::vector<std::vector<uint16_t>> exc_cols_;    // per row, ascending
  std::vector<std::vector<uint16_t>> exc_values_;  // fp16, parallel to exc_cols_
  bool fitted_ = false;
};

class SqueezeCodec final : public MatrixCodec {
 public:
  explicit SqueezeCodec(SqueezeParams p) : p_(p) {}
  const Representation& representation() const override { return squeezellm_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)}, {"bits", p_.bits}, {"exceptions", p_.exceptions()}};
  }
  nlohmann::json provenance() const override {
    return {{"sensitivity", "hessian_diagonal (H[c][c] of the calibration inputs; uniform under rtn)"},
            {"outliers", p_.outliers},
            {"sensitive", p_.sensitive},
            {"sensitive_selection", "largest H[c][c] w^2 among the non-outliers"},
            {"kmeans_iters", p_.iters},
            {"zero_mass_cluster", "keeps its previous centroid"}};
  }
  std::string summary() const override {
    char buf[96];
    if (p_.exceptions() && p_.outliers + p_.sensitive > 0)
      std::snprintf(buf, sizeof buf, "squeezellm (%u-bit row tables, %.3g%% outliers + %.3g%% sensitive exceptions)",
                    p_.bits, 100 * p_.outliers, 100 * p_.sensitive);
    else if (p_.exceptions())  // read from an artifact: the fractions are its provenance
      std::snprintf(buf, sizeof buf, "squeezellm (%u-bit row tables, with exceptions)", p_.bits);
    else
      std::snprintf(buf, sizeof buf, "squeezellm (%u-bit row tables, dense only)", p_.bits);
    return buf;
  }
  std::string grid_name() const override {
    return "squeezellm" + std::to_string(p_.bits) + (p_.exceptions() ? "-sparse" : "");
  }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "scalar-lut-rowwise";
    if (p_.exceptions()) {
      c.sparse_semantics = "replacement";
      c.dense_hole_policy = "code 0 under each exception";
      c.coordinate_dtype = "u16 columns, i32 row pointers";
      c.combine_order = "dense-then-sparse";
    }
    c.packing_layout = "squeezellm-v1: codes u8 (4-bit: first column in the high nibble; 3-bit: 32 columns in 12 "
                       "bytes, LSB-first), f16 [rows, 2^bits] ascending row tables; CSR exceptions f16";
    c.required_kernel = "squeezellm_gemv";
    c.op.scale = "none (f16 row tables)";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override {
    return squeezellm::check_shape(rows, cols, p_.bits);
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    std::vector<FieldSpec> f{
        FieldSpec{std::string(artifact::kFieldCodes), io::DType::kU8,
                  {r, static_cast<int64_t>(squeezellm::row_code_bytes(cols, p_.bits))}},
        FieldSpec{"lut", io::DType::kF16, {r, int64_t{1} << p_.bits}}};
    if (p_.exceptions()) {
      f.push_back(FieldSpec{"row_ptr", io::DType::kI32, {r + 1}});
      f.push_back(FieldSpec{"exception_cols", io::DType::kU16, {}});
      f.push_back(FieldSpec{"exception_values", io::DType::kF16, {}});
    }
    return f;
  }
  std::optional<SparseFootprint> sparse_footprint(uint32_t, uint32_t, std::span<const uint64_t> b) const override {
    if (!p_.exceptions() || b.size() != 5) return std::nullopt;
    return SparseFootprint{p_.bits, b[3] / 2, b[0] + b[1], b[2], 4};
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(squeezellm::SqueezeMatrix m, matrix(rows, cols, f));
    return squeezellm::decode(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(squeezellm::SqueezeMatrix m, matrix(rows, cols, f));
    if (mode == ExecutionMode::kReferenceDecode)
      return make_reference_decoded_linear(squeezellm::decode(m), rows, cols, "squeezellm");
    return model::make_squeezellm_linear(std::move(m), execution_activations(mode), execution_quant(mode));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new SqueezeEncoder(rows, cols, p_));
  }

 private:
  Result<squeezellm::SqueezeMatrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) const {
    const size_t want = p_.exceptions() ? 5 : 2;
    if (f.size() != want)
      return corrupt_data("squeezellm: " + std::to_string(f.size()) + " fields given, " + std::to_string(want) +
                          " expected");
    squeezellm::SqueezeFields fields{as_u8(f[0]), as_u8(f[1]), {}, {}, {}};
    if (want == 5) {
      fields.row_ptr = as_u8(f[2]);
      fields.col = as_u8(f[3]);
      fields.value = as_u8(f[4]);
    }
    return squeezellm::from_fields(rows, cols, p_.bits, p_.exceptions(), fields);
  }

  SqueezeParams p_;
};

Result<double> parse_fraction(const std::string& key, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !(d >= 0 && d <= 0.1))
    return invalid_argument("--repr-opt " + key + "=" + v + ": expected a fraction from 0 to 0.1 (e.g. 0.004 for 0.4%)");
  return d;
}

class SqueezeRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "squeezellm: SqueezeLLM, per-row non-uniform 3- or 4-bit tables (--bits 3|4) fitted by k-means weighted "
           "by the inputs' Hessian diagonal, plus fp16 exceptions replacing weights (--repr-opt outliers=FRACTION "
           "by magnitude, sensitive=FRACTION by H[c][c] w^2; SqueezeLLM's 0.45% is outliers=0.004,sensitive=0.0005; "
           "iters=N k-means rounds, 30)";
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size) return invalid_argument("--group-size does not apply to squeezellm (one table per row)");
    if (!o.bits || (*o.bits != 3 && *o.bits != 4)) return invalid_argument("squeezellm needs --bits 3 or 4");
    SqueezeParams p;
    p.bits = static_cast<uint32_t>(*o.bits);
    for (const auto& [key, value] : o.extra) {
      if (key == "outliers") {
        SUBMOE_ASSIGN_OR_RETURN(p.outliers, parse_fraction(key, value));
      } else if (key == "sensitive") {
        SUBMOE_ASSIGN_OR_RETURN(p.sensitive, parse_fraction(key, value));
      } else if (key == "iters") {
        char* end = nullptr;
        const unsigned long v = std::strtoul(value.c_str(), &end, 10);
        if (value.empty() || end != value.c_str() + value.size() || v < 1 || v > 1000)
          return invalid_argument("--repr-opt iters=" + value + ": expected 1 to 1000");
        p.iters = static_cast<uint32_t>(v);
      } else {
        return invalid_argument("--repr-opt " + key + " is not a squeezellm option (outliers, sensitive, iters)");
      }
    }
    p.sparse = p.outliers > 0 || p.sensitive > 0;
    return std::shared_ptr<const MatrixCodec>(std::make_shared<SqueezeCodec>(p));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "bits", "exceptions"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t bits, k.integer("bits"));
    if (bits != 3 && bits != 4) return k.bad("bits", "must be 3 or 4, got " + std::to_string(bits));
    const auto e = record.find("exceptions");
    if (e == record.end()) return k.bad("exceptions", "is missing");
    if (!e->is_boolean()) return k.type("exceptions", "a boolean");
    SqueezeParams p;
    p.bits = static_cast<uint32_t>(bits);
    // What the reader needs is whether the CSR fields exist; the fractions are provenance.
    p.sparse = e->get<bool>();
    return std::shared_ptr<const MatrixCodec>(std::make_shared<SqueezeCodec>(p));
  }
};

}  // namespace

const Representation& squeezellm_representation() {
  static const SqueezeRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
