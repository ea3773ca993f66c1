// squeezellm: SqueezeLLM's dense-and-sparse representation (seed 002, 0x02 and
// 0x03): per-row non-uniform 3- or 4-bit tables fitted by sensitivity-weighted
// k-means, plus optional fp16 exceptions with replacement semantics
// (docs/format.md 9.2).
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& squeezellm_representation();
}  // namespace submoe::runtime::repr
