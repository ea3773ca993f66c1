// The classes of dense projections a compressed artifact may store packed
// (compress --dense-repr, docs/format.md 9.6). Standalone: the artifact's
// config reader checks class names without the rest of the model library.
#pragma once

#include <cstdint>
#include <string_view>

#include "submoe/core/status.h"

namespace submoe::model {

// The classes of dense (non-routed-expert) projections, as compress
// --dense-repr names them: attention (q, k, v, o), shared_expert (Qwen2-MoE's
// gate/up/down; not its [1, H] gate), dense_mlp (layers without routed
// experts), lm_head (untied), router (the [E, H] routers and the shared
// expert's gate).
enum class DenseClass : uint8_t { kAttention, kSharedExpert, kDenseMlp, kLmHead, kRouter };
inline constexpr DenseClass kDenseClasses[] = {DenseClass::kAttention, DenseClass::kSharedExpert,
                                               DenseClass::kDenseMlp, DenseClass::kLmHead, DenseClass::kRouter};
const char* dense_class_name(DenseClass c);
// The class called `name` (kInvalidArgument listing the names otherwise).
Result<DenseClass> parse_dense_class(std::string_view name);

}  // namespace submoe::model
