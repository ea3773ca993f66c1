// safetensors: the file format transformers reads and writes.
//
// Layout: 8-byte little-endian header length N, N bytes of UTF-8 JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data section; offsets are relative to the data section start (8 + N).
// Reading validates as strictly as the reference implementation (tensors tile the
// data section exactly: no gaps, no overlaps, nothing left over) and every error
// names the file and, where one is involved, the tensor.
//
// Files are memory-mapped read-only; a TensorView points into the mapping and stays
// valid while its SafetensorsFile (or SafetensorsModel) lives. Data pointers are
// NOT necessarily aligned to the element size (the format does not promise it when
// dtypes are mixed): read through memcpy or the conversion helpers below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/core/status.h"

namespace submoe::io {

// Element types of the format. F8 types are listed so that FP8 checkpoints
// (DeepSeek-V3 hub) can be opened and inspected.
enum class DType { kBF16, kF16, kF32, kF64, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kBool, kF8E4M3, kF8E5M2 };

// The format's spelling: "BF16", "F16", "F32", "F64", "U8", "I8", "U16", "I16",
// "U32", "I32", "U64", "I64", "BOOL", "F8_E4M3", "F8_E5M2".
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name (exact, case-sensitive); kUnsupported for anything else.
Result<DType> parse_dtype(std::string_view name);
// Bytes per element (1, 2, 4 or 8).
size_t dtype_size(DType dtype);
// Every DType, in enum order (for tests and listings).
std::span<const DType> all_dtypes();

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;   // empty = 0-d scalar (numel 1)
  const uint8_t* data = nullptr;  // into the mapping; may be unaligned
  uint64_t nbytes = 0;
  std::string file;             // path of the file holding the data
  uint64_t file_offset = 0;     // absolute byte offset of data in `file` (for pread)
  // FP8 block scaling (DeepSeek-V3 and Kimi-K2 hub weights: a 2-D F8_E4M3
  // weight `W` with an F32/BF16 tensor `W_scale_inv` of shape
  // [ceil(rows / block_rows), ceil(cols / block_cols)]): element (r, c) is the
  // stored value times block_scale[r / block_rows][c / block_cols], in float32,
  // as DeepSeek's weight_dequant computes it. Set by SafetensorsModel::open
  // (fp8_block_scales.cpp); read_as_f32 and read_as_bf16 apply it; null for
  // every other tensor.
  const TensorView* block_scale = nullptr;
  int64_t block_rows = 0, block_cols = 0;
  // This tensor is another's block_scale (read through that weight).
  bool is_block_scale = false;

  int64_t numel() const;
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(nbytes)}; }
  // "[4096, 14336]"
  std::string shape_string() const;
};

// One .safetensors file, memory-mapped read-only and fully validated on open.
class SafetensorsFile {
 public:
  friend class SafetensorsModel;  // attaches FP8 block scales across shards
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // nullptr when absent.
  const TensorView* find(std::string_view name) const;
  // In file (data offset) order.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  // Absolute offset of the data section (8 + header length).
  uint64_t data_offset() const { return data_offset_; }
  // Bytes [0, data_offset()): the length prefix and the JSON header.
  std::span<const uint8_t> header_bytes() const {
    return {static_cast<const uint8_t*>(map_), static_cast<size_t>(data_offset_)};
  }

 private:
  SafetensorsFile() = default;

  std::string path_;
  void* map_ = nullptr;
  uint64_t file_size_ = 0;
  int fault_slot_ = -1;  // io/mapped_file_faults.h
  uint64_t data_offset_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint: a single model.safetensors, a directory holding
// one, or a sharded directory with model.safetensors.index.json (weight_map:
// tensor -> shard file). For a sharded model every tensor in the weight map must
// exist in the shard it names, every shard tensor must be listed, and no name may
// appear in two shards.
class SafetensorsModel {
 public:
  // `path` is a .safetensors file, an index .json file, or a directory holding
  // model.safetensors.index.json or model.safetensors.
  static Result<std::unique_ptr<SafetensorsModel>> open(const std::string& path);

