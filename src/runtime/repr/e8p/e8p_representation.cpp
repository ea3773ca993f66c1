// e8p (seed 002, 0x06; REPRESENTATIONS.md §3.7 and §3.11): QuIP#'s E8P lattice
// code on W' = T_o W T_i^T (randomized Hadamard, kernels/hadamard.h), rows
// scaled by an f16 RMS, 8-weight vectors along the input axis rounded to the
// nearest codeword inside the solver's block feedback (BlockLDLQ over 8 x 8
// blocks: quant/gptq.h with block width 8), plus QuIP#'s residual stages at 3
// bits (E8 1-bit, rho 2.04) and 4 bits (a second E8P, rho 3.45).
// Record: {"representation": "e8p", "bits": 2|3|4, "rotation": "rht"|"none",
// "codebook": "e8p12", "codebook_crc32": "b1a1a044"}; the table is rebuilt at
// load and its CRC-32 checked against the record (a table in another order
// would silently corrupt every code). Fields per matrix: codes U16 [rows,
// cols/8], at 3 bits residual U8 and at 4 bits residual U16 [rows, cols/8],
// scales F16 [rows], with "rht" rht_seeds U64 [2].
#include "runtime/repr/e8p/e8p_representation.h"

#include <cmath>
#include <cstdio>
#include <array>
#include <cstdlib>
#include <mutex>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/encoder_support.h"
#include "runtime/repr/e8p/e8p_linear.h"
#include "runtime/repr/record_keys.h"
#include "runtime/repr/rvq/rvq_rotation.h"
#include "submoe/codec/e8p.h"
#include "submoe/core/bf16.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "e8p";
constexpr const char* kCodebook = "e8p12";

std::string crc_hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

// The MSE-optimal RMS of a row in codeword units on N(0, 1) vectors (measured
// by sweeping 0.80..1.15 over 160,000 weights per rate: 1.03 at 2 bits, QuIP#'s
// opt_scale; 1.00 at 3 bits; 0.92 at 4 bits).
float default_row_rms(uint32_t bits) { return bits == 2 ? 1.03f : bits == 3 ? 1.0f : 0.92f; }

struct E8pParams {
  uint32_t bits = 2;
  bool rht = true;
  float row_rms = 1.03f;  // encoder only: the rows' RMS in codeword units
  // Encoder only: the codeword of each block chosen among the `candidates`
  // nearest (Euclidean) stage-1 codewords under the solver's block metric
  // ||(w_F - q_F) U_FF^-1|| (quant/block_quantizer.h begin_columns), or the
  // nearest one (QuIP#'s rounding).
  bool block_metric = true;
  uint32_t candidates = 16;
  // Encoder only: the stored row scale is beta x RMS_r / row_rms with beta =
  // <t, c> / <c, c> of a nearest-codeword pre-encoding c of the row's t =
  // w / (RMS_r / row_rms): the least-squares gain of the reconstruction (a
  // lattice does not shrink its inputs the way centroids do: its
  // reconstructions carry the error's energy on top of the row's, beta < 1).
  // Off by default: +-1% on Gaussian layers, and 0.0017 nats worse on the
  // embedded model at 2 bits (docs/results.md section 8).
  bool ls_gain = false;
};

class E8pCodec;

