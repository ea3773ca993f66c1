// spqr as a representation. Record: {"representation": "spqr", "bits": 2 | 3
// | 4, "group": 16, "stat_bits": 3, "stat_rows": 16}. Fields per matrix:
// codes U8 [rows, cols * bits / 8], stat_codes U8 [n], stat_params F16
// [ceil(rows / 16), cols / 16, 4], row_ptr I32 [rows + 1], exception_cols U16
// [nnz], exception_values F16 [nnz] (codec/spqr.h). No shared tensors.
//
// The encoder is SpQR's GPTQ pass (0x04A, 0x04D) on the solver's hooks:
//  - begin_groups (16 rows in lockstep, quant/block_quantizer.h): each row's
//    group of 16 current values is fitted min-max at `bits` after the likely
//    outliers are set aside (leave-one-out: a weight whose removal from the
//    fit lowers the group's U-scaled squared error by more than tau is
//    replaced by the mean of the rest for the fit); then the 16 rows' scales
//    and zeros are coded at 3 bits with fp16 min-max parameters, and the
//    weights are coded against those decoded statistics;
//  - quantize: a weight whose GPTQ error (w - q) / U[c][c] squares above tau
//    is an exception: its dense code is the code of 0 (SpQR re-quantizes the
//    column with the outliers zeroed) and the exception stores w - dense in
//    fp16, so dense + exception is the working weight (which earlier error
//    feedback may have moved: an optimized value, 0x04C); the solver feeds
//    back only the fp16 rounding.
// tau = outlier_threshold x mean over columns of Var_rows(W[:, c]) / U[c][c]^2
// (SpQR's relative threshold, outlier_relative_threshold; U = 1 under RTN), or,
// with outlier_budget=F, the (1 - F) quantile of the feedback-free errors.
#include "runtime/repr/spqr/spqr_representation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/spqr.h"
#include "submoe/core/bf16.h"
#include "submoe/runtime/artifact_format.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "spqr";
constexpr double kDefaultThreshold = 0.2;  // SpQR's published configurations

struct SpqrParams {
  uint32_t bits = 3;
  double threshold = kDefaultThreshold;  // relative; +inf = no exceptions
  double budget = 0;                     // > 0: tau from this exception share instead (threshold unused)
  bool outliers() const { return budget > 0 || std::isfinite(threshold); }
};

uint16_t half_saturating(float v) { return float_to_f16_bits(std::clamp(v, -65504.0f, 65504.0f)); }

