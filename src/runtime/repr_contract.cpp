#include "submoe/runtime/repr_contract.h"

namespace submoe::runtime {

using json = nlohmann::json;

json ReprContract::to_json() const {
  return {{"family", family},
          {"vector_axis", vector_axis},
          {"vector_dim", vector_dim},
          {"sparse_semantics", sparse_semantics},
          {"dense_hole_policy", dense_hole_policy},
          {"duplicate_coordinate_policy", duplicate_coordinate_policy},
          {"coordinate_dtype", coordinate_dtype},
          {"combine_order", combine_order},
          {"input_transform", input_transform},
          {"output_transform", output_transform},
          {"packing_layout", packing_layout},
          {"decoder_version", decoder_version},
          {"required_kernel", required_kernel},
          {"operator",
           {{"input", op.input},
            {"decoded_operand", op.decoded_operand},
            {"scale", op.scale},
            {"accumulator", op.accumulator},
            {"epilogue", op.epilogue}}}};
}

namespace {

Status check_object(const json& stored, const json& mine, const std::string& where) {
  if (!stored.is_object()) return corrupt_data(where + " must be an object");
  for (auto it = stored.begin(); it != stored.end(); ++it)
    if (!mine.contains(it.key()))
      return unsupported(where + "." + it.key() + " is not a contract key this reader knows (a newer writer?)");
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    const std::string key = where + "." + it.key();
    const auto s = stored.find(it.key());
    if (s == stored.end()) return corrupt_data(key + " is missing");
    if (it->is_object()) {
      SUBMOE_RETURN_IF_ERROR(check_object(*s, *it, key));
      continue;
    }
    if (*s != *it)
      return unsupported(key + " is " + s->dump() + "; this reader executes " + it->dump() +
                         " for this representation");
  }
  return Status::ok();
}

}  // namespace

Status check_contract(const json& stored, const ReprContract& mine, const std::string& where) {
  return check_object(stored, mine.to_json(), where);
}

}  // namespace submoe::runtime
