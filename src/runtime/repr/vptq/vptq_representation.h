#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {

// VPTQ vector codes along the output axis with residual and outlier codebooks.
const Representation& vptq_representation();

}  // namespace submoe::runtime::repr