class SpqrEncoder final : public MatrixEncoder {
 public:
  SpqrEncoder(uint32_t rows, uint32_t cols, SpqrParams p)
      : rows_(rows), cols_(cols), groups_(cols / spqr::kGroup), p_(p), codes_(size_t{rows} * cols, 0),
        entries_(size_t{rows} * groups_, 0), params_(spqr::stat_blocks(rows) * groups_ * 4, 0), stats_(rows),
        exceptions_(rows), udiag_(cols, 1.0f), col_var_(cols, 0.0),
        block_tau_(spqr::stat_blocks(rows), std::numeric_limits<float>::infinity()) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return spqr::kGroup; }
  size_t row_block() const override { return spqr::kStatRows; }

  void begin_matrix(std::span<const float> w, std::span<const float> /*h_diag*/) override {
    if (p_.budget > 0) w_.assign(w.begin(), w.end());
    // Var over rows of each column (SpQR's weight.var(dim=0), unbiased).
    for (uint32_t c = 0; c < cols_; ++c) {
      double s = 0, s2 = 0;
      for (uint32_t r = 0; r < rows_; ++r) {
        const double v = w[size_t{r} * cols_ + c];
        s += v;
        s2 += v * v;
      }
      const double n = rows_;
      col_var_[c] = rows_ > 1 ? std::max(0.0, (s2 - s * s / n) / (n - 1)) : 0.0;
    }
    set_tau();
  }

  void begin_columns(size_t c0, size_t /*c1*/, const float* u, size_t ld) override {
    if (c0 != 0) return;
    for (uint32_t c = 0; c < cols_; ++c) udiag_[c] = u[c * ld + c];
    set_tau();
    // Before any row quantizes (the solver's rows began with the U-less tau).
    std::fill(block_tau_.begin(), block_tau_.end(), tau_);
  }

  void begin_row(size_t r, std::span<const float> /*original*/) override {
    exceptions_[r].clear();
    if (r % spqr::kStatRows == 0) block_tau_[r / spqr::kStatRows] = tau_;
  }

  void begin_groups(size_t r0, size_t r1, size_t c, const float* current, size_t ld) override {
    const uint32_t g = static_cast<uint32_t>(c / spqr::kGroup), maxq = (1u << p_.bits) - 1;
    const size_t n = r1 - r0;
    if (p_.budget > 0 && c > 0) steer_block_tau(r0, r1, c);
    float scales[spqr::kStatRows], zeros[spqr::kStatRows];
    for (size_t i = 0; i < n; ++i) {
      const spqr::AffineGrid first = fit_group(current + i * ld, c, maxq, block_tau_[r0 / spqr::kStatRows]);
      scales[i] = first.scale;
      zeros[i] = first.zero;
    }
    const spqr::AffineGrid sg = spqr::fit_minmax_f16({scales, n}, (1u << spqr::kStatBits) - 1);
    const spqr::AffineGrid zg = spqr::fit_minmax_f16({zeros, n}, (1u << spqr::kStatBits) - 1);
    uint16_t* par = &params_[((r0 / spqr::kStatRows) * groups_ + g) * 4];
    par[0] = float_to_f16_bits(sg.scale);
    par[1] = float_to_f16_bits(sg.zero);
    par[2] = float_to_f16_bits(zg.scale);
    par[3] = float_to_f16_bits(zg.zero);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t sq = sg.code(scales[i]), zq = zg.code(zeros[i]);
      entries_[(r0 + i) * groups_ + g] = static_cast<uint8_t>(sq | (zq << spqr::kStatBits));
      // The decoded statistics, by codec/spqr.h's formula.
      stats_[r0 + i] = {sg.value(sq), zg.value(zq)};
    }
  }

  void quantize(size_t r, size_t c, const float* v, float* rec) override {
    const float tau = block_tau_[r / spqr::kStatRows];
    const spqr::GroupStats st = stats_[r];
    const spqr::AffineGrid grid{st.scale, st.zero, (1u << p_.bits) - 1};
    const uint32_t q = grid.code(*v);
    const float deq = spqr::dequantize(st, q);
    if (p_.outliers()) {
      const float e = (*v - deq) / udiag_[c];
      if (e * e > tau) {
        const uint32_t q0 = grid.code(0.0f);
        const float dense = spqr::dequantize(st, q0);
        const uint16_t corr = half_saturating(*v - dense);
        codes_[r * cols_ + c] = static_cast<uint8_t>(q0);
        exceptions_[r].push_back({static_cast<uint16_t>(c), corr});
        *rec = dense + f16_bits_to_float(corr);
        return;
      }
    }
    codes_[r * cols_ + c] = static_cast<uint8_t>(q);
    *rec = deq;
  }

  std::vector<float> dequantize() const override { return spqr::decode(matrix()); }

  Result<std::vector<PackedTensor>> pack() const override {
    spqr::SpqrMatrix m = matrix();
    const auto r = static_cast<int64_t>(rows_);
    std::vector<PackedTensor> out;
    out.push_back({std::string(artifact::kFieldCodes), io::DType::kU8,
                   {r, static_cast<int64_t>(spqr::row_code_bytes(cols_, p_.bits))}, std::move(m.codes)});
    const auto stat_bytes = static_cast<int64_t>(m.stat_codes.size());
    out.push_back({"stat_codes", io::DType::kU8, {stat_bytes}, std::move(m.stat_codes)});
    out.push_back({"stat_params", io::DType::kF16,
                   {static_cast<int64_t>(spqr::stat_blocks(rows_)), static_cast<int64_t>(groups_), 4},
                   bytes_of(m.stat_params)});
    const auto nnz = static_cast<int64_t>(m.nnz());
    out.push_back({"row_ptr", io::DType::kI32, {r + 1}, bytes_of(m.sparse.row_ptr)});
    out.push_back({"exception_cols", io::DType::kU16, {nnz}, bytes_of(m.sparse.col)});
    out.push_back({"exception_values", io::DType::kF16, {nnz}, bytes_of(m.sparse.value)});
    return out;
  }

 private:
  struct Exception {
    uint16_t col, value;
  };

  void set_tau() {
    if (p_.budget > 0) return set_tau_from_budget();
    double s = 0;
    for (uint32_t c = 0; c < cols_; ++c) s += col_var_[c] / (double{udiag_[c]} * udiag_[c]);
    const double scale = s / cols_;
    // No spread (one row, a constant matrix): no exceptions rather than all.
    tau_ = p_.outliers() && scale > 0 ? static_cast<float>(p_.threshold * scale) : std::numeric_limits<float>::infinity();
  }

  // Under a budget, each block of 16 rows steers its own tau at every group:
  // the share of exceptions so far against the budget scales tau by that
  // ratio (within [1/4, 4]; halved when there are none yet),
  // so GPTQ's feedback, which moves the errors the quantile was taken from,
  // does not carry the share away. One thread walks a block, so the result
  // does not depend on scheduling.
  void steer_block_tau(size_t r0, size_t r1, size_t c) {
    size_t count = 0;
    for (size_t r = r0; r < r1; ++r) count += exceptions_[r].size();
    const double target = p_.budget * static_cast<double>((r1 - r0) * c);
    float& tau = block_tau_[r0 / spqr::kStatRows];
    if (!std::isfinite(tau)) return;
    const double ratio = count == 0 ? 0.5 : std::clamp(static_cast<double>(count) / target, 0.25, 4.0);
    tau = static_cast<float>(tau * ratio);
  }

  // tau for an exception budget (seed 002 0x04A: "chosen to reach a target
  // global exception budget"): the (1 - budget) quantile of the feedback-free
  // errors ((w - Q(w)) / U[c][c])^2, Q each group's min-max grid of the
  // original weights. GPTQ's feedback moves the errors it then tests, so the
  // realized share is near the budget, not equal (the sparse ledger prints it).
  void set_tau_from_budget() {
    const uint32_t maxq = (1u << p_.bits) - 1;
    std::vector<float> score;
    score.reserve(w_.size());
    for (uint32_t r = 0; r < rows_; ++r)
      for (uint32_t g = 0; g < groups_; ++g) {
        // A weight's score is what either test compares with tau: its own
        // squared error, or what leaving it out of the fit saves.
        const float* v = &w_[size_t{r} * cols_ + size_t{g} * spqr::kGroup];
        float saved[spqr::kGroup];
        loo_savings(v, size_t{g} * spqr::kGroup, maxq, saved);
        const spqr::AffineGrid grid = spqr::fit_minmax({v, spqr::kGroup}, maxq);
        for (uint32_t k = 0; k < spqr::kGroup; ++k) {
          const float e = (v[k] - grid.value(grid.code(v[k]))) / udiag_[g * spqr::kGroup + k];
          score.push_back(std::max(e * e, saved[k]));
        }
      }
    const auto keep = static_cast<size_t>(std::llround(p_.budget * static_cast<double>(score.size())));
    if (keep == 0 || score.empty()) {
      tau_ = std::numeric_limits<float>::infinity();
      return;
    }
    const size_t k = score.size() - std::min(keep, score.size());
    std::nth_element(score.begin(), score.begin() + static_cast<std::ptrdiff_t>(k), score.end());
    // Strictly above tau is an exception: the k-th smallest is the largest kept dense.
    tau_ = k == 0 ? 0.0f : *std::max_element(score.begin(), score.begin() + static_cast<std::ptrdiff_t>(k));
  }

  // SpQR's leave-one-out savings of a group of 16 (values v, first column c):
  // saved[i] = the group's error sum_j ((Q(v_j) - v_j) / U[j][j])^2 under the
  // grid of all 16, minus the same over the other 15 under their own grid.
  void loo_savings(const float* v, size_t c, uint32_t maxq, float* saved) const {
    constexpr uint32_t k = spqr::kGroup;
    auto error_of = [&](const spqr::AffineGrid& g, uint32_t skip) {
      double e = 0;
      for (uint32_t j = 0; j < k; ++j) {
        if (j == skip) continue;
        const double d = (double{g.value(g.code(v[j]))} - v[j]) / udiag_[c + j];
        e += d * d;
      }
      return e;
    };
    const double base = error_of(spqr::fit_minmax({v, k}, maxq), k);
    float others[k - 1];
    for (uint32_t i = 0; i < k; ++i) {
      for (uint32_t j = 0, o = 0; j < k; ++j)
        if (j != i) others[o++] = v[j];
      saved[i] = static_cast<float>(base - error_of(spqr::fit_minmax(others, maxq), i));
    }
  }

  // Group [c, c + 16) of one row: its first-level grid, fitted with the likely
  // outliers replaced by the mean of the other values. Likely outlier (SpQR's
  // leave-one-out test): leaving weight i out of the fit (and unquantized)
  // lowers the group's error sum_j ((Q(v_j) - v_j) / U[j][j])^2 by more than tau.
  spqr::AffineGrid fit_group(const float* v, size_t c, uint32_t maxq, float tau) const {
    constexpr uint32_t k = spqr::kGroup;
    const spqr::AffineGrid all = spqr::fit_minmax({v, k}, maxq);
    if (!std::isfinite(tau)) return all;
    float saved[k];
    loo_savings(v, c, maxq, saved);
    bool outlier[k];
    double kept_sum = 0;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < k; ++i) {
      outlier[i] = saved[i] > tau;
      if (!outlier[i]) {
        kept_sum += v[i];
        ++kept;
      }
    }
    if (kept == k) return all;
    float fit[k];
    const auto mean = kept > 0 ? static_cast<float>(kept_sum / kept) : 0.0f;
    for (uint32_t i = 0; i < k; ++i) fit[i] = outlier[i] ? mean : v[i];
    return spqr::fit_minmax(fit, maxq);
  }

  spqr::SpqrMatrix matrix() const {
    spqr::SpqrMatrix m;
    m.rows = rows_;
    m.cols = cols_;
    m.bits = p_.bits;
    const size_t row_bytes = spqr::row_code_bytes(cols_, p_.bits);
    m.codes.resize(size_t{rows_} * row_bytes);
    for (uint32_t r = 0; r < rows_; ++r)
      spqr::pack_row(std::span<const uint8_t>(&codes_[size_t{r} * cols_], cols_), p_.bits,
                     m.codes.data() + r * row_bytes);
    m.stat_codes.resize(spqr::stat_code_bytes(rows_, cols_));
    spqr::pack_stat_entries(entries_, m.stat_codes.data());
    m.stat_params = params_;
    m.sparse.row_ptr.push_back(0);
    for (uint32_t r = 0; r < rows_; ++r) {
      for (const Exception& e : exceptions_[r]) {
        m.sparse.col.push_back(e.col);
        m.sparse.value.push_back(e.value);
      }
      m.sparse.row_ptr.push_back(static_cast<int32_t>(m.sparse.col.size()));
    }
    return m;
  }

  uint32_t rows_, cols_, groups_;
  SpqrParams p_;
  std::vector<uint8_t> codes_;    // one per weight until packing
  std::vector<uint8_t> entries_;  // [rows, groups] 6-bit stat entries
  std::vector<uint16_t> params_;  // fp16 [blocks, groups, 4]
  std::vector<spqr::GroupStats> stats_;  // each row's current group, decoded
  std::vector<std::vector<Exception>> exceptions_;  // per row, in column order
  std::vector<float> udiag_;     // U[c][c] of the solver (1 under RTN)
  std::vector<double> col_var_;
  std::vector<float> w_;  // the original weights, kept for an exception budget only
  std::vector<float> block_tau_;  // per block of 16 rows: tau, steered under a budget
  float tau_ = std::numeric_limits<float>::infinity();
};

