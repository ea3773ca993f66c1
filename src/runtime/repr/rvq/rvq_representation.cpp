// rvq (seed 001): rows of W' = T_o W T_i^T scaled by an f16 RMS, cut into
// 16-weight subvectors, each the sum of S stage entries of global 256-entry
// codebooks (codec/rvq_format.h). Record: {"representation": "rvq", "stages":
// S, "rotation": "rht" | "none", "codebook_tensor": name}. Fields per matrix:
// codes U8 [rows, cols/16, S], scales F16 [rows], and with "rht" rht_seeds U64
// [2] (the sign seeds of T_o and T_i, kernels/hadamard.h). Shared: the
// codebooks, F32 [stages >= S, 256, 16], trained on N(0, 1) data (the rotation
// makes the weights close to i.i.d. Gaussian), so one set serves every layer.
#include "runtime/repr/rvq/rvq_representation.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <array>
#include <mutex>

#include "runtime/repr/bytes_util.h"
#include "runtime/repr/encoder_support.h"
#include "runtime/repr/option_values.h"
#include "runtime/repr/record_keys.h"
#include "runtime/repr/rvq/rvq_linear.h"
#include "submoe/kernels/rvq_panels.h"
#include "runtime/repr/rvq/rvq_rotation.h"
#include "submoe/codec/rvq.h"
#include "submoe/core/bf16.h"

namespace submoe::runtime::repr {
namespace {

constexpr std::string_view kName = "rvq";
constexpr const char* kCodebookTensor = "submoe.rvq.codebooks";

struct RvqParams {
  uint32_t stages = 4;
  bool rht = true;
  uint32_t beam = 8;               // encoder only
  uint32_t train_vectors = 65536;  // codebook training (writer only)
  uint32_t iters = 20;
  uint64_t seed = 1;
  // Codeword choice under the solver's block metric ||(w_F - q_F) U_FF^-1||
  // (quant/block_quantizer.h begin_columns) or plain Euclidean distance.
  bool block_metric = true;  // encoder only
  // Row gain: the stored scale is beta_r x RMS_r with beta_r = <w, w> / <w,
  // w_hat> of a greedy pre-encoding of the row, so the reconstruction does not
  // shrink the row (nearest-codeword VQ does, by about the distortion); the
  // codes are still chosen for w / RMS_r. Off: the scale is the RMS.
  bool unbiased_gain = true;  // encoder only
};

class RvqCodec;

class RvqEncoderHook final : public MatrixEncoder {
 public:
  RvqEncoderHook(std::shared_ptr<const RvqCodec> codec, uint32_t rows, uint32_t cols);
  size_t rows() const override { return rows_; }
  size_t cols() const override { return cols_; }
  size_t block_width() const override { return rvq::kRvqDim; }
  bool rotates() const override;
  Status prepare(std::vector<float>& w, std::vector<float>& h) override;
  void begin_row(size_t r, std::span<const float> original) override;
  void begin_columns(size_t c0, size_t c1, const float* u, size_t ld) override;
  void quantize(size_t r, size_t c, const float* values, float* reconstructed) override;
  std::vector<float> dequantize() const override;
  Result<std::vector<PackedTensor>> pack() const override;

 private:
  Result<std::vector<float>> decoded() const;

  std::shared_ptr<const RvqCodec> codec_;
  uint32_t rows_, cols_;
  uint64_t seed_out_, seed_in_;
  std::vector<uint16_t> scales_;
  std::vector<float> encode_scales_;  // per row: the scale codes are chosen at (RMS)
  std::vector<uint8_t> codes_;
  // The block metrics of the solver's current columns [metric_c0_, ...): per
  // 16-column block, A = U_FF^-1 and an encoder over the codebooks times A.
  struct BlockMetric {
    std::array<float, rvq::kRvqDim * rvq::kRvqDim> a;
    rvq::RvqEncoder encoder;
  };
  size_t metric_c0_ = 0;
  std::vector<BlockMetric> metrics_;
  FirstError error_;
};

class RvqCodec final : public MatrixCodec, public std::enable_shared_from_this<RvqCodec> {
 public:
  RvqCodec(RvqParams p, rvq::RvqCodebookSet cb, std::string tensor, rvq::RvqEncoder enc)
      : p_(p), codebooks_(std::move(cb)), codebooks_t_(transposed(*codebooks_)), tensor_(std::move(tensor)),
        encoder_(std::move(enc)) {}

