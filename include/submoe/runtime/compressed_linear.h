// LinearOps over compressed expert matrices (model/linear_op.h), one per
// representation, in two execution modes:
//   kFused:           the fused decode + matmul kernels (kernels/ternary_gemv.h,
//                     kernels/int_gemv.h) straight on the packed codes;
//   kReferenceDecode: the codec's reference decoder expands the matrix once into
//                     owned f32 memory and a dense LinearOp runs on it (the
//                     oracle the fused path is tested against, and a fallback).
// Ops own their packed or decoded buffers; ternary ops share the artifact's
// codebook. forward() may run concurrently on any ops (per-thread workspaces).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/codec/int_packed.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/status.h"
#include "submoe/kernels/int_gemv.h"
#include "submoe/kernels/ternary_gemv.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/ternary_codebook.h"

namespace submoe::runtime {

// kFused: the fused kernels on the packed codes, f32 activations.
// kFusedBf16: the same with each compressed op's input rounded to bf16 (round to
//   nearest even) first, as a bf16 checkpoint's expert MLP sees it in
//   transformers; the batch-1 ternary kernel then reads 2-byte activations
//   (docs/perf-notes.md: ~0.8x the f32 kernel's time).
// kFusedInt8: the same with each compressed op's input quantized to int8 per
//   token (kernels::ActivationQuant::kInt8: one symmetric scale per token, what
//   llama.cpp does for its quantized types per block); the batch-1 ternary
//   kernel then sums int8 activations exactly (docs/perf-notes.md: ~0.78x the
//   bf16 kernel's time), the n-bit ops multiply the same s q in f32.
// kReferenceDecode: every expert decoded to dense f32 by the reference decoder.
enum class ExecutionMode { kFused, kFusedBf16, kFusedInt8, kReferenceDecode };
// "fused" / "fused-bf16" / "fused-int8" / "reference"
const char* execution_mode_name(ExecutionMode mode);
// Inverse of execution_mode_name; kInvalidArgument naming the choices otherwise.
Result<ExecutionMode> parse_execution_mode(std::string_view name);

// Fused ternary op. m must point at codebook->entries() (checked). Batches of
// more than kMaxKernelBatch tokens run in chunks.
// activations kBF16: inputs are rounded to bf16 before the product; quant kInt8:
// quantized to int8 per token (kBF16 and kInt8 together are an error).
Result<std::unique_ptr<model::LinearOp>> make_ternary_dict_linear(
    ternary::PackedTernaryMatrix m, std::shared_ptr<const TernaryCodebook> codebook,
    const kernels::TernaryGemvKernels& kernels = kernels::best_ternary_gemv_kernels(),
    kernels::ActivationType activations = kernels::ActivationType::kF32,
    kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

// Fused int op (m was validated by pack_int_codes / from_parts; empty is an error).
// quant kInt8: the inputs are replaced by their int8 quantization s q first.
Result<std::unique_ptr<model::LinearOp>> make_int_linear(
    intn::PackedIntMatrix m, const kernels::IntGemvKernels& kernels = kernels::best_int_gemv_kernels(),
    kernels::ActivationType activations = kernels::ActivationType::kF32,
    kernels::ActivationQuant quant = kernels::ActivationQuant::kExact);

// The activation type the fused ops of a mode take (kF32 for kReferenceDecode).
kernels::ActivationType execution_activations(ExecutionMode mode);
// The activation quantization of a mode (kInt8 for kFusedInt8, else kExact).
kernels::ActivationQuant execution_quant(ExecutionMode mode);

// Dense f32 op owning `weights` (rows x cols, row-major) as decoded by a
// reference decoder; `what` names the source in describe(), e.g. "ternary_dict".
Result<std::unique_ptr<model::LinearOp>> make_reference_decoded_linear(std::vector<float> weights, size_t rows,
                                                                       size_t cols, std::string what);

}  // namespace submoe::runtime
