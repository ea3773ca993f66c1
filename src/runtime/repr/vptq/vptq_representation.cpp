// vptq (seed 002, 0x07; REPRESENTATIONS.md §3.9): vectors of 8 output rows
// within one input column (codec/vptq.h), f16 column scales, a learned main
// codebook plus an optional residual codebook and an optional outlier
// codebook for the columns hardest under the Hessian, one set per matrix.
// Codebooks: Hessian-weighted k-means (0x07D: a vector of column q weighs
// H_qq) on the columns' vectors divided by their column scale, the residual
// one on what the main one leaves. Assignment: GPTQ's column order (block
// width 1) with every 8-row block of rows walked in lockstep (row_block 8,
// group width 1), so at each column the solver hands over the 8 current
// values of every vector and the encoder takes the nearest centroid (0x07B:
// within a column the second-order loss is plain Euclidean), then the
// nearest residual centroid. Row-scaled (the default): each output row is
// divided by its f16 RMS before all of this (prepare, as a rotation would be)
// and the scales are stored. Record: {"representation": "vptq", "bits": B,
// "residual_bits": Br, "row_scales": bool}.
#include "runtime/repr/vptq/vptq_representation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/encoder_support.h"
#include "runtime/repr/kmeans8.h"
#include "runtime/repr/option_values.h"
#include "runtime/repr/record_keys.h"
#include "runtime/repr/vptq/vptq_linear.h"
#include "submoe/codec/vptq.h"
#include "submoe/core/bf16.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "vptq";
constexpr uint32_t D = vptq::kDim;

struct VptqParams {
  vptq::Shape shape;
  double outliers = 0.0;  // encoder only: share of columns with their own codebook
  uint32_t kmeans_iterations = 12;
  uint32_t kmeans_points = 65536;
  uint64_t seed = 1;
};

float to_f16_value(float x) {
  return f16_bits_to_float(float_to_f16_bits(std::clamp(x, -vptq::kMaxEntryMagnitude, vptq::kMaxEntryMagnitude)));
}

// The nearest of `k` 8-float entries to t (ties to the lower index).
uint32_t nearest(const float* book, uint32_t k, const float* t) {
  uint32_t best = 0;
  float best_d = INFINITY;
  for (uint32_t e = 0; e < k; ++e) {
    float d = 0;
    for (uint32_t i = 0; i < D; ++i) {
      const float x = t[i] - book[size_t{e} * D + i];
      d += x * x;
    }
    if (d < best_d) {
      best_d = d;
      best = e;
    }
  }
  return best;
}

class VptqCodec;

class VptqEncoderHook final : public MatrixEncoder {
 public:
  VptqEncoderHook(std::shared_ptr<const VptqCodec> codec, uint32_t rows, uint32_t cols);
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return 1; }
  size_t group_width() const override { return 1; }
  size_t row_block() const override { return D; }
  bool rotates() const override { return m_.shape.row_scaled; }
  Status prepare(std::vector<float>& w, std::vector<float>& h) override;
  void begin_matrix(std::span<const float> w, std::span<const float> h_diag) override;
  void begin_row(size_t, std::span<const float>) override {}
  void begin_groups(size_t r0, size_t r1, size_t c, const float* current, size_t ld) override;
  void quantize(size_t r, size_t c, const float* values, float* reconstructed) override;
  std::vector<float> dequantize() const override;
  Result<std::vector<PackedTensor>> pack() const override;

 private:
  Status train(std::span<const float> w, std::span<const float> h_diag);
  Result<vptq::VptqMatrix> matrix() const;

  std::shared_ptr<const VptqCodec> codec_;
  uint32_t rows_, cols_;
  vptq::VptqMatrix m_;        // indices, codebooks (f16), scales, outliers
  std::vector<float> book_, residual_book_, outlier_book_;  // their f32 values
  std::vector<float> scale_;  // f32 of the column scales
  std::vector<uint8_t> is_outlier_;
  std::vector<float> recon_;  // [rows, cols]: the reconstruction, filled column by column
  bool trained_ = false;
  FirstError error_;
};