  const RvqParams& params() const { return p_; }
  const rvq::RvqEncoder& encoder() const { return encoder_; }
  const rvq::RvqCodebookSet& codebooks() const { return codebooks_; }

  const Representation& representation() const override { return rvq_representation(); }
  nlohmann::json record() const override {
    return {{"representation", std::string(kName)},
            {"stages", p_.stages},
            {"rotation", p_.rht ? "rht" : "none"},
            {"codebook_tensor", tensor_}};
  }
  nlohmann::json provenance() const override {
    return {{"beam", p_.beam},
            {"assignment", p_.block_metric ? "beam search under the solver's block metric ||(w_F - q_F) U_FF^-1||^2 "
                                             "(codebooks times U_FF^-1 per 16-column block); Euclidean without a Hessian"
                                           : "beam search, Euclidean distance"},
            {"codebooks", {{"training", "k-means++ then Lloyd per stage on the residual of the greedy encoder, "
                                        "N(0, 1) vectors (rvq::gaussian_vectors)"},
                           {"train_vectors", p_.train_vectors},
                           {"max_iterations", p_.iters},
                           {"seed", p_.seed}}},
            {"row_gain", p_.unbiased_gain ? "unbiased: scale = f16(beta x RMS), beta = <w, w> / <w, w_hat> of a greedy "
                                            "pre-encoding of the row; codes chosen for w / RMS"
                                          : "none: scale = f16(RMS)"},
            {"rotation_seeds", "rvq_default_seed(width) per matrix, recorded in rht_seeds"}};
  }
  std::string summary() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "rvq (%u stages = %.1f bits, d 16, 256-entry codebooks%s)", p_.stages,
                  p_.stages * rvq::kRvqBitsPerStage, p_.rht ? ", rht" : ", no rotation");
    return buf;
  }
  std::string grid_name() const override {
    char buf[32];
    std::snprintf(buf, sizeof buf, "rvq%.1f", p_.stages * rvq::kRvqBitsPerStage);
    return buf;
  }
  ReprContract contract() const override {
    ReprContract c;
    c.family = "residual-vq";
    c.vector_axis = "input";
    c.vector_dim = rvq::kRvqDim;
    if (p_.rht) {
      c.input_transform = "rht (x -> T_i x, seeds in rht_seeds)";
      c.output_transform = "rht-transpose (y -> T_o^T y)";
    }
    c.packing_layout = "rvq-v1: codes u8 [rows, cols/16, stages] into shared f32 [stages, 256, 16] codebooks; "
                       "scales f16 [rows]";
    c.required_kernel = "rvq_gemv";
    c.op.scale = "f16";
    return c;
  }
  Status check_shape(uint32_t rows, uint32_t cols) const override {
    if (rows == 0 || cols == 0 || cols % rvq::kRvqDim != 0)
      return invalid_argument("rvq codes 16-weight subvectors along the input axis: " + std::to_string(cols) +
                              " input columns are not a positive multiple of 16");
    return Status::ok();
  }
  std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const override {
    const auto r = static_cast<int64_t>(rows);
    std::vector<FieldSpec> f = {
        FieldSpec{"codes", io::DType::kU8, {r, static_cast<int64_t>(cols / rvq::kRvqDim), p_.stages}},
        FieldSpec{"scales", io::DType::kF16, {r}}};
    if (p_.rht) f.push_back(FieldSpec{"rht_seeds", io::DType::kU64, {2}});
    return f;
  }
  std::vector<PackedTensor> shared_tensors() const override {
    const auto n = static_cast<int64_t>(codebooks_->size() / rvq::kRvqCodebookFloats);
    return {PackedTensor{tensor_, io::DType::kF32, {n, rvq::kRvqEntries, rvq::kRvqDim},
                         bytes_of(std::span<const float>(*codebooks_), codebooks_->size())}};
  }

  Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const override {
    SUBMOE_ASSIGN_OR_RETURN(Parsed m, parse(rows, cols, f));
    SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, rvq::decode_rvq_reference(m.matrix.view()));
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
    return make_rvq_linear(std::move(m.matrix), std::move(m.rotation), mode, codebooks_t_);
  }
  Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const override {
    SUBMOE_RETURN_IF_ERROR(check_encodable(rows, cols));
    return std::unique_ptr<MatrixEncoder>(new RvqEncoderHook(shared_from_this(), rows, cols));
  }

 private:
  struct Parsed {
    rvq::RvqMatrix matrix;
    std::optional<RvqRotation> rotation;
  };
  // Validates untrusted fields: the codec's validator (codes, scales) and the seeds.
  Result<Parsed> parse(uint32_t rows, uint32_t cols, FieldBytes f) const {
    SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols));
    const size_t want = p_.rht ? 3 : 2;
    if (f.size() != want)
      return corrupt_data("rvq: " + std::to_string(f.size()) + " fields given, " + std::to_string(want) + " expected");
    const size_t n_codes = size_t{rows} * (cols / rvq::kRvqDim) * p_.stages;
    if (f[0].size() != n_codes || f[1].size() != size_t{rows} * 2)
      return corrupt_data("rvq: codes / scales hold " + std::to_string(f[0].size()) + " / " +
                          std::to_string(f[1].size()) + " bytes, the shape needs " + std::to_string(n_codes) + " / " +
                          std::to_string(size_t{rows} * 2));
    const std::vector<uint16_t> scales = copy_as<uint16_t>(f[1]);
    Parsed out;
    SUBMOE_ASSIGN_OR_RETURN(
        out.matrix, rvq::RvqMatrix::from_parts(rows, cols, p_.stages,
                                               {reinterpret_cast<const uint8_t*>(f[0].data()), f[0].size()}, scales,
                                               codebooks_));
    if (p_.rht) {
      SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, rotation_of_seeds(rows, cols, f[2], "rvq"));
      out.rotation = std::move(rot);
    }
    return out;
  }

  RvqParams p_;
  // The kernels' layout of the codebooks, transposed once for every op of the
  // codec (kernels/rvq_panels.h transpose_rvq_codebooks).
  static std::shared_ptr<const std::vector<float>> transposed(const std::vector<float>& cb) {
    std::vector<float> t(cb.size());
    kernels::transpose_rvq_codebooks(cb.data(), static_cast<uint32_t>(cb.size() / rvq::kRvqCodebookFloats), t.data());
    return std::make_shared<const std::vector<float>>(std::move(t));
  }
  rvq::RvqCodebookSet codebooks_;
  std::shared_ptr<const std::vector<float>> codebooks_t_;
  std::string tensor_;
  rvq::RvqEncoder encoder_;
};