class SpqrCodec final : public MatrixCodec {
 public:
  explicit SpqrCodec(SpqrParams p) : p_(p) {}
  const Representation& representation() const override { return spqr_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"bits", p_.bits},
            {"group", spqr::kGroup},
            {"stat_bits", spqr::kStatBits},
            {"stat_rows", spqr::kStatRows}};
  }
  nlohmann::json provenance() const override {
    nlohmann::json j = {{"outlier_test", "GPTQ error (w - q) / U[c][c] squared above tau (SpQR 0x04A), and "
                                         "leave-one-out for the group fits"},
                        {"permutation", "none (columns in order)"}};
    if (p_.budget > 0) {
      j["tau"] = "the (1 - outlier_budget) quantile of the feedback-free errors ((w - Q(w)) / U[c][c])^2, per matrix";
      j["outlier_budget"] = p_.budget;
    } else {
      j["tau"] = "outlier_threshold x mean_c Var_rows(W[:, c]) / U[c][c]^2";
      j["outlier_threshold"] = p_.outliers() ? nlohmann::json(p_.threshold) : nlohmann::json("none");
    }
    return j;
  }
  std::string summary() const override {
    char buf[128];
    if (p_.budget > 0)
      std::snprintf(buf, sizeof buf, "spqr (%u-bit groups of 16, 3-bit statistics, exception budget %.3g%%)", p_.bits,
                    100 * p_.budget);
    else if (p_.outliers())
      std::snprintf(buf, sizeof buf, "spqr (%u-bit groups of 16, 3-bit statistics, outlier threshold %.3g)", p_.bits,
                    p_.threshold);
    else
      std::snprintf(buf, sizeof buf, "spqr (%u-bit groups of 16, 3-bit statistics)", p_.bits);
    return buf;
  }
  std::string grid_name() const override { return "spqr" + std::to_string(p_.bits) + "-g16"; }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "scalar-affine-two-level";
    c.sparse_semantics = "correction";
    c.dense_hole_policy = "the code of 0 on the group's grid; the exception is added to its value";
    c.coordinate_dtype = "u16 columns, i32 row pointers";
    c.combine_order = "dense-then-sparse";
    c.packing_layout = "spqr-v1: codes u8 LSB-first per row; 6-bit (scale, zero) codes per 16 columns in one "
                       "LSB-first stream; f16 [row blocks of 16, groups, 4] second-level parameters; CSR f16";
    c.required_kernel = "spqr_gemv";
    c.op.scale = "3-bit codes with f16 second-level parameters";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return spqr::check_shape(rows, cols, p_.bits); }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    return {FieldSpec{std::string(artifact::kFieldCodes), io::DType::kU8,
                      {r, static_cast<int64_t>(spqr::row_code_bytes(cols, p_.bits))}},
            FieldSpec{"stat_codes", io::DType::kU8, {static_cast<int64_t>(spqr::stat_code_bytes(rows, cols))}},
            FieldSpec{"stat_params", io::DType::kF16,
                      {static_cast<int64_t>(spqr::stat_blocks(rows)), static_cast<int64_t>(cols / spqr::kGroup), 4}},
            FieldSpec{"row_ptr", io::DType::kI32, {r + 1}},
            FieldSpec{"exception_cols", io::DType::kU16, {}},
            FieldSpec{"exception_values", io::DType::kF16, {}}};
  }
  std::optional<SparseFootprint> sparse_footprint(uint32_t, uint32_t, std::span<const uint64_t> b) const override {
    if (b.size() != 6) return std::nullopt;
    return SparseFootprint{p_.bits, b[4] / 2, b[0] + b[1] + b[2], b[3], 4};
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(spqr::SpqrMatrix m, matrix(rows, cols, f));
    return spqr::decode(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    SUBMOE_ASSIGN_OR_RETURN(spqr::SpqrMatrix m, matrix(rows, cols, f));
    if (mode == ExecutionMode::kReferenceDecode)
      return make_reference_decoded_linear(spqr::decode(m), rows, cols, "spqr");
    return model::make_spqr_linear(std::move(m), execution_activations(mode), execution_quant(mode));
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new SpqrEncoder(rows, cols, p_));
  }

 private:
  Result<spqr::SpqrMatrix> matrix(uint32_t rows, uint32_t cols, FieldBytes f) const {
    if (f.size() != 6) return corrupt_data("spqr: " + std::to_string(f.size()) + " fields given, 6 expected");
    return spqr::from_fields(rows, cols, p_.bits,
                             spqr::SpqrFields{as_u8(f[0]), as_u8(f[1]), as_u8(f[2]), as_u8(f[3]), as_u8(f[4]),
                                              as_u8(f[5])});
  }

  SpqrParams p_;
};

class SpqrRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "spqr: SpQR, 2- to 4-bit codes (--bits, default 3) in groups of 16 columns with 3-bit scales and zeros "
           "coded again per 16 rows, plus fp16 exceptions added to the dense weights, chosen by GPTQ's error "
           "test (--repr-opt outlier_threshold=T, SpQR's relative threshold, 0.2; none = no exceptions; or "
           "outlier_budget=F, tau set per matrix for about that share of exceptions, e.g. 0.01)";
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size && *o.group_size != spqr::kGroup)
      return invalid_argument("spqr groups are 16 columns (SpQR's beta_1); --group-size " +
                              std::to_string(*o.group_size) + " is not supported");
    SpqrParams p;
    if (o.bits) {
      if (*o.bits != 2 && *o.bits != 3 && *o.bits != 4) return invalid_argument("spqr needs --bits 2, 3 or 4");
      p.bits = static_cast<uint32_t>(*o.bits);
    }
    bool threshold_given = false;
    for (const auto& [key, value] : o.extra) {
      if (key != "outlier_threshold" && key != "outlier_budget")
        return invalid_argument("--repr-opt " + key + " is not a spqr option (outlier_threshold, outlier_budget)");
      const bool budget = key == "outlier_budget";
      threshold_given |= !budget;
      if (!budget && value == "none") {
        p.threshold = std::numeric_limits<double>::infinity();
        continue;
      }
      // A number in (0, 0.1] for a budget, (0, 1e6] for a threshold.
      char* end = nullptr;
      const double d = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !(d > 0 && d <= (budget ? 0.1 : 1e6)))
        return invalid_argument("--repr-opt " + key + "=" + value +
                                (budget ? ": expected a share of the weights above 0 and at most 0.1 (e.g. 0.01 for 1%)"
                                        : ": expected a positive number (SpQR uses 0.2; smaller keeps more exceptions) "
                                          "or none"));
      (budget ? p.budget : p.threshold) = d;
    }
    if (threshold_given && p.budget > 0)
      return invalid_argument("spqr: give outlier_threshold or outlier_budget, not both");
    return std::shared_ptr<const MatrixCodec>(std::make_shared<SpqrCodec>(p));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "bits", "group", "stat_bits", "stat_rows"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t bits, k.integer("bits"));
    if (bits < 2 || bits > 4) return k.bad("bits", "must be 2, 3 or 4, got " + std::to_string(bits));
    const std::pair<const char*, uint32_t> fixed[] = {
        {"group", spqr::kGroup}, {"stat_bits", spqr::kStatBits}, {"stat_rows", spqr::kStatRows}};
    for (const auto& [key, want] : fixed) {
      SUBMOE_ASSIGN_OR_RETURN(const int64_t v, k.integer(key));
      if (v != want)
        return unsupported(where + "." + key + " is " + std::to_string(v) + "; this build executes spqr with " + key +
                           " " + std::to_string(want) + " only");
    }
    SpqrParams p;
    p.bits = static_cast<uint32_t>(bits);
    return std::shared_ptr<const MatrixCodec>(std::make_shared<SpqrCodec>(p));
  }
};

}  // namespace

const Representation& spqr_representation() {
  static const SpqrRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