  const TensorView* find(std::string_view name) const;
  // Shard by shard (shard file names sorted), file order within.
  const std::vector<const TensorView*>& tensors() const { return tensors_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // Sum of the sizes of all files.
  uint64_t bytes_on_disk() const;
  // The directory holding the files (or the file's directory).
  const std::string& directory() const { return directory_; }

 private:
  SafetensorsModel() = default;
  // Pairs every `W_scale_inv` with its FP8 weight `W` (TensorView::block_scale),
  // with config.json's quantization_config.weight_block_size beside the files
  // (128 x 128 without one); every inconsistency is an error naming the tensor
  // (fp8_block_scales.cpp).
  Status attach_fp8_block_scales();

  std::string directory_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<const TensorView*> tensors_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

// Tells the kernel the mapped pages wholly inside the tensor's data are not
// needed any more (madvise DONTNEED): a tensor read once (a weight compressed
// and done with) stops counting towards the resident set. The view stays
// valid; touching it again re-reads the file.
void release_pages(const TensorView& tensor);

// Converts BF16 / F16 / F32 / F64 / F8 tensors to float32, FP8 block scales
// applied. `out` must hold exactly numel() elements. Integer and bool dtypes are
// rejected (kInvalidArgument).
Status read_as_f32(const TensorView& tensor, std::span<float> out);
// Converts BF16 (copy) / F16 / F32 / F64 / F8 to bf16 with round-to-nearest-even.
Status read_as_bf16(const TensorView& tensor, std::span<bf16_t> out);
// Convenience owners around the two functions above.
Result<std::vector<float>> to_f32(const TensorView& tensor);
// kNumerical naming the tensor and the first element that is NaN or infinite
// (F32, BF16, F16, F64, F8_E5M2, F8_E4M3; integer dtypes are always finite).
// One pass over the bytes, bit tests only.
Status check_finite(const TensorView& tensor);
Result<std::vector<bf16_t>> to_bf16(const TensorView& tensor);
// Copies the raw bytes of a tensor of dtype `expected` (any dtype) into `out`,
// which must hold exactly nbytes; a dtype mismatch is kInvalidArgument.
Status read_raw(const TensorView& tensor, DType expected, std::span<uint8_t> out);

// Builds a .safetensors file. Tensors are written in the order they were added
// (so one expert's tensors can be made contiguous for block reads) unless
// options.order says otherwise. The header is padded with spaces to a multiple of
// 8 bytes, as the reference writer does, so the data section starts 8-aligned.
class SafetensorsWriter {
 public:
  // Writes exactly `out.size()` bytes (the tensor's nbytes) of little-endian data.
  using FillFn = std::function<Status(std::span<uint8_t> out)>;

  enum class Order {
    kAsAdded,
    // The reference writer's order (its dtype enum descending, then name), which
    // keeps every tensor aligned to its element size and reproduces its bytes.
    kReference,
  };
  struct Options {
    Order order = Order::kAsAdded;
    bool fsync = true;  // fsync the temporary file and the directory
  };

  // Copies `data` (must be numel * dtype size bytes).
  Status add(std::string name, DType dtype, std::vector<int64_t> shape, std::span<const uint8_t> data);
  // Borrows `data`: the caller keeps it alive until write() returns.
  Status add_borrowed(std::string name, DType dtype, std::vector<int64_t> shape, std::span<const uint8_t> data);
  // The bytes are produced by `fill` during write(), in write order.
  Status add_generated(std::string name, DType dtype, std::vector<int64_t> shape, FillFn fill);
  // Fills bytes [offset, offset + out.size()) of the tensor. Called during write()
  // for consecutive element-aligned chunks of at most kFillChunkBytes, so a tensor
  // of any size costs one chunk of memory (synthetic multi-GB checkpoints).
  using ChunkFillFn = std::function<Status(uint64_t offset, std::span<uint8_t> out)>;
  static constexpr uint64_t kFillChunkBytes = uint64_t{8} << 20;
  Status add_generated_chunked(std::string name, DType dtype, std::vector<int64_t> shape, ChunkFillFn fill);
  // Typed conveniences (copying).
  Status add_f32(std::string name, std::vector<int64_t> shape, std::span<const float> data);
  Status add_bf16(std::string name, std::vector<int64_t> shape, std::span<const bf16_t> data);

  void set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t size() const { return entries_.size(); }

  // Writes `path` atomically: `path.tmp`, then fsync, then rename over `path`.
  // On error the temporary file is removed and `path` is untouched.
  Status write(const std::string& path, const Options& options) const;
  Status write(const std::string& path) const { return write(path, Options{}); }

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t nbytes;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> borrowed;
    FillFn fill;
    ChunkFillFn chunk_fill;
  };
  Status check_new(const std::string& name, DType dtype, const std::vector<int64_t>& shape, uint64_t* nbytes) const;

  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> names_;
  std::map<std::string, std::string> metadata_;
};

// Writes model.safetensors.index.json for shards that were written separately:
// {"metadata": {"total_size": N}, "weight_map": {tensor: shard file name}}.
// Atomic (temp + rename).
Status write_safetensors_index(const std::string& path, uint64_t total_size,
                               const std::map<std::string, std::string>& weight_map);

}  // namespace submoe::io
