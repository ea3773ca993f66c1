// aqlm (seed 002, 0x05; REPRESENTATIONS.md §3.6): additive codes, M learned
// codebooks of 2^B entries over 8 consecutive input weights, f16 row scales,
// one codebook set per matrix (codec/aqlm.h), fitted to the input-adaptive
// objective by aqlm_solver.h (no rotation: AQLM adapts its codebooks to the
// weights instead). Record: {"representation": "aqlm", "codebooks": M,
// "code_bits": B}. Fields per matrix: codes U8 [rows, row bytes] (B-bit
// fields, codec/aqlm.h), codebooks F16 [M, 2^B, 8], scales F16 [rows].
#include "runtime/repr/aqlm/aqlm_representation.h"

#include <cmath>
#include <cstdio>

#include "runtime/repr/aqlm/aqlm_linear.h"
#include "runtime/repr/aqlm/aqlm_solver.h"
#include "runtime/repr/bytes_util.h"
#include "runtime/repr/encoder_support.h"
#include "runtime/repr/option_values.h"
#include "runtime/repr/record_keys.h"
#include "submoe/codec/aqlm.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "aqlm";

class AqlmCodec;

class AqlmEncoderHook final : public MatrixEncoder {
 public:
  AqlmEncoderHook(std::shared_ptr<const AqlmCodec> codec, uint32_t rows, uint32_t cols)
      : codec_(std::move(codec)), rows_(rows), cols_(cols) {}
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return aqlm::kDim; }
  bool solves_matrix() const override { return true; }
  double solve_matrix(std::span<const float> w, std::span<const float> h, double damp) override;
  void begin_row(size_t, std::span<const float>) override {}
  // AQLM's codes are coupled across the whole row through G: it is solved
  // per matrix (solve_matrix), never block by block.
  void quantize(size_t, size_t, const float* values, float* reconstructed) override {
    error_.set(internal_error("aqlm: quantize called; the matrix is solved whole (solves_matrix)"));
    std::copy(values, values + aqlm::kDim, reconstructed);
  }
  std::vector<float> dequantize() const override;
  Result<std::vector<PackedTensor>> pack() const override;

 private:
  std::shared_ptr<const AqlmCodec> codec_;
  uint32_t rows_, cols_;
  std::optional<aqlm::AqlmMatrix> matrix_;
  aqlm_solver::Report report_;
  FirstError error_;
};

class AqlmCodec final : public MatrixCodec, public std::enable_shared_from_this<AqlmCodec> {
 public:
  explicit AqlmCodec(aqlm_solver::Options o) : o_(o) {}
  const aqlm_solver::Options& options() const { return o_; }
  aqlm::Shape shape() const { return o_.shape; }