RvqEncoderHook::RvqEncoderHook(std::shared_ptr<const RvqCodec> codec, uint32_t rows, uint32_t cols)
    : codec_(std::move(codec)),
      rows_(rows),
      cols_(cols),
      seed_out_(rvq_default_seed(rows)),
      seed_in_(rvq_default_seed(cols)),
      scales_(rows, 0),
      encode_scales_(rows, 1.0f),
      codes_(size_t{rows} * (cols / rvq::kRvqDim) * codec_->params().stages, 0) {}

bool RvqEncoderHook::rotates() const { return codec_->params().rht; }

Status RvqEncoderHook::prepare(std::vector<float>& w, std::vector<float>& h) {
  if (!rotates()) return Status::ok();
  SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, RvqRotation::create(rows_, cols_, seed_out_, seed_in_));
  return rot.rotate_problem(w, h);
}

void RvqEncoderHook::begin_row(size_t r, std::span<const float> original) {
  auto s = rvq::rvq_row_scale(original);
  if (!s.is_ok()) {
    error_.set(s.status().with_context("rvq row " + std::to_string(r) + " scale"));
    scales_[r] = float_to_f16_bits(1.0f);
    return;
  }
  scales_[r] = *s;
  encode_scales_[r] = f16_bits_to_float(*s);
  if (!codec_->params().unbiased_gain) return;
  // Greedy pre-encoding of the original row at its RMS: beta = <w, w> / <w, w_hat>.
  constexpr uint32_t d = rvq::kRvqDim;
  const float rms = encode_scales_[r];
  double ww = 0, wq = 0;
  uint8_t codes[rvq::kRvqMaxStages];
  float t[d], rec[d];
  for (size_t c = 0; c + d <= original.size(); c += d) {
    for (uint32_t k = 0; k < d; ++k) t[k] = original[c + k] / rms;
    codec_->encoder().encode(t, 1, codes, rec);
    for (uint32_t k = 0; k < d; ++k) {
      ww += double{original[c + k]} * original[c + k];
      wq += double{original[c + k]} * (double{rec[k]} * rms);
    }
  }
  const double beta = wq > 0 ? ww / wq : 1.0;
  if (!(beta >= 0.5 && beta <= 2.0)) return;  // degenerate row (e.g. all zero): plain RMS
  const uint16_t gained = float_to_f16_bits(static_cast<float>(beta * rms));
  if (!std::isfinite(f16_bits_to_float(gained))) return;
  scales_[r] = gained;
}