class E8pEncoderHook final : public MatrixEncoder {
 public:
  E8pEncoderHook(std::shared_ptr<const E8pCodec> codec, uint32_t rows, uint32_t cols);
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return e8p::kDim; }
  bool rotates() const override;
  Status prepare(std::vector<float>& w, std::vector<float>& h) override;
  void begin_row(size_t r, std::span<const float> original) override;
  void begin_columns(size_t c0, size_t c1, const float* u, size_t ld) override;
  void quantize(size_t r, size_t c, const float* values, float* reconstructed) override;
  std::vector<float> dequantize() const override;
  Result<std::vector<PackedTensor>> pack() const override;

 private:
  Result<e8p::E8pMatrix> matrix() const;
  // Stage codes of target t: the nearest, or the best of the candidates under metric a.
  void choose(const float t[e8p::kDim], const float* a, uint16_t* c1, uint16_t* c2, float v[e8p::kDim]) const;

  std::shared_ptr<const E8pCodec> codec_;
  uint32_t rows_, cols_;
  uint64_t seed_out_, seed_in_;
  std::vector<uint16_t> scales_;
  std::vector<float> encode_scales_;  // per row: the scale codes are chosen at (RMS / row_rms)
  std::vector<uint16_t> codes_, residual_;
  // A = U_FF^-1 (upper triangular, row-major) per 8-column block of the
  // solver's current columns [metric_c0_, ...).
  size_t metric_c0_ = 0;
  std::vector<std::array<float, e8p::kDim * e8p::kDim>> metrics_;
  FirstError error_;
};

class E8pCodec final : public MatrixCodec, public std::enable_shared_from_this<E8pCodec> {
 public:
  explicit E8pCodec(E8pParams p) : p_(p) {}
  const E8pParams& params() const { return p_; }

  const Representation& representation() const override { return e8p_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"bits", p_.bits},
            {"rotation", p_.rht ? "rht" : "none"},
            {"codebook", kCodebook},
            {"codebook_crc32", crc_hex(e8p::kE8pTableCrc32)}};
  }
  nlohmann::json provenance() const override {
    return {{"rounding", p_.block_metric
                             ? "each 8-column block after the solver's block feedback (BlockLDLQ): the best, under "
                               "the solver's block metric ||(w_F - q_F) U_FF^-1||^2, of the " +
                                   std::to_string(p_.candidates) +
                                   " Euclidean-nearest stage-1 codewords (each with its greedy stage 2); Euclidean "
                                   "nearest without a Hessian"
                             : "nearest codeword (exact Euclidean search over the 256 abs patterns x both shifts) "
                               "of each 8-column block after the solver's block feedback (BlockLDLQ); residual "
                               "stages greedy, as QuIP#"},
            {"row_scale", p_.ls_gain ? "f16(beta_r x RMS_r / " + std::to_string(p_.row_rms) +
                                           ") per row of the rotated matrix, beta_r = <t, c> / <c, c> of a "
                                           "nearest-codeword pre-encoding c of t = the row / (RMS_r / row_rms); "
                                           "codes chosen for the row / (RMS_r / row_rms)"
                                     : "f16(RMS_r / " + std::to_string(p_.row_rms) + ") per row of the rotated matrix"},
            {"fine_tuning", "none (QuIP#'s block and end-to-end fine-tuning are not run)"},
            {"rotation_seeds", "rvq_default_seed(width) per matrix, recorded in rht_seeds"}};
  }
  std::string summary() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "e8p (%u bits: %s, d 8%s)", p_.bits,
                  p_.bits == 2   ? "E8P"
                  : p_.bits == 3 ? "E8P + E8 1-bit"
                                 : "E8P + E8P",
                  p_.rht ? ", rht" : ", no rotation");
    return buf;
  }
  std::string grid_name() const override { return "e8p" + std::to_string(p_.bits); }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "lattice-vq";
    c.vector_axis = "input";
    c.vector_dim = e8p::kDim;
    if (p_.rht) {
      c.input_transform = "rht (x -> T_i x, seeds in rht_seeds)";
      c.output_transform = "rht-transpose (y -> T_o^T y)";
    }
    c.packing_layout = "e8p-v1: codes u16 [rows, cols/8] = (abs index << 8) | sign byte into the rebuilt 256-entry "
                       "E8P table (CRC-32 b1a1a044); residual u8 (E8 1-bit) or u16 (E8P) [rows, cols/8]; scales f16 "
                       "[rows]";
    c.required_kernel = "e8p_gemv";
    c.op.scale = "f16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override { return e8p::check_shape(rows, cols); }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows), k = static_cast<int64_t>(cols / e8p::kDim);
    std::vector<FieldSpec> f = {FieldSpec{"codes", io::DType::kU16, {r, k}}};
    if (p_.bits == 3) f.push_back(FieldSpec{"residual", io::DType::kU8, {r, k}});
    if (p_.bits == 4) f.push_back(FieldSpec{"residual", io::DType::kU16, {r, k}});
    f.push_back(FieldSpec{"scales", io::DType::kF16, {r}});
    if (p_.rht) f.push_back(FieldSpec{"rht_seeds", io::DType::kU64, {2}});
    return f;
  }

  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(Parsed m, parse(rows, cols, f));
    std::vector<float> w = e8p::decode_matrix(m.matrix);
    if (m.rotation) SUBMOE_RETURN_IF_ERROR(m.rotation->unrotate(w));
    return w;
  }
  Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                   ExecutionMode mode) const override {
    if (mode == ExecutionMode::kReferenceDecode) {
      SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, decode(rows, cols, f));
      return make_reference_decoded_linear(std::move(w), rows, cols, std::string(kName));
    }
    SUBMOE_ASSIGN_OR_RETURN(Parsed m, parse(rows, cols, f));
    return make_e8p_linear(m.matrix, std::move(m.rotation), mode);
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new E8pEncoderHook(shared_from_this(), rows, cols));
  }

 private:
  struct Parsed {
    e8p::E8pMatrix matrix;
    std::optional<RvqRotation> rotation;
  };
  Result<Parsed> parse(uint32_t rows, uint32_t cols, FieldBytes f) const {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    const size_t want = fields(rows, cols).size();
    if (f.size() != want)
      return corrupt_data("e8p: " + std::to_string(f.size()) + " fields given, " + std::to_string(want) + " expected");
    const bool has_residual = p_.bits > 2;
    const std::span<const std::byte> none;
    Parsed out;
    SUBMOE_ASSIGN_OR_RETURN(out.matrix, e8p::matrix_from_bytes(rows, cols, p_.bits, as_u8(f[0]),
                                                               as_u8(has_residual ? f[1] : none),
                                                               as_u8(f[has_residual ? 2 : 1])));
    if (p_.rht) {
      SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, rotation_of_seeds(rows, cols, f[has_residual ? 3 : 2], "e8p"));
      out.rotation = std::move(rot);
    }
    return out;
  }

  E8pParams p_;
};

