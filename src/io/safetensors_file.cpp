// SafetensorsFile: mmap + strict validation of the header against the data.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "json_strict.h"
#include "submoe/io/mapped_file_faults.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

// The reference implementation's bound; a larger header is an attack or garbage.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct Parsed {
  TensorView view;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Validates one header entry; offsets are relative to the data section.
Status parse_entry(const std::string& name, const nlohmann::json& entry, uint64_t data_bytes, Parsed* out) {
  if (!entry.is_object()) return corrupt_data(std::string("entry is a JSON ") + json_type_name(entry) + ", not an object");
  const auto dt = entry.find("dtype");
  if (dt == entry.end()) return corrupt_data("missing 'dtype'");
  if (!dt->is_string()) return corrupt_data(std::string("'dtype' is a JSON ") + json_type_name(*dt) + ", not a string");
  SUBMOE_ASSIGN_OR_RETURN(const DType dtype, parse_dtype(dt->get_ref<const std::string&>()));

  const auto sh = entry.find("shape");
  if (sh == entry.end()) return corrupt_data("missing 'shape'");
  if (!sh->is_array()) return corrupt_data(std::string("'shape' is a JSON ") + json_type_name(*sh) + ", not an array");
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  uint64_t nonzero_product = 1;  // bounds every prefix product TensorView::numel() forms
  bool overflow = false;
  for (const auto& d : *sh) {
    if (d.is_number_integer() && !d.is_number_unsigned())
      return corrupt_data("negative dimension " + std::to_string(d.get<int64_t>()) + " in 'shape'");
    if (!d.is_number_unsigned())
      return corrupt_data(std::string("'shape' holds a JSON ") + json_type_name(d) + ", not a non-negative integer");
    const uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    // A zero dimension makes numel 0 whatever follows, but the product of the
    // other dimensions must still fit in int64 ([2^62, 2, 0] would overflow
    // numel()'s running product before the 0).
    if (v != 0) {
      if (nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / v) overflow = true;
      else nonzero_product *= v;
    }
    numel = v == 0 ? 0 : numel * v;
    shape.push_back(static_cast<int64_t>(v));
  }
  const uint64_t esize = dtype_size(dtype);
  if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      numel > std::numeric_limits<uint64_t>::max() / esize)
    return corrupt_data("shape " + sh->dump() + " overflows the element count");
  const uint64_t nbytes = numel * esize;

  const auto off = entry.find("data_offsets");
  if (off == entry.end()) return corrupt_data("missing 'data_offsets'");
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
    return corrupt_data("'data_offsets' " + off->dump() + " is not a pair of non-negative integers");
  const uint64_t begin = (*off)[0].get<uint64_t>();
  const uint64_t end = (*off)[1].get<uint64_t>();
  if (end < begin) return corrupt_data("'data_offsets' " + off->dump() + " end before begin");
  if (end > data_bytes)
    return corrupt_data("'data_offsets' " + off->dump() + " past the end of the data section (" +
                        std::to_string(data_bytes) + " bytes)");
  if (end - begin != nbytes)
    return corrupt_data("dtype " + std::string(dtype_name(dtype)) + " x shape " + sh->dump() + " is " +
                        std::to_string(nbytes) + " bytes but 'data_offsets' " + off->dump() + " span " +
                        std::to_string(end - begin));
  out->view.name = name;
  out->view.dtype = dtype;
  out->view.shape = std::move(shape);
  out->view.nbytes = nbytes;
  out->begin = begin;
  out->end = end;
  return Status::ok();
}

Status parse_metadata(const nlohmann::json& m, std::map<std::string, std::string>* out) {
  if (m.is_null()) return Status::ok();
  if (!m.is_object())
    return corrupt_data(std::string("'__metadata__' is a JSON ") + json_type_name(m) + ", not an object");
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string())
      return corrupt_data("'__metadata__' value of '" + k + "' is a JSON " + json_type_name(v) + ", not a string");
    (*out)[k] = v.get<std::string>();
  }
  return Status::ok();
}

}  // namespace