void RvqEncoderHook::begin_columns(size_t c0, size_t c1, const float* u, size_t ld) {
  metrics_.clear();
  metric_c0_ = c0;
  if (!codec_->params().block_metric) return;
  constexpr uint32_t d = rvq::kRvqDim;
  const uint32_t S = codec_->params().stages;
  std::vector<float> transformed(size_t{S} * rvq::kRvqCodebookFloats);
  for (size_t c = c0; c + d <= c1; c += d) {
    double a[d][d];
    inverse_block<d>(u, ld, c, a);
    BlockMetric m;
    for (uint32_t i = 0; i < d; ++i)
      for (uint32_t j = 0; j < d; ++j) m.a[i * d + j] = static_cast<float>(a[i][j]);
    // Every stage entry as a row vector times A.
    for (size_t e = 0; e < size_t{S} * rvq::kRvqEntries; ++e) {
      const float* from = codec_->codebooks()->data() + e * d;
      float* to = transformed.data() + e * d;
      for (uint32_t j = 0; j < d; ++j) {
        double v = 0;
        for (uint32_t k = 0; k <= j; ++k) v += double{from[k]} * a[k][j];
        to[j] = static_cast<float>(v);
      }
    }
    auto enc = rvq::RvqEncoder::create(transformed, S);
    if (!enc.is_ok()) {
      // A degenerate factor (not finite): this block keeps the Euclidean metric.
      metrics_.clear();
      return;
    }
    m.encoder = std::move(enc).value();
    metrics_.push_back(std::move(m));
  }
}

void RvqEncoderHook::quantize(size_t r, size_t c, const float* values, float* reconstructed) {
  constexpr uint32_t d = rvq::kRvqDim;
  const uint32_t S = codec_->params().stages;
  const float scale = f16_bits_to_float(scales_[r]);
  float target[d], recon[d];
  for (uint32_t k = 0; k < d; ++k) target[k] = values[k] / encode_scales_[r];
  uint8_t* codes = codes_.data() + (r * (cols_ / d) + c / d) * S;
  const size_t m = (c - metric_c0_) / d;
  if (c >= metric_c0_ && m < metrics_.size()) {
    // The solver's metric: encode t A against the codebooks times A, then
    // rebuild the block from the plain codebooks exactly as the decoder sums.
    const BlockMetric& bm = metrics_[m];
    float t[d];
    for (uint32_t j = 0; j < d; ++j) {
      float v = 0;
      for (uint32_t k = 0; k <= j; ++k) v += target[k] * bm.a[k * d + j];
      t[j] = v;
    }
    bm.encoder.encode(t, codec_->params().beam, codes, recon);
    for (uint32_t j = 0; j < d; ++j) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < S; ++s) sum += codec_->encoder().codebook(s)[size_t{codes[s]} * d + j];
      recon[j] = sum;
    }
  } else {
    codec_->encoder().encode(target, codec_->params().beam, codes, recon);
  }
  for (uint32_t k = 0; k < d; ++k) reconstructed[k] = scale * recon[k];
}

Result<std::vector<float>> RvqEncoderHook::decoded() const {
  SUBMOE_RETURN_IF_ERROR(error_.get());
  SUBMOE_ASSIGN_OR_RETURN(rvq::RvqMatrix m, rvq::RvqMatrix::from_parts(rows_, cols_, codec_->params().stages, codes_,
                                                                       scales_, codec_->codebooks()));
  SUBMOE_ASSIGN_OR_RETURN(std::vector<float> w, rvq::decode_rvq_reference(m.view()));
  if (rotates()) {
    SUBMOE_ASSIGN_OR_RETURN(RvqRotation rot, RvqRotation::create(rows_, cols_, seed_out_, seed_in_));
    SUBMOE_RETURN_IF_ERROR(rot.unrotate(w));
  }
  return w;
}

std::vector<float> RvqEncoderHook::dequantize() const {
  auto w = decoded();
  // pack() reports the error; the reconstruction of a failed matrix is NaN.
  return w.is_ok() ? std::move(w).value() : std::vector<float>(size_t{rows_} * cols_, NAN);
}