E8pEncoderHook::E8pEncoderHook(std::shared_ptr<const E8pCodec> codec, uint32_t rows, uint32_t cols)
    : codec_(std::move(codec)),
      rows_(rows),
      cols_(cols),
      seed_out_(rvq_default_seed(rows)),
      seed_in_(rvq_default_seed(cols)),
      scales_(rows, 0),
      encode_scales_(rows, 0.0f),
      codes_(size_t{rows} * (cols / e8p::kDim), 0),
      residual_(codec_->params().bits > 2 ? codes_.size() : 0, 0) {}

bool E8pEncoderHook::rotates() const { return codec_->params().rht; }

Status E8pEncoderHook::prepare(std::vector<float>& w, std::vector<float>& h) {
  if (!rotates()) return Status::ok();
  SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, RvqRotation::create(rows_, cols_, seed_out_, seed_in_));
  return rot.rotate_problem(w, h);
}

void E8pEncoderHook::begin_row(size_t r, std::span<const float> original) {
  double ss = 0;
  for (float v : original) ss += double{v} * v;
  const double rms = std::sqrt(ss / static_cast<double>(original.size()));
  const uint16_t s = float_to_f16_bits(static_cast<float>(rms / codec_->params().row_rms));
  if (!std::isfinite(rms) || !std::isfinite(f16_bits_to_float(s))) {
    error_.set(invalid_argument("e8p row " + std::to_string(r) + ": the row's RMS " + std::to_string(rms) +
                          " has no finite f16 scale"));
    scales_[r] = 0;
    encode_scales_[r] = 0;
    return;
  }
  scales_[r] = s;
  encode_scales_[r] = f16_bits_to_float(s);
  if (!codec_->params().ls_gain || encode_scales_[r] == 0.0f) return;
  const e8p::Stage2 s2 = e8p::stage2_of_bits(codec_->params().bits);
  double tc = 0, cc = 0;
  for (size_t c = 0; c + e8p::kDim <= original.size(); c += e8p::kDim) {
    float t[e8p::kDim], v[e8p::kDim];
    uint16_t c1, c2;
    for (uint32_t k = 0; k < e8p::kDim; ++k) t[k] = original[c + k] / encode_scales_[r];
    e8p::encode(s2, t, &c1, &c2, v);
    for (uint32_t k = 0; k < e8p::kDim; ++k) {
      tc += double{t[k]} * v[k];
      cc += double{v[k]} * v[k];
    }
  }
  const double beta = cc > 0 ? tc / cc : 1.0;
  if (!(beta >= 0.5 && beta <= 2.0)) return;  // a degenerate row: the plain scale
  const uint16_t gained = float_to_f16_bits(static_cast<float>(beta * encode_scales_[r]));
  if (std::isfinite(f16_bits_to_float(gained)) && f16_bits_to_float(gained) > 0) scales_[r] = gained;
}

