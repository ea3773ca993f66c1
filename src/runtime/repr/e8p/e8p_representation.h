#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {

// QuIP#'s E8P lattice code with residual stages (2, 3, 4 bits), RHT and BlockLDLQ.
const Representation& e8p_representation();

}  // namespace submoe::runtime::repr
