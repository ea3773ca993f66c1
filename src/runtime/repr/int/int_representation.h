// GPTQ's asymmetric n-bit grids (docs/format.md 9.3, "int") as a representation.
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& int_representation();
}  // namespace submoe::runtime::repr
