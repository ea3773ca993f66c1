#include "dense_packing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "submoe/quant/gptq.h"

namespace submoe::calib::detail {

Result<DensePlan> make_dense_plan(const std::vector<DenseReprChoice>& choices) {
  DensePlan plan;
  for (const DenseReprChoice& c : choices) {
    if (plan.codecs.count(c.cls))
      return invalid_argument(std::string("--dense-repr ") + model::dense_class_name(c.cls) + " is given twice");
    auto codec = runtime::make_codec(c.repr);
    if (!codec.is_ok()) return codec.status().with_context(std::string("--dense-repr ") + model::dense_class_name(c.cls));
    plan.codecs.emplace(c.cls, std::move(codec).value());
    plan.if_present[c.cls] = c.if_present;
  }
  return plan;
}

model::DenseLinearHook record_dense_projections(DensePlan* plan) {
  return [plan](const std::string& name, model::DenseClass cls, int64_t rows, int64_t cols) -> Result<model::DenseOverride> {
    plan->projections.push_back({name, cls, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols)});
    return model::DenseOverride{};
  };
}

Status check_dense_plan(DensePlan* plan_ptr) {
  DensePlan& plan = *plan_ptr;
  for (auto it = plan.codecs.begin(); it != plan.codecs.end();) {
    const bool present = std::any_of(plan.projections.begin(), plan.projections.end(),
                                     [&](const DenseProjection& p) { return p.cls == it->first; });
    it = !present && plan.if_present[it->first] ? plan.codecs.erase(it) : std::next(it);
  }
  for (const auto& [cls, codec] : plan.codecs) {
    const std::string flag = std::string("--dense-repr ") + model::dense_class_name(cls);
    bool any = false;
    for (const DenseProjection& p : plan.projections) {
      if (p.cls != cls) continue;
      any = true;
      SUBMOE_RETURN_IF_ERROR(codec->check_encodable(p.rows, p.cols).with_context(
          flag + ": tensor '" + p.name + "' [" + std::to_string(p.rows) + ", " + std::to_string(p.cols) + "]"));
    }
    if (!any)
      return invalid_argument(flag + ": the model has no projection of this class" +
                              (cls == model::DenseClass::kLmHead
                                   ? std::string(" (with tie_word_embeddings the lm_head is the embedding table, which stays in its dtype)")
                                   : std::string()));
  }
  return Status::ok();
}

Result<std::vector<runtime::PackedTensor>> pack_dense_tensor(const io::TensorView& t,
                                                             const runtime::MatrixCodec& codec) {
  if (t.shape.size() != 2) return invalid_argument("tensor '" + t.name + "' is not 2-D");
  const auto rows = static_cast<uint32_t>(t.shape[0]), cols = static_cast<uint32_t>(t.shape[1]);
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  SUBMOE_RETURN_IF_ERROR(io::read_as_f32(t, w));
  if (!std::all_of(w.begin(), w.end(), [](float v) { return std::isfinite(v); }))
    return numerical_error("tensor '" + t.name + "' has a non-finite weight");
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<runtime::MatrixEncoder> enc, codec.make_encoder(rows, cols));
  if (enc->rotates()) {
    std::vector<float> no_hessian;
    SUBMOE_RETURN_IF_ERROR(enc->prepare(w, no_hessian));
  }
  SUBMOE_RETURN_IF_ERROR(quant::rtn_quantize(w, rows, cols, *enc).with_context("tensor '" + t.name + "'"));
  SUBMOE_ASSIGN_OR_RETURN(std::vector<runtime::PackedTensor> fields, enc->pack());
  for (runtime::PackedTensor& f : fields) f.name = t.name + "." + f.name;
  return fields;
}

Result<std::vector<runtime::PackedTensor>> dequantized_bf16_tensor(const io::TensorView& t) {
  std::vector<bf16_t> v(static_cast<size_t>(t.numel()));
  SUBMOE_RETURN_IF_ERROR(io::read_as_bf16(t, v));
  runtime::PackedTensor out{t.name, io::DType::kBF16, t.shape, {}};
  out.bytes.resize(v.size() * sizeof(bf16_t));
  std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
  std::vector<runtime::PackedTensor> fields;
  fields.push_back(std::move(out));
  return fields;
}

}  // namespace submoe::calib::detail
