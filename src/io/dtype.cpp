#include <array>
#include <string>

#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

// Enum order; names as the reference implementation spells them.
constexpr std::array<DTypeInfo, 15> kDTypes{{
    {DType::kBF16, "BF16", 2},
    {DType::kF16, "F16", 2},
    {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},
    {DType::kU8, "U8", 1},
    {DType::kI8, "I8", 1},
    {DType::kU16, "U16", 2},
    {DType::kI16, "I16", 2},
    {DType::kU32, "U32", 4},
    {DType::kI32, "I32", 4},
    {DType::kU64, "U64", 8},
    {DType::kI64, "I64", 8},
    {DType::kBool, "BOOL", 1},
    {DType::kF8E4M3, "F8_E4M3", 1},
    {DType::kF8E5M2, "F8_E5M2", 1},
}};

constexpr std::array<DType, kDTypes.size()> make_all() {
  std::array<DType, kDTypes.size()> a{};
  for (size_t i = 0; i < kDTypes.size(); ++i) a[i] = kDTypes[i].dtype;
  return a;
}
constexpr std::array<DType, kDTypes.size()> kAll = make_all();

const DTypeInfo& info(DType d) { return kDTypes[static_cast<size_t>(d)]; }

static_assert([] {
  for (size_t i = 0; i < kDTypes.size(); ++i)
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  return true;
}(), "kDTypes must be in enum order");

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
size_t dtype_size(DType dtype) { return info(dtype).size; }
std::span<const DType> all_dtypes() { return kAll; }

Result<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& d : kDTypes)
    if (d.name == name) return d.dtype;
  std::string known;
  for (const DTypeInfo& d : kDTypes) {
    if (!known.empty()) known += ", ";
    known += d.name;
  }
  return unsupported("unknown dtype '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace submoe::io
