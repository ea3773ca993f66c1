// GPT-OSS's expert tensors as the hub stores them (doc §7.2), one layer at a
// time. transformers keeps a layer's experts fused and transposed for x @ W:
// experts.gate_up_proj [E, H, 2I] with gate in the even and up in the odd
// columns and experts.down_proj [E, I, H]; the hub's MXFP4 files hold the same
// matrices in the Linear orientation as OCP MX blocks: experts.gate_up_proj_blocks
// [E, 2I, H/32, 16] with experts.gate_up_proj_scales [E, 2I, H/32] and
// down_proj_blocks [E, H, I/32, 16] / down_proj_scales [E, H, I/32]
// (codec/mxfp4.h). Nothing is converted when a checkpoint opens: the weight
// loader asks for one layer when it needs it, so memory follows the layer,
// not the model.
#pragma once

#include <vector>

#include "submoe/codec/mxfp4.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/expert_provider.h"
#include "submoe/model/model_weights.h"

namespace submoe::model::detail {

// The tensors of one layer's fused experts (shapes checked by the caller).
struct FusedDense {
  const io::TensorView* gate_up;  // [E, H, 2I]
  const io::TensorView* down;     // [E, I, H]
};
struct FusedMxfp4 {
  const io::TensorView *gate_up_blocks, *gate_up_scales;  // [E, 2I, H/32, 16], [E, 2I, H/32]
  const io::TensorView *down_blocks, *down_scales;        // [E, H, I/32, 16], [E, H, I/32]
};

// Per-expert [out, in] views of one layer, in memory the result owns
// (LayerExpertWeights::storage): dense experts de-interleaved and transposed
// in their dtype (F32, BF16 or F16), MXFP4 dequantized to BF16, which holds
// every MXFP4 value exactly. tensor_names is left to the caller.
Result<LayerExpertWeights> split_fused_dense(const FusedDense& t, int64_t E, int64_t H, int64_t I);
Result<LayerExpertWeights> dequantize_fused_mxfp4(const FusedMxfp4& t, int64_t E, int64_t H, int64_t I);

// The layer's experts as fused MXFP4 ops, straight from the blocks (gate and
// up rows de-interleaved into each expert's own matrices): 4.25 bits a weight
// in memory, as stored.
Result<std::vector<ResidentExpertProvider::Expert>> fused_mxfp4_ops(const FusedMxfp4& t, int64_t E, int64_t H,
                                                                    int64_t I);

}  // namespace submoe::model::detail
