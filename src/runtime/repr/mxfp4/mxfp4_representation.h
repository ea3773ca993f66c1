// mxfp4: OCP Microscaling FP4 (E2M1 codes, one E8M0 scale per 32 columns),
// 4.25 bits per weight, GPT-OSS's own expert format (docs/format.md 9.6).
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& mxfp4_representation();
}  // namespace submoe::runtime::repr