SafetensorsFile::~SafetensorsFile() {
  unregister_mapping(fault_slot_);
  if (map_ != nullptr) ::munmap(map_, file_size_);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found(path + ": no such file");
    return io_error(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return io_error(path + ": cannot stat: " + err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return corrupt_data(path + ": file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) return io_error(path + ": mmap failed: " + std::strerror(map_errno));
  // Weights stream from this mapping every token. With this advice the
  // kernel's readahead fills the page cache with 2 MiB folios where the file
  // system supports them, and faults map them whole: one TLB entry per 2 MiB
  // instead of 512 (docs/perf-notes.md, "Weights in 2 MiB pages"). Advice
  // only: a kernel without file huge pages ignores it.
  ::madvise(map, size, MADV_HUGEPAGE);

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->map_ = map;
  f->file_size_ = size;
  f->fault_slot_ = register_mapping(map, size, path);
  const auto* base = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian host, checked in tensor_convert.cpp
  if (header_len > kMaxHeaderBytes)
    return corrupt_data(path + ": header length " + std::to_string(header_len) + " exceeds the limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len > size - 8)
    return corrupt_data(path + ": header length " + std::to_string(header_len) + " exceeds the file (" +
                        std::to_string(size) + " bytes)");
  f->data_offset_ = 8 + header_len;
  const uint64_t data_bytes = size - f->data_offset_;

  const std::string_view header(reinterpret_cast<const char*>(base + 8), header_len);
  // The reference rejects anything before the '{' too (only trailing padding is allowed).
  if (header.empty() || header.front() != '{')
    return corrupt_data(path + ": header does not start with '{': not a JSON object");
  SUBMOE_ASSIGN_OR_RETURN(const nlohmann::json root, parse_json_strict(header, path + ": header"));
  if (!root.is_object())
    return corrupt_data(path + ": header is a JSON " + json_type_name(root) + ", not an object");

  std::vector<Parsed> parsed;
  parsed.reserve(root.size());
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      Status s = parse_metadata(entry, &f->metadata_);
      if (!s.is_ok()) return s.with_context(path);
      continue;
    }
    Parsed p;
    Status s = parse_entry(name, entry, data_bytes, &p);
    if (!s.is_ok()) return Status(s.code(), path + ": tensor '" + name + "': " + s.message());
    parsed.push_back(std::move(p));
  }

  // The tensors must tile the data section exactly, as the reference requires:
  // overlaps alias data, gaps and trailing bytes hide data nobody validates.
  std::sort(parsed.begin(), parsed.end(), [](const Parsed& a, const Parsed& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const std::string* prev = nullptr;
  for (const Parsed& p : parsed) {
    if (p.begin < cursor)
      return corrupt_data(path + ": tensor '" + p.view.name + "' overlaps tensor '" + *prev + "' (begins at " +
                          std::to_string(p.begin) + ", previous ends at " + std::to_string(cursor) + ")");
    if (p.begin > cursor)
      return corrupt_data(path + ": tensor '" + p.view.name + "' leaves a gap of " + std::to_string(p.begin - cursor) +
                          " bytes before it in the data section");
    cursor = p.end;
    prev = &p.view.name;
  }
  if (cursor != data_bytes)
    return corrupt_data(path + ": " + std::to_string(data_bytes - cursor) +
                        " bytes after the last tensor are not described by the header");

  f->tensors_.reserve(parsed.size());
  for (Parsed& p : parsed) {
    TensorView& v = p.view;
    v.file = path;
    v.file_offset = f->data_offset_ + p.begin;
    v.data = base + v.file_offset;
    f->by_name_.emplace(v.name, f->tensors_.size());
    f->tensors_.push_back(std::move(v));
  }
  return f;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

void release_pages(const TensorView& tensor) {
  if (tensor.data == nullptr || tensor.nbytes == 0) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(tensor.data);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + tensor.nbytes) / page * page;
  // Only whole pages: a neighbour's bytes sharing an edge page stay resident.
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace submoe::io