class VptqCodec final : public MatrixCodec, public std::enable_shared_from_this<VptqCodec> {
 public:
  explicit VptqCodec(VptqParams p) : p_(p) {}
  const VptqParams& params() const { return p_; }

  const Representation& representation() const override { return vptq_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"bits", p_.shape.bits},
            {"residual_bits", p_.shape.residual_bits},
            {"row_scales", p_.shape.row_scaled}};
  }
  nlohmann::json provenance() const override {
    return {{"codebooks", "Hessian-weighted k-means++ / Lloyd (a vector of column q weighs H_qq; uniform without "
                          "calibration inputs) on the vectors divided by their column scale; the residual codebook on "
                          "what the main one leaves; the outlier codebook on the outlier columns' vectors alone"},
            {"kmeans_iterations", p_.kmeans_iterations},
            {"kmeans_points", p_.kmeans_points},
            {"seed", p_.seed},
            {"outlier_share", p_.outliers},
            {"outlier_columns", "the columns with the largest H_qq ||W[:, q]||^2"},
            {"assignment", "GPTQ column order with error feedback; per column the nearest centroid of each 8-row "
                           "vector, then the nearest residual centroid (0x07B)"},
            {"column_scale", "f16(RMS of the column)"},
            {"row_scale", p_.shape.row_scaled ? "f16(RMS of the row), divided out before the codebooks are fitted"
                                              : "none"},
            {"fine_tuning", "none (VPTQ's layer-wise codebook refinement is not run)"}};
  }
  std::string summary() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "vptq (%s: v 8 along the output, %u-entry codebook%s, %.2f index bits per weight)",
                  p_.shape.name().c_str(), p_.shape.entries(),
                  p_.shape.residual_bits ? (" + " + std::to_string(p_.shape.residual_entries()) + " residual").c_str()
                                         : "",
                  p_.shape.index_bits_per_weight());
    return buf;
  }
  std::string grid_name() const override { return "vptq" + p_.shape.name(); }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "vector-lut";
    c.vector_axis = "output";
    c.vector_dim = D;
    c.packing_layout = "vptq-v1: per input column, rows/8 B-bit main (and Br-bit residual) indices as LSB-first "
                       "streams into per-matrix f16 [2^B, 8] (and [2^Br, 8]) codebooks; outlier columns u32 with "
                       "their own f16 [2^B, 8] codebook; scales f16 [cols]; row-scaled: row_scales f16 [rows] "
                       "multiplying each output";
    c.required_kernel = "vptq_gemv";
    c.op.scale = "f16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return vptq::check_matrix_shape(rows, cols); }
  Status check_encodable(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    const uint64_t vectors = uint64_t{rows / D} * cols;
    const uint64_t most = std::max(p_.shape.entries(), p_.shape.residual_entries());
    if (vectors < most)
      return invalid_argument("vptq " + p_.shape.name() + ": a [" + std::to_string(rows) + ", " +
                              std::to_string(cols) + "] matrix has " + std::to_string(vectors) +
                              " vectors of 8, fewer than the " + std::to_string(most) +
                              " entries of its largest codebook (use fewer index bits)");
    return Status::ok();
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto c = static_cast<int64_t>(cols);
    std::vector<FieldSpec> f = {
        FieldSpec{"indices", io::DType::kU8, {c, static_cast<int64_t>(vptq::index_column_bytes(rows, p_.shape.bits))}},
        FieldSpec{"codebook", io::DType::kF16, {static_cast<int64_t>(p_.shape.entries()), D}}};
    if (p_.shape.residual_bits) {
      f.push_back(FieldSpec{"residual_indices", io::DType::kU8,
                            {c, static_cast<int64_t>(vptq::index_column_bytes(rows, p_.shape.residual_bits))}});
      f.push_back(FieldSpec{"residual_codebook", io::DType::kF16, {static_cast<int64_t>(p_.shape.residual_entries()), D}});
    }
    // Outliers: a list of any length (possibly empty) and, only with it, a
    // codebook of 2^B x 8 values (1-D; matrix_from_bytes checks the length).
    f.push_back(FieldSpec{"outlier_columns", io::DType::kU32, {}, 1});
    f.push_back(FieldSpec{"outlier_codebook", io::DType::kF16, {}, D});
    f.push_back(FieldSpec{"scales", io::DType::kF16, {c}});
    if (p_.shape.row_scaled) f.push_back(FieldSpec{"row_scales", io::DType::kF16, {static_cast<int64_t>(rows)}});
    return f;
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(vptq::VptqMatrix m, parse(rows, cols, f));
    return vptq::decode_matrix(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    if (mode == ExecutionMode::kReferenceDecode) {
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, decode(rows, cols, f));
      return make_reference_decoded_linear(std::move(w), rows, cols, std::string(kName));
    }
    SUBMOE_ASSIGN_OR_RETURN(vptq::VptqMatrix m, parse(rows, cols, f));
    return make_vptq_linear(m, mode);
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new VptqEncoderHook(shared_from_this(), rows, cols));
  }

 private:
  Result<vptq::VptqMatrix> parse(uint32_t rows, uint32_t cols, FieldBytes f) const {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    const size_t want = fields(rows, cols).size();
    if (f.size() != want)
      return corrupt_data("vptq: " + std::to_string(f.size()) + " fields given, " + std::to_string(want) + " expected");
    vptq::FieldsIn in;
    size_t i = 0;
    in.indices = as_u8(f[i++]);
    in.codebook = as_u8(f[i++]);
    if (p_.shape.residual_bits) {
      in.residual_indices = as_u8(f[i++]);
      in.residual_codebook = as_u8(f[i++]);
    }
    in.outlier_columns = as_u8(f[i++]);
    in.outlier_codebook = as_u8(f[i++]);
    in.scales = as_u8(f[i++]);
    if (p_.shape.row_scaled) in.row_scales = as_u8(f[i++]);
    return vptq::matrix_from_bytes(rows, cols, p_.shape, in);
  }

  VptqParams p_;
};

