// The representation registry: one interface per way of storing a weight
// matrix (ternary_dict, int, ...), looked up by the name an artifact records
// for each matrix. The model, the loader, the offload store, the compression
// pipeline and the CLI iterate over this table and never branch on a name; an
// unknown name is an error everywhere (docs/architecture.md, "Representations").
//
// Two levels:
//   Representation  a registry entry (stateless): its name, and how to make a
//                   configured codec from command-line options or from an
//                   artifact record;
//   MatrixCodec     one configured representation ("int, 4 bits, group 128"):
//                   the artifact fields of one matrix (any number, with dtypes
//                   and shapes), the shared tensors (a dictionary, codebooks),
//                   validation of untrusted bytes, the reference decoder, the
//                   LinearOp of each execution mode, and the quantizer hook
//                   (MatrixEncoder) the compression pipeline drives.
// Codecs are immutable and shared between threads.
//
// Adding a representation: a folder src/runtime/repr/<name>/ with a
// Representation subclass, and one line in src/runtime/repr/registry.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/safetensors.h"
#include "submoe/model/linear_op.h"
#include "submoe/quant/block_quantizer.h"
#include "submoe/runtime/compressed_linear.h"
#include "submoe/runtime/repr_contract.h"

namespace submoe::runtime {

// One tensor of a packed matrix, in file order. `name` is the field suffix
// (e.g. "codes"; the artifact's tensor is "<matrix prefix>.<name>").
struct FieldSpec {
  std::string name;
  io::DType dtype = io::DType::kU8;
  // The exact shape; empty means 1-D of a length the codec validates
  // (`length_multiple` divides it).
  std::vector<int64_t> shape;
  int64_t length_multiple = 1;
};

// A tensor to write: a packed field (name = field suffix) or a shared tensor
// (name = full tensor name).
struct PackedTensor {
  std::string name;
  io::DType dtype = io::DType::kU8;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// The bytes of one matrix's fields in FieldSpec order, untrusted: every byte
// is validated before a kernel sees it.
using FieldBytes = std::span<const std::span<const std::byte>>;

// The quantizer hook: the calibration pipeline runs GPTQ / block-LDL feedback
// (quant/gptq.h) through the BlockQuantizer interface, then asks for the
// reconstruction and the packed fields. One encoder per matrix.
class MatrixEncoder : public quant::BlockQuantizer {
 public:
  // Whether the matrix is coded in other coordinates (a rotation): then the
  // pipeline calls prepare on its own copies of W [rows, cols] and H [cols,
  // cols] (empty for RTN) before quantizing, and prepare rewrites them.
  virtual bool rotates() const { return false; }
  virtual Status prepare(std::vector<float>& /*w*/, std::vector<float>& /*h*/) { return Status::ok(); }
  // After every block was quantized: W_hat [rows, cols] in the source's
  // coordinates, exactly what the reference decoder gives for pack()'s bytes.
  virtual std::vector<float> dequantize() const = 0;
  // The packed fields, in MatrixCodec::fields order.
  virtual Result<std::vector<PackedTensor>> pack() const = 0;
};

class Representation;

// The dense-and-sparse split of one stored matrix (seed 002, 0x03C), from its
// field sizes: what the sparse break-even ledger needs.
struct SparseFootprint {
  uint32_t code_bits = 0;     // the dense stream's bits per weight (3 for a 3-bit code)
  uint64_t nnz = 0;           // sparse entries
  uint64_t dense_bytes = 0;   // the dense part: codes and their metadata (tables, scales)
  uint64_t sparse_fixed_bytes = 0;  // the sparse part's cost without entries (row pointers)
  uint32_t entry_bytes = 0;   // bytes per sparse entry (value + coordinate)
};

class MatrixCodec {
 public:
  virtual ~MatrixCodec() = default;

  virtual const Representation& representation() const = 0;
  // The artifact record: {"representation": <name>, <parameters>...} (one entry
  // of quantization_config.representations, docs/format.md 9.2).
  virtual nlohmann::json record() const = 0;
  // How the writer chose what the record does not say (encoder and training
  // settings), for the manifest's provenance; null when nothing.
  virtual nlohmann::json provenance() const { return nullptr; }
  // One line, e.g. "int (4 bits, group 128)".
  virtual std::string summary() const = 0;
  // The grid name of the provenance, e.g. "ternary", "int4-g128".
  virtual std::string grid_name() const = 0;
  // What a loader must know to execute these matrices (runtime/repr_contract.h);
  // recorded beside the record and checked on open.
  virtual ReprContract contract() const = 0;

  // Whether matrices of this shape can be stored (the loader's check); the
  // message names the constraint.
  virtual Status check_shape(uint32_t rows, uint32_t cols) const = 0;
  // Whether make_encoder can quantize this shape (e.g. a group size dividing
  // cols, where the format itself allows a partial last group).
  virtual Status check_encodable(uint32_t rows, uint32_t cols) const { return check_shape(rows, cols); }
  // The fields of one [rows, cols] matrix in file order.
  virtual std::vector<FieldSpec> fields(uint32_t rows, uint32_t cols) const = 0;
  // Tensors shared by every matrix of this codec (stored once per artifact,
  // before the dense tensors, and counted in the ledger); empty for most.
  virtual std::vector<PackedTensor> shared_tensors() const { return {}; }

