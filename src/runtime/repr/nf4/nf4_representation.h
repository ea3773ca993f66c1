// nf4: QLoRA's NormalFloat-4 (bitsandbytes' layout), absmax blocks of 64 by
// default, the absmaxes double-quantized (dq8, 4.127 bits per weight) or kept
// as fp16 / fp32 (docs/format.md 9.7).
#pragma once

#include "submoe/runtime/representation.h"

namespace submoe::runtime::repr {
const Representation& nf4_representation();
}  // namespace submoe::runtime::repr