void E8pEncoderHook::begin_columns(size_t c0, size_t c1, const float* u, size_t ld) {
  metrics_.clear();
  metric_c0_ = c0;
  if (!codec_->params().block_metric) return;
  constexpr uint32_t d = e8p::kDim;
  for (size_t c = c0; c + d <= c1; c += d) {
    double a[d][d];
    inverse_block<d>(u, ld, c, a);
    std::array<float, d * d> m{};
    for (uint32_t i = 0; i < d; ++i)
      for (uint32_t j = 0; j < d; ++j) {
        m[i * d + j] = static_cast<float>(a[i][j]);
        if (!std::isfinite(m[i * d + j])) {  // a degenerate factor: Euclidean rounding for these columns
          metrics_.clear();
          return;
        }
      }
    metrics_.push_back(m);
  }
}

void E8pEncoderHook::choose(const float t[e8p::kDim], const float* a, uint16_t* c1, uint16_t* c2,
                            float v[e8p::kDim]) const {
  const e8p::Stage2 s2 = e8p::stage2_of_bits(codec_->params().bits);
  if (a == nullptr) {
    e8p::encode(s2, t, c1, c2, v);
    return;
  }
  constexpr uint32_t d = e8p::kDim;
  uint16_t cand[1024];
  const uint32_t n = e8p::nearest_k(t, codec_->params().candidates, cand);
  double best = INFINITY;
  for (uint32_t k = 0; k < n; ++k) {
    uint16_t s2code = 0;
    float rec[d];
    if (s2 == e8p::Stage2::kNone) {
      e8p::reconstruct(s2, cand[k], 0, rec);
    } else {
      float v1[d], r[d];
      e8p::decode(cand[k], v1);
      const float rho = e8p::rho_of(s2);
      for (uint32_t i = 0; i < d; ++i) r[i] = (t[i] - v1[i]) * rho;
      s2code = s2 == e8p::Stage2::kE8p ? e8p::nearest(r) : e8p::nearest_one_bit(r);
      e8p::reconstruct(s2, cand[k], s2code, rec);
    }
    // ||(t - rec) A||^2, A upper triangular.
    double err = 0;
    for (uint32_t j = 0; j < d; ++j) {
      double e = 0;
      for (uint32_t i = 0; i <= j; ++i) e += (double{t[i]} - rec[i]) * a[i * d + j];
      err += e * e;
    }
    if (err < best) {
      best = err;
      *c1 = cand[k];
      *c2 = s2code;
      std::copy(rec, rec + d, v);
    }
  }
}