  // The reference decoder: W_hat [rows, cols] row-major, validating `f`.
  virtual Result<std::vector<float>> decode(uint32_t rows, uint32_t cols, FieldBytes f) const = 0;
  // The LinearOp of `mode` over validated copies of `f` (kReferenceDecode: a
  // dense op over decode()).
  virtual Result<std::unique_ptr<model::LinearOp>> make_op(uint32_t rows, uint32_t cols, FieldBytes f,
                                                           ExecutionMode mode) const = 0;
  // For codecs with a sparse part: the split of one [rows, cols] matrix whose
  // fields have these byte sizes (FieldSpec order); nullopt for the rest.
  virtual std::optional<SparseFootprint> sparse_footprint(uint32_t /*rows*/, uint32_t /*cols*/,
                                                          std::span<const uint64_t> /*field_bytes*/) const {
    return std::nullopt;
  }
  // The quantizer hook for one [rows, cols] matrix (check_encodable first).
  virtual Result<std::unique_ptr<MatrixEncoder>> make_encoder(uint32_t rows, uint32_t cols) const = 0;
};

// How a representation is chosen on the command line (compress --repr ...).
// A representation refuses options it does not use, naming them.
struct ReprOptions {
  std::string name;                    // a registry name or alias
  std::optional<double> bits;          // --bits
  std::optional<uint32_t> group_size;  // --group-size
  std::optional<std::string> code;     // --code (ternary dictionary code)
  std::optional<double> p0;            // --dict-p0 (ternary dictionary)
  // --repr-opt KEY=VALUE: a representation's own options, in command-line order.
  std::vector<std::pair<std::string, std::string>> extra;
};

// kInvalidArgument naming the first --repr-opt, for representations that take none.
Status refuse_extra_options(const ReprOptions& options, std::string_view representation);

// A representation's rate ladder around a requested rate (per-expert rates,
// compress --alloc): offsets in [min_offset, max_offset] steps of step_bits
// bits; all zero when the representation has no ladder.
struct RateLadder {
  int min_offset = 0, max_offset = 0;
  double step_bits = 0;
};

// Finds a shared tensor of an artifact by full name (null when absent).
using TensorLookup = std::function<const io::TensorView*(std::string_view name)>;

class Representation {
 public:
  virtual ~Representation() = default;
  // The registry name recorded in artifacts, e.g. "ternary_dict".
  virtual std::string_view name() const = 0;
  // Other spellings accepted on the command line, e.g. "ternary".
  virtual std::vector<std::string_view> aliases() const { return {}; }
  // One line for --help.
  virtual std::string_view help() const = 0;
  virtual Result<std::shared_ptr<const MatrixCodec>> from_options(const ReprOptions& options) const = 0;
  // The options an older `compress --grid NAME` spelling stands for, when this
  // representation owns that grid name ("ternary", "int4"); nullopt otherwise.
  virtual std::optional<ReprOptions> from_grid_name(std::string_view /*grid*/) const { return std::nullopt; }
  // The ladder around `base` (validated options); none by default.
  virtual RateLadder rate_ladder(const ReprOptions& /*base*/) const { return {}; }
  // The codecs of `base` moved by each of `offsets` ladder steps (in order),
  // sharing their shared tensors (one set per artifact). The default makes each
  // one from the options with bits + offset x step_bits.
  virtual Result<std::vector<std::shared_ptr<const MatrixCodec>>> codecs_on_ladder(const ReprOptions& base,
                                                                                  std::span<const int> offsets) const;
  // `record` is one representations entry; `where` prefixes error messages
  // (e.g. "config.json: quantization_config.representations[0]"); shared
  // tensors are found with `tensors` and validated here.
  virtual Result<std::shared_ptr<const MatrixCodec>> from_record(const nlohmann::json& record,
                                                                 const std::string& where,
                                                                 const TensorLookup& tensors) const = 0;
};

// Every registered representation, in registry order.
std::span<const Representation* const> representations();
// By registry name or alias; kInvalidArgument naming the registered ones otherwise.
Result<const Representation*> find_representation(std::string_view name);
// "ternary_dict, int" (registry names, for messages and --help).
std::string representation_names();
// The options of a `--grid NAME` spelling, asked of every representation;
// kInvalidArgument naming the known grids otherwise.
Result<ReprOptions> options_from_grid_name(std::string_view grid);
// find_representation(options.name) then from_options.
Result<std::shared_ptr<const MatrixCodec>> make_codec(const ReprOptions& options);
// The codec of an artifact record: its "representation" names the entry.
Result<std::shared_ptr<const MatrixCodec>> codec_from_record(const nlohmann::json& record, const std::string& where,
                                                             const TensorLookup& tensors);

// The break-even density of a sparse footprint (0x03C): the exception share
// at which the matrix costs as much as a dense stream one bit wider, (b + 1 -
// (dense + fixed sparse bits per weight)) / entry bits; 0 when even no
// exception is cheaper.
double sparse_break_even(const SparseFootprint& f, uint64_t weights);

// Checks one artifact tensor against its field spec (dtype, shape or length
// rule); the message names the tensor and the field.
Status check_field(const io::TensorView& t, const FieldSpec& spec);

}  // namespace submoe::runtime