  const Representation& representation() const override { return aqlm_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"codebooks", o_.shape.codebooks},
            {"code_bits", o_.shape.code_bits}};
  }
  nlohmann::json provenance() const override {
    return {{"objective", "tr((W - W_hat) G (W - W_hat)^T), G = H + damp x mean(diag H) I (GPTQ's damp), I without "
                          "calibration inputs"},
            {"initialization", "row scales f16(RMS); residual k-means++ / Lloyd per codebook on the 8-weight groups "
                               "of W / s (B > 10: all sums of two residual k-means codebooks of 2^(B/2) entries)"},
            {"kmeans_iterations", o_.kmeans_iterations},
            {"kmeans_points", o_.kmeans_points},
            {"code_update", "beam search over single-code replacements under G, group by group with the "
                            "running residual (0x05D)"},
            {"beam", o_.beam},
            {"continuous_update", "codebooks: conjugate gradients on the least-squares normal equations (" +
                                      std::to_string(o_.cg_iterations) +
                                      " steps); row scales: closed-form least squares; both rounded to f16"},
            {"max_iterations", o_.max_iterations},
            {"tolerance", o_.tolerance},
            {"seed", o_.seed},
            {"fine_tuning", "none (AQLM's phase 3, block fine-tuning, is not run)"}};
  }
  std::string summary() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "aqlm (%s: %u codebook%s of %u entries, %.2f index bits per weight)",
                  o_.shape.name().c_str(), o_.shape.codebooks, o_.shape.codebooks == 1 ? "" : "s",
                  o_.shape.entries(), o_.shape.code_bits_per_weight());
    return buf;
  }
  std::string grid_name() const override { return "aqlm" + o_.shape.name(); }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "additive-vq";
    c.vector_axis = "input";
    c.vector_dim = aqlm::kDim;
    c.packing_layout = "aqlm-v1: codes u8 [rows, ceil(cols/8 x M x B / 8)], per row the (group, codebook) "
                       "indices as one LSB-first stream of B-bit fields, into per-matrix f16 [M, 2^B, 8] codebooks "
                       "(summed in codebook order); scales f16 [rows]";
    c.required_kernel = "aqlm_gemv";
    c.op.scale = "f16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return aqlm::check_matrix_shape(rows, cols); }
  Status check_encodable(uint32_t rows, uint32_t cols) const override {
    return aqlm_solver::check_fittable(rows, cols, o_.shape);
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    const auto M = static_cast<int64_t>(o_.shape.codebooks);
    return {FieldSpec{"codes", io::DType::kU8, {r, static_cast<int64_t>(aqlm::codes_row_bytes(cols, o_.shape))}},
            FieldSpec{"codebooks", io::DType::kF16, {M, static_cast<int64_t>(o_.shape.entries()), aqlm::kDim}},
            FieldSpec{"scales", io::DType::kF16, {r}}};
  }
  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(aqlm::AqlmMatrix m, parse(rows, cols, f));
    return aqlm::decode_matrix(m);
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    if (mode == ExecutionMode::kReferenceDecode) {
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, decode(rows, cols, f));
      return make_reference_decoded_linear(std::move(w), rows, cols, std::string(kName));
    }
    SUBMOE_ASSIGN_OR_RETURN(aqlm::AqlmMatrix m, parse(rows, cols, f));
    return make_aqlm_linear(m, mode);
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new AqlmEncoderHook(shared_from_this(), rows, cols));
  }

 private:
  Result<aqlm::AqlmMatrix> parse(uint32_t rows, uint32_t cols, FieldBytes f) const {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    if (f.size() != 3) return corrupt_data("aqlm: " + std::to_string(f.size()) + " fields given, 3 expected");
    return aqlm::matrix_from_bytes(rows, cols, o_.shape, as_u8(f[0]), as_u8(f[1]), as_u8(f[2]));
  }

  aqlm_solver::Options o_;
};

double AqlmEncoderHook::solve_matrix(std::span<const float> w, std::span<const float> h, double damp) {
  auto m = aqlm_solver::solve(w, rows_, cols_, h, damp, codec_->options(), &report_);
  if (!m.is_ok()) {
    error_.set(m.status());
    return 0.0;
  }
  matrix_ = std::move(m).value();
  return report_.loss_history.empty() ? 0.0 : *std::min_element(report_.loss_history.begin(),
                                                                   report_.loss_history.end());
}

std::vector<float> AqlmEncoderHook::dequantize() const {
  // pack() reports the error; the reconstruction of a failed matrix is NaN.
  if (!matrix_ || !error_.get().is_ok()) return std::vector<float>(size_t{rows_} * cols_, NAN);
  return aqlm::decode_matrix(*matrix_);
}

Result<std::vector<PackedTensor>> AqlmEncoderHook::pack() const {
  SUBMOE_RETURN_IF_ERROR(error_.get());
  if (!matrix_) return internal_error("aqlm: pack before the matrix was solved");
  const aqlm::AqlmMatrix& m = *matrix_;
  const auto r = static_cast<int64_t>(rows_), M = static_cast<int64_t>(m.shape.codebooks);
  std::vector<PackedTensor> out;
  out.push_back({"codes", io::DType::kU8, {r, static_cast<int64_t>(aqlm::codes_row_bytes(cols_, m.shape))},
                 aqlm::codes_to_bytes(m)});
  out.push_back({"codebooks", io::DType::kF16, {M, static_cast<int64_t>(m.shape.entries()), aqlm::kDim},
                 bytes_of(m.codebooks)});
  out.push_back({"scales", io::DType::kF16, {r}, bytes_of(m.scales)});
  return out;
}

class AqlmRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "aqlm: AQLM additive codes, M learned codebooks of 2^B entries per matrix over 8 consecutive inputs, "
           "f16 row scales, fitted to ||(W - W_hat) X||^2 by beam search and least squares; --bits R picks Rx8 "
           "(R = 1..8), or --repr-opt shape=MxB (2x8, 1x16, 3x5, ...; --bits, if given, must equal M x B / 8); "
           "--repr-opt beam=N (4), iters=N (4 alternations), tolerance=F (1e-3), kmeans_iters=N (12), "
           "cg_iters=N (16), seed=N";
  }
  static Result<aqlm_solver::Options> params_of(const ReprOptions& o) {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size) return invalid_argument("--group-size applies to int, nf4 and spqr (aqlm has one scale per row)");
    aqlm_solver::Options p;
    std::optional<aqlm::Shape> shape;
    for (const auto& [key, value] : o.extra) {
      if (key == "shape") {
        SUBMOE_ASSIGN_OR_RETURN(aqlm::Shape s, aqlm::parse_shape(value));
        shape = s;
      } else if (key == "beam") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 1, 64));
        p.beam = static_cast<uint32_t>(v);
      } else if (key == "iters") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 0, 100));
        p.max_iterations = static_cast<uint32_t>(v);
      } else if (key == "tolerance") {
        SUBMOE_ASSIGN_OR_RETURN(p.tolerance, option_number(key, value, 0, 1));
      } else if (key == "kmeans_iters") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 0, 1000));
        p.kmeans_iterations = static_cast<uint32_t>(v);
      } else if (key == "cg_iters") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 0, 1000));
        p.cg_iterations = static_cast<uint32_t>(v);
      } else if (key == "seed") {
        SUBMOE_ASSIGN_OR_RETURN(p.seed, option_uint(key, value, 0, UINT64_MAX));
      } else {
        return invalid_argument("--repr-opt " + key +
                                " is not an aqlm option (shape, beam, iters, tolerance, kmeans_iters, cg_iters, seed)");
      }
    }
    if (shape) {
      if (o.bits && *o.bits != shape->code_bits_per_weight())
        return invalid_argument("aqlm --bits " + std::to_string(*o.bits) + " does not match shape " + shape->name() +
                                " (" + std::to_string(shape->code_bits_per_weight()) +
                                " index bits per weight); give one or the other");
      p.shape = *shape;
    } else {
      if (!o.bits) return invalid_argument("aqlm needs --bits (1 to 8: Rx8 codes) or --repr-opt shape=MxB");
      const double b = *o.bits;
      if (b != std::floor(b) || b < 1 || b > aqlm::kMaxCodebooks)
        return invalid_argument("aqlm --bits must be a whole number from 1 to 8 (R codebooks of 256 entries), got " +
                                std::to_string(b) + "; other rates: --repr-opt shape=MxB");
      p.shape = {static_cast<uint32_t>(b), 8};
    }
    return p;
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_ASSIGN_OR_RETURN(const aqlm_solver::Options p, params_of(o));
    return std::shared_ptr<const MatrixCodec>(std::make_shared<AqlmCodec>(p));
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "codebooks", "code_bits"}));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t m, k.integer("codebooks"));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t b, k.integer("code_bits"));
    if (m < 1 || m > aqlm::kMaxCodebooks) return k.bad("codebooks", "= " + std::to_string(m) + ", must be 1..8");
    if (b < 1 || b > aqlm::kMaxCodeBits) return k.bad("code_bits", "= " + std::to_string(b) + ", must be 1..16");
    aqlm_solver::Options p;
    p.shape = {static_cast<uint32_t>(m), static_cast<uint32_t>(b)};
    return std::shared_ptr<const MatrixCodec>(std::make_shared<AqlmCodec>(p));
  }
};

}  // namespace

const Representation& aqlm_representation() {
  static const AqlmRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