VptqEncoderHook::VptqEncoderHook(std::shared_ptr<const VptqCodec> codec, uint32_t rows, uint32_t cols)
    : codec_(std::move(codec)), rows_(rows), cols_(cols) {
  m_.rows = rows;
  m_.cols = cols;
  m_.shape = codec_->params().shape;
  m_.indices.assign(size_t{cols} * (rows / D), 0);
  if (m_.shape.residual_bits) m_.residual_indices.assign(m_.indices.size(), 0);
  recon_.assign(size_t{rows} * cols, 0.0f);
}

Status VptqEncoderHook::prepare(std::vector<float>& w, std::vector<float>&) {
  // W <- diag(1 / r) W, r = f16(RMS of each row); an all-zero row keeps r = 0 and stays zero.
  m_.row_scales.assign(rows_, 0);
  for (uint32_t r = 0; r < rows_; ++r) {
    float* row = w.data() + size_t{r} * cols_;
    double ss = 0;
    for (uint32_t c = 0; c < cols_; ++c) ss += double{row[c]} * row[c];
    m_.row_scales[r] = float_to_f16_bits(to_f16_value(static_cast<float>(std::sqrt(ss / cols_))));
    const float s = f16_bits_to_float(m_.row_scales[r]);
    for (uint32_t c = 0; c < cols_; ++c) row[c] = s > 0 ? row[c] / s : 0.0f;
  }
  return Status::ok();
}

void VptqEncoderHook::begin_matrix(std::span<const float> w, std::span<const float> h_diag) {
  const Status st = train(w, h_diag);
  if (!st.is_ok()) error_.set(st.with_context("vptq codebooks"));
  trained_ = st.is_ok();
}

