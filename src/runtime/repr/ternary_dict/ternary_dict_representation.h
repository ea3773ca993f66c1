// QMoE's ternary dictionary code (docs/format.md 2-6, 9.3) as a representation.
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& ternary_dict_representation();
}  // namespace submoe::runtime::repr