void E8pEncoderHook::quantize(size_t r, size_t c, const float* values, float* reconstructed) {
  const float scale = f16_bits_to_float(scales_[r]);
  const size_t i = r * (cols_ / e8p::kDim) + c / e8p::kDim;
  if (scale == 0.0f || encode_scales_[r] == 0.0f) {  // an all-zero (or f16-underflowing) row decodes to zeros
    std::fill(reconstructed, reconstructed + e8p::kDim, 0.0f);
    return;
  }
  float t[e8p::kDim], v[e8p::kDim];
  for (uint32_t k = 0; k < e8p::kDim; ++k) t[k] = values[k] / encode_scales_[r];
  const size_t m = (c - metric_c0_) / e8p::kDim;
  const float* a = c >= metric_c0_ && m < metrics_.size() ? metrics_[m].data() : nullptr;
  uint16_t c1 = 0, c2 = 0;
  choose(t, a, &c1, &c2, v);
  codes_[i] = c1;
  if (!residual_.empty()) residual_[i] = c2;
  for (uint32_t k = 0; k < e8p::kDim; ++k) reconstructed[k] = scale * v[k];
}

Result<e8p::E8pMatrix> E8pEncoderHook::matrix() const {
  SUBMOE_RETURN_IF_ERROR(error_.get());
  e8p::E8pMatrix m;
  m.rows = rows_;
  m.cols = cols_;
  m.bits = codec_->params().bits;
  m.codes = codes_;
  m.residual = residual_;
  m.scales = scales_;
  return m;
}

std::vector<float> E8pEncoderHook::dequantize() const {
  auto m = matrix();
  // pack() reports the error; the reconstruction of a failed matrix is NaN.
  if (!m.is_ok()) return std::vector<float>(size_t{rows_} * cols_, NAN);
  std::vector<float> w = e8p::decode_matrix(*m);
  if (rotates()) {
    auto rot = RvqRotation::create(rows_, cols_, seed_out_, seed_in_);
    if (!rot.is_ok() || !rot->unrotate(w).is_ok()) return std::vector<float>(size_t{rows_} * cols_, NAN);
  }
  return w;
}

Result<std::vector<PackedTensor>> E8pEncoderHook::pack() const {
  SUBMOE_ASSIGN_OR_RETURN(e8p::E8pMatrix m, matrix());
  const auto r = static_cast<int64_t>(rows_), k = static_cast<int64_t>(cols_ / e8p::kDim);
  std::vector<PackedTensor> out;
  out.push_back({"codes", io::DType::kU16, {r, k}, bytes_of(m.codes)});
  if (m.bits == 3) {
    std::vector<uint8_t> narrow(m.residual.size());
    for (size_t i = 0; i < narrow.size(); ++i) narrow[i] = static_cast<uint8_t>(m.residual[i]);
    out.push_back({"residual", io::DType::kU8, {r, k}, std::move(narrow)});
  } else if (m.bits == 4) {
    out.push_back({"residual", io::DType::kU16, {r, k}, bytes_of(m.residual)});
  }
  out.push_back({"scales", io::DType::kF16, {r}, bytes_of(m.scales)});
  if (rotates()) out.push_back(seeds_field(seed_out_, seed_in_));
  return out;
}