Status VptqEncoderHook::train(std::span<const float> w, std::span<const float> h_diag) {
  const VptqParams& p = codec_->params();
  const uint32_t per_col = rows_ / D;
  // Column scales: f16(RMS); the vectors are coded in units of them.
  scale_.assign(cols_, 0.0f);
  m_.scales.assign(cols_, 0);
  std::vector<double> difficulty(cols_);
  for (uint32_t q = 0; q < cols_; ++q) {
    double ss = 0;
    for (uint32_t r = 0; r < rows_; ++r) ss += double{w[size_t{r} * cols_ + q]} * w[size_t{r} * cols_ + q];
    m_.scales[q] = float_to_f16_bits(to_f16_value(static_cast<float>(std::sqrt(ss / rows_))));
    scale_[q] = f16_bits_to_float(m_.scales[q]);
    difficulty[q] = (h_diag.empty() ? 1.0 : double{h_diag[q]}) * ss;
  }
  // Outlier columns: the largest H_qq ||w_q||^2, in column order.
  is_outlier_.assign(cols_, 0);
  m_.outlier_columns.clear();
  const auto n_out = static_cast<uint32_t>(std::floor(p.outliers * cols_));
  if (n_out > 0) {
    std::vector<uint32_t> order(cols_);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return difficulty[a] > difficulty[b]; });
    for (uint32_t i = 0; i < n_out; ++i) is_outlier_[order[i]] = 1;
    for (uint32_t q = 0; q < cols_; ++q)
      if (is_outlier_[q]) m_.outlier_columns.push_back(q);
  }
  // Training vectors (column-normalized) and their weights, main and outlier sets apart.
  std::vector<float> main_pts, out_pts, main_wt, out_wt;
  for (uint32_t q = 0; q < cols_; ++q) {
    const float inv = scale_[q] > 0 ? 1.0f / scale_[q] : 0.0f;
    const float wt = h_diag.empty() ? 1.0f : std::max(h_diag[q], 1e-12f);
    auto& pts = is_outlier_[q] ? out_pts : main_pts;
    auto& wts = is_outlier_[q] ? out_wt : main_wt;
    for (uint32_t j = 0; j < per_col; ++j) {
      for (uint32_t i = 0; i < D; ++i) pts.push_back(w[size_t{j * D + i} * cols_ + q] * inv);
      wts.push_back(wt);
    }
  }
  KMeansOptions ko;
  ko.max_iterations = p.kmeans_iterations;
  ko.max_points = p.kmeans_points;
  ko.seed = p.seed;
  auto fit = [&](std::vector<float>& pts, const std::vector<float>& wts, uint32_t k, std::vector<float>& book,
                 std::vector<uint16_t>& stored) -> Status {
    const uint32_t kk = std::min<uint32_t>(k, static_cast<uint32_t>(pts.size() / D));
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> c, kmeans8(pts, kk, ko, wts));
    c.resize(size_t{k} * D, 0.0f);  // fewer vectors than entries (outlier sets): unused entries stay zero
    book.resize(c.size());
    stored.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      stored[i] = float_to_f16_bits(to_f16_value(c[i]));
      book[i] = f16_bits_to_float(stored[i]);
    }
    return Status::ok();
  };
  SUBMOE_RETURN_IF_ERROR(fit(main_pts, main_wt, m_.shape.entries(), book_, m_.codebook));
  if (!out_pts.empty()) SUBMOE_RETURN_IF_ERROR(fit(out_pts, out_wt, m_.shape.entries(), outlier_book_, m_.outlier_codebook));
  if (m_.shape.residual_bits) {
    // The residual of every vector after its main (or outlier) centroid.
    std::vector<float> res, wts;
    for (uint32_t q = 0; q < cols_; ++q) {
      const float inv = scale_[q] > 0 ? 1.0f / scale_[q] : 0.0f;
      const std::vector<float>& b = is_outlier_[q] ? outlier_book_ : book_;
      for (uint32_t j = 0; j < per_col; ++j) {
        float t[D];
        for (uint32_t i = 0; i < D; ++i) t[i] = w[size_t{j * D + i} * cols_ + q] * inv;
        const uint32_t a = nearest(b.data(), m_.shape.entries(), t);
        for (uint32_t i = 0; i < D; ++i) res.push_back(t[i] - b[size_t{a} * D + i]);
        wts.push_back(h_diag.empty() ? 1.0f : std::max(h_diag[q], 1e-12f));
      }
    }
    SUBMOE_RETURN_IF_ERROR(fit(res, wts, m_.shape.residual_entries(), residual_book_, m_.residual_codebook));
  }
  return Status::ok();
}

