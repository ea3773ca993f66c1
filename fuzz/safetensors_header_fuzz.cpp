// libFuzzer target: the safetensors reader (io/safetensors.h). The input is a
// whole .safetensors file (8-byte header length, JSON header, data section),
// written to a temporary file and opened with SafetensorsFile::open and
// SafetensorsModel::open. Beyond "no crash", an accepted file must keep the
// reader's promises:
//   - every tensor's data lies inside the file and inside the data section,
//     data == mapping + file_offset, nbytes == numel() * dtype_size (numel()
//     of the accepted shape must not overflow at any prefix);
//   - the tensors tile the data section exactly (in file order, no gap, no
//     overlap, nothing left over) and find(name) returns each one;
//   - check_finite runs on every float tensor, and for F32 / BF16 / F16 agrees
//     with to_f32 (it fails iff some converted value is NaN or infinite);
//   - SafetensorsModel::open of the same file agrees with SafetensorsFile.
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "submoe/io/safetensors.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::io;

namespace {

using submoe::fuzz::require;

// Writes the input to a fresh file under /tmp; empty string on failure. The
// suffix makes SafetensorsModel::open treat it as a single .safetensors file.
std::string write_temp(const uint8_t* data, size_t size) {
  char path[] = "/tmp/submoe-fuzz-st-XXXXXX.safetensors";
  const int fd = ::mkstemps(path, 12);
  if (fd < 0) return {};
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd, data + done, size - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  if (done != size) {
    ::unlink(path);
    return {};
  }
  return path;
}

bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF64 || d == DType::kF8E4M3 ||
         d == DType::kF8E5M2;
}

// The shape's product computed as numel() does (int64_t, left to right), or
// false where a dimension is negative or some prefix overflows.
bool checked_numel(const std::vector<int64_t>& shape, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, d, &n)) return false;
  }
  *out = n;
  return true;
}

void check_tensor(const SafetensorsFile& f, const TensorView& t) {
  const uint64_t size = f.file_size();
  require(t.file == f.path());
  require(t.file_offset >= f.data_offset() && t.file_offset <= size && t.nbytes <= size - t.file_offset);
  require(t.data == f.header_bytes().data() + t.file_offset);
  int64_t numel = 0;
  require(checked_numel(t.shape, &numel));
  require(t.numel() == numel);
  require(static_cast<uint64_t>(numel) * dtype_size(t.dtype) == t.nbytes);
  require(f.find(t.name) == &t);
  if (!is_float(t.dtype)) return;
  const Status finite = check_finite(t);
  require(finite.is_ok() || finite.code() == ErrorCode::kNumerical);
  if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16) return;
  if (numel > (1 << 16)) return;  // keep runs fast
  auto v = to_f32(t);
  require(v.is_ok() && v->size() == static_cast<size_t>(numel));
  bool all_finite = true;
  for (float x : *v) all_finite = all_finite && std::isfinite(x);
  require(all_finite == finite.is_ok());
}

void check_file(const SafetensorsFile& f) {
  require(f.data_offset() >= 8 && f.data_offset() <= f.file_size());
  require(f.header_bytes().size() == f.data_offset());
  uint64_t cursor = f.data_offset();
  for (const TensorView& t : f.tensors()) {
    require(t.name != "__metadata__");
    check_tensor(f, t);
    require(t.file_offset == cursor);  // file order, tiling the data section
    cursor += t.nbytes;
  }
  require(cursor == f.file_size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  const std::string path = write_temp(data, size);
  if (path.empty()) return 0;
  auto f = SafetensorsFile::open(path);
  if (f.is_ok()) check_file(**f);
  auto m = SafetensorsModel::open(path);
  require(m.is_ok() == f.is_ok());
  if (m.is_ok()) {
    const SafetensorsModel& model = **m;
    require(model.files().size() == 1 && model.tensors().size() == (*f)->tensors().size());
    require(model.bytes_on_disk() == (*f)->file_size());
    for (size_t i = 0; i < model.tensors().size(); ++i) {
      const TensorView* t = model.tensors()[i];
      const TensorView& u = (*f)->tensors()[i];
      require(model.find(t->name) == t);
      require(t->name == u.name && t->dtype == u.dtype && t->shape == u.shape && t->nbytes == u.nbytes &&
              t->file_offset == u.file_offset);
    }
  }
  ::unlink(path.c_str());
  return 0;
}
