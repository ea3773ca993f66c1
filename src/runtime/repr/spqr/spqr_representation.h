// spqr: SpQR's representation (seed 002, 0x04): 2- to 4-bit asymmetric codes
// in groups of 16 columns, their scales and zeros coded again in 3 bits over
// blocks of 16 rows, and fp16 exceptions with correction semantics found by
// the dynamic sensitivity test during GPTQ (docs/format.md 9.2).
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& spqr_representation();
}  // namespace submoe::runtime::repr
