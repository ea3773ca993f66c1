#include "submoe/model/dense_class.h"

#include <string>

namespace submoe::model {

const char* dense_class_name(DenseClass c) {
  switch (c) {
    case DenseClass::kAttention: return "attention";
    case DenseClass::kSharedExpert: return "shared_expert";
    case DenseClass::kDenseMlp: return "dense_mlp";
    case DenseClass::kLmHead: return "lm_head";
    case DenseClass::kRouter: return "router";
  }
  return "?";
}

Result<DenseClass> parse_dense_class(std::string_view name) {
  std::string msg = "'";
  msg.append(name);
  msg.append("' is not a dense weight class (");
  for (DenseClass c : kDenseClasses) {
    if (name == dense_class_name(c)) return c;
    if (c != kDenseClasses[0]) msg.append(", ");
    msg.append(dense_class_name(c));
  }
  msg.append("; the token embeddings are read by row and stay in their dtype)");
  return invalid_argument(msg);
}

}  // namespace submoe::model
