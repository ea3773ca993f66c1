// FP8 block-scaled checkpoints (DeepSeek-V3 and Kimi-K2 on the hub): every
// linear weight is F8_E4M3 with a float32 `<weight>_scale_inv` holding one
// scale per block of 128 x 128 (config.json quantization_config
// {"quant_method": "fp8", "weight_block_size": [128, 128]}). DeepSeek's
// weight_dequant multiplies, despite the name: W[r][c] = fp8(W[r][c]) *
// scale_inv[r / 128][c / 128]. The pairing is made once, when the checkpoint
// is opened, so that every reader (model load, compress, inspect, codebook
// fitting) sees the dequantized values through read_as_f32 / read_as_bf16.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

constexpr std::string_view kScaleSuffix = "_scale_inv";
constexpr int64_t kDefaultBlock = 128;

struct Fp8Scheme {
  bool declared = false;  // config.json says quant_method "fp8"
  int64_t block_rows = kDefaultBlock, block_cols = kDefaultBlock;
};

// config.json's quantization_config beside the weights, if any.
Result<Fp8Scheme> read_scheme(const std::string& directory) {
  Fp8Scheme s;
  nlohmann::json qc;
  if (!read_quantization_config(directory, &qc)) return s;
  const auto method = qc.find("quant_method");
  if (method == qc.end() || !method->is_string() || method->get<std::string>() != "fp8") return s;
  s.declared = true;
  const std::string where = (std::filesystem::path(directory) / "config.json").string() + ": quantization_config.";
  if (const auto fmt = qc.find("fmt"); fmt != qc.end() && (!fmt->is_string() || fmt->get<std::string>() != "e4m3"))
    return unsupported(where + "fmt is " + fmt->dump() + "; FP8 checkpoints are read in the e4m3 format only");
  const auto block = qc.find("weight_block_size");
  if (block == qc.end() || block->is_null()) return s;
  if (!block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() ||
      !(*block)[1].is_number_integer())
    return corrupt_data(where + "weight_block_size must be two integers [rows, cols], got " + block->dump());
  s.block_rows = (*block)[0].get<int64_t>();
  s.block_cols = (*block)[1].get<int64_t>();
  if (s.block_rows <= 0 || s.block_cols <= 0 || s.block_rows > (int64_t{1} << 20) || s.block_cols > (int64_t{1} << 20))
    return corrupt_data(where + "weight_block_size " + block->dump() + " is out of range (1 to 2^20)");
  return s;
}

bool is_fp8(DType d) { return d == DType::kF8E4M3 || d == DType::kF8E5M2; }

int64_t blocks(int64_t n, int64_t block) { return (n + block - 1) / block; }

Status check_pair(const TensorView& weight, const TensorView& scale, const Fp8Scheme& s) {
  if (!is_fp8(weight.dtype))
    return corrupt_data("tensor '" + scale.name + "' scales '" + weight.name + "', which is " +
                        std::string(dtype_name(weight.dtype)) + ", not FP8 (F8_E4M3)");
  if (weight.shape.size() != 2)
    return corrupt_data("FP8 weight '" + weight.name + "' has shape " + weight.shape_string() +
                        "; block scales apply to 2-D weights");
  if (scale.dtype != DType::kF32 && scale.dtype != DType::kBF16)
    return corrupt_data("block scale '" + scale.name + "' is " + std::string(dtype_name(scale.dtype)) +
                        ", not F32 or BF16");
  const int64_t rows = blocks(weight.shape[0], s.block_rows), cols = blocks(weight.shape[1], s.block_cols);
  if (scale.shape != std::vector<int64_t>{rows, cols})
    return corrupt_data("block scale '" + scale.name + "' has shape " + scale.shape_string() + "; weight '" +
                        weight.name + "' " + weight.shape_string() + " in blocks of " + std::to_string(s.block_rows) +
                        " x " + std::to_string(s.block_cols) + " needs [" + std::to_string(rows) + ", " +
                        std::to_string(cols) + "]");
  return check_finite(scale);
}

}  // namespace

Status SafetensorsModel::attach_fp8_block_scales() {
  bool any_fp8 = false;
  for (const TensorView* t : tensors_) any_fp8 = any_fp8 || is_fp8(t->dtype);
  if (!any_fp8) {
    // Scales without any FP8 weight: name the first.
    for (const TensorView* t : tensors_)
      if (t->name.ends_with(kScaleSuffix))
        return corrupt_data("tensor '" + t->name + "' is a block scale, but the checkpoint holds no FP8 weight");
    return Status::ok();
  }
  SUBMOE_ASSIGN_OR_RETURN(const Fp8Scheme scheme, read_scheme(directory_));
  std::map<std::string, TensorView*, std::less<>> mutable_by_name;
  for (auto& f : files_)
    for (TensorView& t : f->tensors_) mutable_by_name.emplace(t.name, &t);
  for (auto& [name, scale] : mutable_by_name) {
    if (!name.ends_with(kScaleSuffix)) continue;
    const std::string weight_name = name.substr(0, name.size() - kScaleSuffix.size());
    const auto w = mutable_by_name.find(weight_name);
    if (w == mutable_by_name.end())
      return corrupt_data("block scale '" + name + "' has no weight '" + weight_name + "' in the checkpoint");
    SUBMOE_RETURN_IF_ERROR(check_pair(*w->second, *scale, scheme));
    w->second->block_scale = scale;
    w->second->block_rows = scheme.block_rows;
    w->second->block_cols = scheme.block_cols;
    scale->is_block_scale = true;
  }
  if (scheme.declared)
    for (const TensorView* t : tensors_)
      if (is_fp8(t->dtype) && t->block_scale == nullptr)
        return corrupt_data("FP8 tensor '" + t->name + "' (" + std::string(dtype_name(t->dtype)) +
                            ") has no block scale '" + t->name + std::string(kScaleSuffix) +
                            "', which config.json's quantization_config (fp8) requires");
  return Status::ok();
}

}  // namespace submoe::io
