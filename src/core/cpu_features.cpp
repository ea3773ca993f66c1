#include "submoe/core/cpu_features.h"

#include <cstdlib>

namespace submoe {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512_vbmi = f.avx512 && __builtin_cpu_supports("avx512vbmi");
#endif
    return f;
  }();
  return features;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool parse_isa(const std::string& name, Isa* out) {
  if (name == "scalar") { *out = Isa::kScalar; return true; }
  if (name == "avx2") { *out = Isa::kAvx2; return true; }
  if (name == "avx512") { *out = Isa::kAvx512; return true; }
  return false;
}

Isa best_isa() {
  const CpuFeatures& f = cpu_features();
  Isa best = f.avx512 ? Isa::kAvx512 : (f.avx2 ? Isa::kAvx2 : Isa::kScalar);
  if (const char* cap = std::getenv("SUBMOE_MAX_ISA")) {
    Isa limit;
    if (parse_isa(cap, &limit) && static_cast<int>(limit) < static_cast<int>(best)) best = limit;
  }
  return best;
}

}  // namespace submoe
