// The artifact contract of a representation (seed 002, section 0x08B): what a
// loader must know to execute a compressed matrix beyond its bytes: the
// family, the vector axis and dimension, how a sparse part combines with the
// dense one, the transforms around the product, the packing layout, the
// decoder version and kernel it needs, and the operator's dtypes. Each codec
// states its own (MatrixCodec::contract); the writer records it beside every
// representation record (quantization_config.contracts, docs/format.md 9.2)
// and the loader checks the stored one against what this build executes,
// refusing a difference by key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "submoe/core/status.h"

namespace submoe::runtime {

struct OperatorContract {
  std::string input = "f32";            // activations the op takes
  std::string decoded_operand = "f32";  // what the codes decode to in the kernel
  std::string scale = "none";           // the scales' stored dtype
  std::string accumulator = "f32";
  std::string epilogue = "f32";  // output dtype
};

struct ReprContract {
  std::string family;                // e.g. "scalar-lut", "scalar-affine", "residual-vq"
  std::string vector_axis = "none";  // "none" (scalar codes) or "input" (vectors along a row)
  uint32_t vector_dim = 1;           // weights per code (0: variable length)
  std::string sparse_semantics = "none";  // "none" | "correction" | "replacement"
  std::string dense_hole_policy = "none";  // what the dense code holds at a sparse coordinate
  std::string duplicate_coordinate_policy = "reject";
  std::string coordinate_dtype = "none";  // sparse coordinates' dtype
  std::string combine_order = "dense";    // "dense" or "dense-then-sparse"
  std::string input_transform = "none";   // applied to x before the product
  std::string output_transform = "none";  // applied to y after it
  std::string packing_layout;             // the fields' layout, by name
  int decoder_version = 1;
  std::string required_kernel;  // the fused kernel family that executes it
  OperatorContract op;

  nlohmann::json to_json() const;
};

// Checks a stored contract (an artifact's) against `mine` (this build's codec
// for the same record): every key present, of the right type, equal; no
// other keys. kUnsupported naming "<where>.<key>", both values and what this
// build executes, when they differ; kCorruptData for a malformed object.
Status check_contract(const nlohmann::json& stored, const ReprContract& mine, const std::string& where);

}  // namespace submoe::runtime
