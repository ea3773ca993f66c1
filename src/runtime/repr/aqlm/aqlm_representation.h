#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {

// AQLM additive codes (2x8, 1x16, any MxB) with per-matrix learned codebooks.
const Representation& aqlm_representation();

}  // namespace submoe::runtime::repr