void VptqEncoderHook::begin_groups(size_t r0, size_t r1, size_t c, const float* current, size_t ld) {
  if (!trained_) return;
  if (r1 - r0 != D) {
    error_.set(internal_error("vptq: the solver's row block is not 8 rows"));
    return;
  }
  const float s = scale_[c];
  const size_t v = c * (rows_ / D) + r0 / D;
  float out[D] = {};
  if (s > 0) {
    float t[D];
    for (uint32_t i = 0; i < D; ++i) t[i] = current[i * ld] / s;
    const std::vector<float>& b = is_outlier_[c] ? outlier_book_ : book_;
    const uint32_t a = nearest(b.data(), m_.shape.entries(), t);
    m_.indices[v] = static_cast<uint16_t>(a);
    for (uint32_t i = 0; i < D; ++i) out[i] = b[size_t{a} * D + i];
    if (m_.shape.residual_bits) {
      float rest[D];
      for (uint32_t i = 0; i < D; ++i) rest[i] = t[i] - out[i];
      const uint32_t e = nearest(residual_book_.data(), m_.shape.residual_entries(), rest);
      m_.residual_indices[v] = static_cast<uint16_t>(e);
      for (uint32_t i = 0; i < D; ++i) out[i] += residual_book_[size_t{e} * D + i];
    }
  }
  // Exactly the decoder's value: s x (main + residual) in f32.
  for (uint32_t i = 0; i < D; ++i) recon_[(r0 + i) * cols_ + c] = s * out[i];
}

void VptqEncoderHook::quantize(size_t r, size_t c, const float*, float* reconstructed) {
  reconstructed[0] = recon_[r * cols_ + c];
}

Result<vptq::VptqMatrix> VptqEncoderHook::matrix() const {
  SUBMOE_RETURN_IF_ERROR(error_.get());
  if (!trained_) return internal_error("vptq: pack before the matrix was quantized");
  if (m_.shape.row_scaled && m_.row_scales.size() != rows_)
    return internal_error("vptq: row-scaled matrix quantized without prepare");
  return m_;
}

std::vector<float> VptqEncoderHook::dequantize() const {
  auto m = matrix();
  // pack() reports the error; the reconstruction of a failed matrix is NaN.
  if (!m.is_ok()) return std::vector<float>(size_t{rows_} * cols_, NAN);
  return vptq::decode_matrix(*m);
}

Result<std::vector<PackedTensor>> VptqEncoderHook::pack() const {
  SUBMOE_ASSIGN_OR_RETURN(vptq::VptqMatrix m, matrix());
  const auto c = static_cast<int64_t>(cols_);
  std::vector<PackedTensor> out;
  out.push_back({"indices", io::DType::kU8,
                 {c, static_cast<int64_t>(vptq::index_column_bytes(rows_, m.shape.bits))},
                 vptq::pack_indices(m.indices, rows_, cols_, m.shape.bits)});
  out.push_back({"codebook", io::DType::kF16, {static_cast<int64_t>(m.shape.entries()), D}, bytes_of(m.codebook)});
  if (m.shape.residual_bits) {
    out.push_back({"residual_indices", io::DType::kU8,
                   {c, static_cast<int64_t>(vptq::index_column_bytes(rows_, m.shape.residual_bits))},
                   vptq::pack_indices(m.residual_indices, rows_, cols_, m.shape.residual_bits)});
    out.push_back({"residual_codebook", io::DType::kF16, {static_cast<int64_t>(m.shape.residual_entries()), D},
                   bytes_of(m.residual_codebook)});
  }
  out.push_back({"outlier_columns", io::DType::kU32, {static_cast<int64_t>(m.outlier_columns.size())},
                 bytes_of(m.outlier_columns)});
  out.push_back({"outlier_codebook", io::DType::kF16, {static_cast<int64_t>(m.outlier_codebook.size())},
                 bytes_of(m.outlier_codebook)});
  out.push_back({"scales", io::DType::kF16, {c}, bytes_of(m.scales)});
  if (m.shape.row_scaled)
    out.push_back({"row_scales", io::DType::kF16, {static_cast<int64_t>(rows_)}, bytes_of(m.row_scales)});
  return out;
}

class VptqRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "vptq: VPTQ vector codes, vectors of 8 output rows per input column, a learned main codebook + residual "
           "codebook per matrix (Hessian-weighted k-means), GPTQ column order; --bits R gives (4R)+(4R)-bit "
           "indices (2: 8+8), or --repr-opt shape=B[+Br] (--bits, if given, must equal (B + Br) / 8); "
           "--repr-opt row_scales=on|off (an f16 scale per output row divided out first, on), outliers=F (share of "
           "columns with their own codebook, 0), kmeans_iters=N, seed=N";
  }
  static Result<VptqParams> params_of(const ReprOptions& o) {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size) return invalid_argument("--group-size applies to int, nf4 and spqr (vptq has one scale per column)");
    VptqParams p;
    std::optional<vptq::Shape> shape;
    bool row_scaled = true;
    for (const auto& [key, value] : o.extra) {
      if (key == "shape") {
        vptq::Shape s;
        const size_t plus = value.find('+');
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t b, option_uint(key, value.substr(0, plus), 1, vptq::kMaxBits));
        s.bits = static_cast<uint32_t>(b);
        if (plus != std::string::npos) {
          SUBMOE_ASSIGN_OR_RETURN(const uint64_t r, option_uint(key, value.substr(plus + 1), 1, vptq::kMaxBits));
          s.residual_bits = static_cast<uint32_t>(r);
        }
        shape = s;
      } else if (key == "row_scales") {
        if (value != "on" && value != "off")
          return invalid_argument("--repr-opt row_scales=" + value + ": expected on or off");
        row_scaled = value == "on";
      } else if (key == "outliers") {
        SUBMOE_ASSIGN_OR_RETURN(p.outliers, option_number(key, value, 0, 0.5));
      } else if (key == "kmeans_iters") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 0, 1000));
        p.kmeans_iterations = static_cast<uint32_t>(v);
      } else if (key == "seed") {
        SUBMOE_ASSIGN_OR_RETURN(p.seed, option_uint(key, value, 0, UINT64_MAX));
      } else {
        return invalid_argument("--repr-opt " + key +
                                " is not a vptq option (shape, row_scales, outliers, kmeans_iters, seed)");
      }
    }
    if (shape) {
      if (o.bits && *o.bits != shape->index_bits_per_weight())
        return invalid_argument("vptq --bits " + std::to_string(*o.bits) + " does not match shape " + shape->name() +
                                " (" + std::to_string(shape->index_bits_per_weight()) +
                                " index bits per weight); give one or the other");
      p.shape = *shape;
    } else {
      if (!o.bits) return invalid_argument("vptq needs --bits (1 to 4) or --repr-opt shape=B[+Br]");
      const double b = *o.bits;
      if (b != std::floor(b) || b < 1 || b > 4)
        return invalid_argument("vptq --bits must be 1, 2, 3 or 4 ((4R)+(4R)-bit indices), got " + std::to_string(b) +
                                "; other rates: --repr-opt shape=B[+Br]");
      p.shape = {static_cast<uint32_t>(4 * b), static_cast<uint32_t>(4 * b)};
    }
    p.shape.row_scaled = row_scaled;
    return p;
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_ASSIGN_OR_RETURN(const VptqParams p, params_of(o));
    return std::shared_ptr<const MatrixCodec>(std::make_shared<VptqCodec>(p));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "bits", "residual_bits", "row_scales"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t b, k.integer("bits"));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t r, k.integer("residual_bits"));
    if (b < 1 || b > vptq::kMaxBits) return k.bad("bits", "= " + std::to_string(b) + ", must be 1..16");
    if (r < 0 || r > vptq::kMaxBits) return k.bad("residual_bits", "= " + std::to_string(r) + ", must be 0..16");
    const auto it = record.find("row_scales");
    if (it == record.end()) return k.bad("row_scales", "is missing");
    if (!it->is_boolean()) return k.type("row_scales", "a boolean");
    VptqParams p;
    p.shape = {static_cast<uint32_t>(b), static_cast<uint32_t>(r), it->get<bool>()};
    return std::shared_ptr<const MatrixCodec>(std::make_shared<VptqCodec>(p));
  }
};

}  // namespace

const Representation& vptq_representation() {
  static const VptqRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
