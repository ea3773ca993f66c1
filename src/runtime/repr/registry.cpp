// The registry: adding a representation is its folder plus one line below.
#include <algorithm>
#include <array>

#include "runtime/repr/aqlm/aqlm_representation.h"
#include "runtime/repr/e8p/e8p_representation.h"
#include "runtime/repr/int/int_representation.h"
#include "runtime/repr/mxfp4/mxfp4_representation.h"
#include "runtime/repr/nf4/nf4_representation.h"
#include "runtime/repr/rvq/rvq_representation.h"
#include "runtime/repr/spqr/spqr_representation.h"
#include "runtime/repr/squeezellm/squeezellm_representation.h"
#include "runtime/repr/ternary_dict/ternary_dict_representation.h"
#include "runtime/repr/vptq/vptq_representation.h"
#include "submoe/runtime/representation.h"

namespace submoe::runtime {
namespace {

const std::array<const Representation*, 10>& registry() {
  static const std::array<const Representation*, 10> r = {
      &repr::ternary_dict_representation(),
      &repr::int_representation(),
      &repr::rvq_representation(),
      &repr::mxfp4_representation(),
      &repr::nf4_representation(),
      &repr::squeezellm_representation(),
      &repr::spqr_representation(),
      &repr::e8p_representation(),
      &repr::aqlm_representation(),
      &repr::vptq_representation(),
  };
  return r;
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::span<const Representation* const> representations() { return registry(); }

double sparse_break_even(const SparseFootprint& f, uint64_t weights) {
  if (weights == 0 || f.entry_bytes == 0) return 0;
  const double w = static_cast<double>(weights);
  const double room = f.code_bits + 1.0 - 8.0 * static_cast<double>(f.dense_bytes + f.sparse_fixed_bytes) / w;
  return room > 0 ? room / (8.0 * f.entry_bytes) : 0;
}

Result<const Representation*> find_representation(std::string_view name) {
  for (const Representation* r : registry()) {
    if (r->name() == name) return r;
    const auto aliases = r->aliases();
    if (std::find(aliases.begin(), aliases.end(), name) != aliases.end()) return r;
  }
  return invalid_argument("unknown representation '" + std::string(name) + "' (registered: " +
                          representation_names() + ")");
}

std::string representation_names() {
  std::string s;
  for (const Representation* r : registry()) {
    if (!s.empty()) s += ", ";
    s += r->name();
  }
  return s;
}

Result<ReprOptions> options_from_grid_name(std::string_view grid) {
  for (const Representation* r : registry())
    if (auto o = r->from_grid_name(grid)) return *o;
  return invalid_argument("unknown grid '" + std::string(grid) +
                          "' (expected ternary, int2, int3, int4, mxfp4 or nf4; or use --repr)");
}

Result<std::shared_ptr<const MatrixCodec>> make_codec(const ReprOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(const Representation* r, find_representation(options.name));
  return r->from_options(options);
}

Result<std::shared_ptr<const MatrixCodec>> codec_from_record(const nlohmann::json& record, const std::string& where,
                                                             const TensorLookup& tensors) {
  if (!record.is_object()) return corrupt_data(where + " must be an object");
  const auto it = record.find("representation");
  if (it == record.end()) return corrupt_data(where + ".representation is missing");
  if (!it->is_string()) return corrupt_data(where + ".representation must be a string");
  const std::string name = it->get<std::string>();
  // Records name registry entries exactly (aliases are for the command line).
  for (const Representation* r : registry())
    if (r->name() == name) return r->from_record(record, where, tensors);
  return unsupported(where + ".representation '" + name + "' is not a representation this reader knows (" +
                     representation_names() + ")");
}

Result<std::vector<std::shared_ptr<const MatrixCodec>>> Representation::codecs_on_ladder(
    const ReprOptions& base, std::span<const int> offsets) const {
  const RateLadder ladder = rate_ladder(base);
  std::vector<std::shared_ptr<const MatrixCodec>> out;
  for (int k : offsets) {
    if (k < ladder.min_offset || k > ladder.max_offset || (k != 0 && !(ladder.step_bits > 0)) ||
        (k != 0 && !base.bits))
      return invalid_argument(std::string(name()) + ": no rate " + std::to_string(k) + " steps from the requested one");
    ReprOptions o = base;
    if (k != 0) o.bits = *base.bits + k * ladder.step_bits;
    SUBMOE_ASSIGN_OR_RETURN(auto c, from_options(o));
    out.push_back(std::move(c));
  }
  return out;
}

Status refuse_extra_options(const ReprOptions& options, std::string_view representation) {
  if (options.extra.empty()) return Status::ok();
  return invalid_argument("--repr-opt " + options.extra.front().first + " does not apply to " +
                          std::string(representation) + " (it takes no --repr-opt)");
}

Status check_field(const io::TensorView& t, const FieldSpec& spec) {
  if (t.dtype != spec.dtype)
    return corrupt_data("tensor '" + t.name + "' has dtype " + std::string(io::dtype_name(t.dtype)) +
                        ", the format stores " + spec.name + " as " + std::string(io::dtype_name(spec.dtype)));
  if (spec.shape.empty()) {
    if (t.shape.size() != 1)
      return corrupt_data("tensor '" + t.name + "' has shape " + t.shape_string() + ", " + spec.name +
                          " must be 1-D");
    if (spec.length_multiple > 1 && t.shape[0] % spec.length_multiple != 0)
      return corrupt_data("tensor '" + t.name + "' holds " + std::to_string(t.shape[0]) + " values, the format pads " +
                          spec.name + " to a multiple of " + std::to_string(spec.length_multiple));
    return Status::ok();
  }
  if (t.shape != spec.shape)
    return corrupt_data("tensor '" + t.name + "' has shape " + t.shape_string() + ", the config implies " +
                        shape_string(spec.shape));
  return Status::ok();
}

}  // namespace submoe::runtime