Result<std::vector<PackedTensor>> RvqEncoderHook::pack() const {
  SUBMOE_RETURN_IF_ERROR(error_.get());
  const uint32_t S = codec_->params().stages;
  std::vector<PackedTensor> out;
  out.push_back({"codes", io::DType::kU8,
                 {static_cast<int64_t>(rows_), static_cast<int64_t>(cols_ / rvq::kRvqDim), static_cast<int64_t>(S)},
                 codes_});
  out.push_back({"scales", io::DType::kF16, {static_cast<int64_t>(rows_)},
                 bytes_of(std::span<const uint16_t>(scales_), scales_.size())});
  if (rotates()) out.push_back(seeds_field(seed_out_, seed_in_));
  return out;
}

class RvqRepresentation final : public Representation {
 public:
  std::string_view name() const override { return kName; }
  std::string_view help() const override {
    return "rvq: seed 001's codec, randomized Hadamard rotation + residual VQ (d 16, 256-entry global codebooks, "
           "0.5 bits per stage) with block-LDL feedback (--bits 0.5..4; --repr-opt beam=N, train_vectors=N, "
           "iters=N, seed=N, rht=on|off, metric=block|euclidean, gain=unbiased|none)";
  }
  static Result<RvqParams> params_of(const ReprOptions& o) {
    if (o.code) return invalid_argument("--code applies to ternary_dict only");
    if (o.p0) return invalid_argument("--dict-p0 applies to ternary_dict only");
    if (o.group_size) return invalid_argument("--group-size applies to int only (rvq has one scale per row)");
    if (!o.bits) return invalid_argument("rvq needs --bits (0.5 to 4 in steps of 0.5)");
    const double stages = *o.bits / rvq::kRvqBitsPerStage;
    if (!(stages >= 1 && stages <= rvq::kRvqMaxStages) || stages != std::floor(stages))
      return invalid_argument("rvq --bits must be 0.5 to 4 in steps of 0.5 (one stage per 0.5 bits), got " +
                              std::to_string(*o.bits));
    RvqParams p;
    p.stages = static_cast<uint32_t>(stages);
    for (const auto& [key, value] : o.extra) {
      if (key == "beam") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 1, 256));
        p.beam = static_cast<uint32_t>(v);
      } else if (key == "train_vectors") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 256, uint64_t{1} << 24));
        p.train_vectors = static_cast<uint32_t>(v);
      } else if (key == "iters") {
        SUBMOE_ASSIGN_OR_RETURN(const uint64_t v, option_uint(key, value, 1, 1000));
        p.iters = static_cast<uint32_t>(v);
      } else if (key == "seed") {
        SUBMOE_ASSIGN_OR_RETURN(p.seed, option_uint(key, value, 0, UINT64_MAX));
      } else if (key == "metric") {
        if (value != "block" && value != "euclidean")
          return invalid_argument("--repr-opt metric=" + value + ": expected block or euclidean");
        p.block_metric = value == "block";
      } else if (key == "gain") {
        if (value != "unbiased" && value != "none")
          return invalid_argument("--repr-opt gain=" + value + ": expected unbiased or none");
        p.unbiased_gain = value == "unbiased";
      } else if (key == "rht") {
        if (value != "on" && value != "off") return invalid_argument("--repr-opt rht=" + value + ": expected on or off");
        p.rht = value == "on";
      } else {
        return invalid_argument("--repr-opt " + key + " is not an rvq option (beam, train_vectors, iters, seed, rht, metric, gain)");
      }
    }
    return p;
  }
  Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& o) const override {
    SUBMOE_ASSIGN_OR_RETURN(const RvqParams p, params_of(o));
    SUBMOE_ASSIGN_OR_RETURN(rvq::RvqCodebookSet cb, train(p, p.stages));
    return make(p, std::move(cb), kCodebookTensor);
  }
  RateLadder rate_ladder(const ReprOptions& base) const override {
    auto p = params_of(base);
    if (!p.is_ok()) return {};
    const int s = static_cast<int>(p->stages);
    return {1 - s, static_cast<int>(rvq::kRvqMaxStages) - s, rvq::kRvqBitsPerStage};
  }
  // One codebook set, trained for the highest stage count: every stage count
  // uses its prefix (stage s is trained on the residual of stages < s only).
  Result<std::vector<std::shared_ptr<const MatrixCodec>>> codecs_on_ladder(
      const ReprOptions& base, std::span<const int> offsets) const override {
    SUBMOE_ASSIGN_OR_RETURN(const RvqParams p, params_of(base));
    const RateLadder ladder = rate_ladder(base);
    int top = 0;
    for (int k : offsets) {
      if (k < ladder.min_offset || k > ladder.max_offset)
        return invalid_argument("rvq: " + std::to_string(p.stages) + " stages " + (k < 0 ? "" : "+") +
                                std::to_string(k) + " is outside 1..8 stages");
      top = std::max(top, k);
    }
    SUBMOE_ASSIGN_OR_RETURN(rvq::RvqCodebookSet cb, train(p, p.stages + static_cast<uint32_t>(top)));
    std::vector<std::shared_ptr<const MatrixCodec>> out;
    for (int k : offsets) {
      RvqParams q = p;
      q.stages = static_cast<uint32_t>(static_cast<int>(p.stages) + k);
      SUBMOE_ASSIGN_OR_RETURN(auto c, make(q, cb, kCodebookTensor));
      out.push_back(std::move(c));
    }
    return out;
  }
  Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record, const std::string& where,
                                                         const TensorLookup& tensors) const override {
    const RecordKeys k{record, where};
    SUBMOE_RETURN_IF_ERROR(k.only({"representation", "stages", "rotation", "codebook_tensor"}));
    RvqParams p;
    SUBMOE_ASSIGN_OR_RETURN(const int64_t stages, k.integer("stages"));
    if (stages < 1 || stages > rvq::kRvqMaxStages) return k.bad("stages", "= " + std::to_string(stages) + ", must be 1..8");
    p.stages = static_cast<uint32_t>(stages);
    SUBMOE_ASSIGN_OR_RETURN(const std::string rotation, k.string("rotation"));
    if (rotation != "rht" && rotation != "none") return k.bad("rotation", "'" + rotation + "' is not rht or none");
    p.rht = rotation == "rht";
    SUBMOE_ASSIGN_OR_RETURN(const std::string name, k.string("codebook_tensor"));
    const io::TensorView* t = tensors(name);
    if (t == nullptr) return not_found(where + ".codebook_tensor: model.safetensors has no tensor '" + name + "'");
    const int64_t n = t->shape.empty() ? 0 : t->shape[0];
    if (t->dtype != io::DType::kF32 || t->shape.size() != 3 || t->shape[1] != rvq::kRvqEntries ||
        t->shape[2] != rvq::kRvqDim || n < stages || n > rvq::kRvqMaxStages)
      return corrupt_data("codebook tensor '" + name + "' is " + std::string(io::dtype_name(t->dtype)) + " " +
                          t->shape_string() + ", the record needs F32 [" + std::to_string(stages) +
                          "..8, 256, 16]");
    std::vector<float> cb(static_cast<size_t>(n) * rvq::kRvqCodebookFloats);
    std::memcpy(cb.data(), t->data, cb.size() * sizeof(float));
    for (size_t i = 0; i < cb.size(); ++i)
      if (!std::isfinite(cb[i]) || std::fabs(cb[i]) > rvq::kRvqMaxCodebookMagnitude)
        return corrupt_data("codebook tensor '" + name + "' value " + std::to_string(i) + " is " +
                            std::to_string(cb[i]) + " (codebooks must be finite, |x| <= 1e30)");
    return make(p, std::make_shared<const std::vector<float>>(std::move(cb)), name);
  }

 private:
  // Global codebooks: k-means stage by stage on N(0, 1) training vectors.
  static Result<rvq::RvqCodebookSet> train(const RvqParams& p, uint32_t stages) {
    const std::vector<float> samples = rvq::gaussian_vectors(p.train_vectors, p.seed);
    rvq::RvqTrainOptions t;
    t.max_iterations = p.iters;
    t.seed = p.seed;
    SUBMOE_ASSIGN_OR_RETURN(rvq::RvqTrainResult trained, rvq::train_rvq_codebooks(samples, stages, t));
    return rvq::RvqCodebookSet(std::make_shared<const std::vector<float>>(std::move(trained.codebooks)));
  }
  static Result<std::shared_ptr<const MatrixCodec>> make(const RvqParams& p, rvq::RvqCodebookSet cb,
                                                         std::string name) {
    SUBMOE_ASSIGN_OR_RETURN(rvq::RvqEncoder enc, rvq::RvqEncoder::create(*cb, p.stages));
    return std::shared_ptr<const MatrixCodec>(std::make_shared<RvqCodec>(p, std::move(cb), std::move(name), std::move(enc)));
  }
};

}  // namespace

const Representation& rvq_representation() {
  static const RvqRepresentation r;
  return r;
}

}  // namespace submoe::runtime::repr
