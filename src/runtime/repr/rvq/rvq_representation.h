// Seed 001's codec as a representation: randomized Hadamard rotation, residual
// vector quantization with global codebooks, block-LDL feedback through the
// solver (quant/gptq.h), the LUT kernels (kernels/rvq_gemv.h).
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& rvq_representation();
}  // namespace submoe::runtime::repr