class E8pRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "e8p: QuIP#'s E8P lattice code, randomized Hadamard rotation + 8-weight E8P codewords (16-bit codes from "
           "a 256-entry table) with BlockLDLQ feedback; --bits 2 (E8P, the default), 3 (+ E8 1-bit residual), 4 (+ E8P residual); "
           "--repr-opt rht=on|off, row_rms=R (the rows' RMS in codeword units; 1.03 / 1.00 / 0.92 at 2 / 3 / 4 bits), "
           "metric=block|euclidean (choose among candidates=N nearest codewords under the solver's block metric, "
           "16; or QuIP#'s nearest), gain=ls|none (the row scale times the least-squares gain of a pre-encoding)";
  }
  static Result<E8pParams> params_of(const ReprOptions& o) {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size) return invalid_argument("--group-size applies to int, nf4 and spqr (e8p has one scale per row)");
    const double bits = o.bits.value_or(2.0);  // QuIP#'s 2-bit point by default
    if (bits != std::floor(bits) || bits < 2 || bits > 4)
      return invalid_argument("e8p --bits must be 2, 3 or 4, got " + std::to_string(bits));
    E8pParams p;
    p.bits = static_cast<uint32_t>(bits);
    SUBMOE_RETURN_IF_ERROR(e8p::check_bits(p.bits));
    p.row_rms = default_row_rms(p.bits);
    for (const auto& [key, value] : o.extra) {
      if (key == "rht") {
        if (value != "on" && value != "off") return invalid_argument("--repr-opt rht=" + value + ": expected on or off");
        p.rht = value == "on";
      } else if (key == "row_rms") {
        char* end = nullptr;
        const double d = std::strtod(value.c_str(), &end);
        if (value.empty() || end != value.c_str() + value.size() || !(d >= 0.25 && d <= 4))
          return invalid_argument("--repr-opt row_rms=" + value + ": expected a number from 0.25 to 4");
        p.row_rms = static_cast<float>(d);
      } else if (key == "metric") {
        if (value != "block" && value != "euclidean")
          return invalid_argument("--repr-opt metric=" + value + ": expected block or euclidean");
        p.block_metric = value == "block";
      } else if (key == "gain") {
        if (value != "ls" && value != "none") return invalid_argument("--repr-opt gain=" + value + ": expected ls or none");
        p.ls_gain = value == "ls";
      } else if (key == "candidates") {
        char* end = nullptr;
        const unsigned long v = std::strtoul(value.c_str(), &end, 10);
        if (value.empty() || value[0] == '-' || end != value.c_str() + value.size() || v < 1 || v > 1024)
          return invalid_argument("--repr-opt candidates=" + value + ": expected an integer from 1 to 1024");
        p.candidates = static_cast<uint32_t>(v);
      } else {
        return invalid_argument("--repr-opt " + key + " is not an e8p option (rht, row_rms, metric, candidates, gain)");
      }
    }
    return p;
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_ASSIGN_OR_RETURN(const E8pParams p, params_of(o));
    return std::shared_ptr<const MatrixCodec>(std::make_shared<E8pCodec>(p));
  }
  RateLadder rate_ladder(const ReprOptions& base) const override {
    auto p = params_of(base);
    if (!p.is_ok()) return {};
    return {2 - static_cast<int>(p->bits), 4 - static_cast<int>(p->bits), 1.0};
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup&) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "bits", "rotation", "codebook", "codebook_crc32"}));
    E8pParams p;
    SUBMOE_ASSIGN_OR_RETURN(const int64_t bits, k.integer("bits"));
    if (bits < 2 || bits > 4) return k.bad("bits", "= " + std::to_string(bits) + ", must be 2, 3 or 4");
    p.bits = static_cast<uint32_t>(bits);
    p.row_rms = default_row_rms(p.bits);
    SUBMOE_ASSIGN_OR_RETURN(const std::string rotation, k.string("rotation"));
    if (rotation != "rht" && rotation != "none") return k.bad("rotation", "'" + rotation + "' is not rht or none");
    p.rht = rotation == "rht";
    SUBMOE_ASSIGN_OR_RETURN(const std::string codebook, k.string("codebook"));
    if (codebook != kCodebook) return k.bad("codebook", "'" + codebook + "' is not e8p12 (QuIP#'s E8P table)");
    SUBMOE_ASSIGN_OR_RETURN(const std::string crc, k.string("codebook_crc32"));
    const std::string built = crc_hex(e8p::packed_abs_table_crc32());
    if (crc != built)
      return k.bad("codebook_crc32", "'" + crc + "' does not match the rebuilt E8P table's " + built +
                                         " (the codes would index a different table)");
    return std::shared_ptr<const MatrixCodec>(std::make_shared<E8pCodec>(p));
  }
};

}  // namespace

const Representation& e8p_representation() {
  static const E8pRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
