// CPU feature detection, done once. Kernel tables are chosen from this at start-up
// ("dispatch once, high up"); inner loops never test features.
#pragma once

#include <string>

namespace submoe {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuFeatures {
  bool avx2 = false;       // AVX2 + FMA + F16C + BMI2
  bool avx512 = false;     // F + BW + DQ + VL
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool avx512_vbmi = false;
};

const CpuFeatures& cpu_features();

// The best ISA this CPU supports, capped by the environment variable
// SUBMOE_MAX_ISA=scalar|avx2|avx512 (for testing and benchmarking lower paths).
Isa best_isa();
const char* isa_name(Isa isa);
// Parses "scalar" / "avx2" / "avx512"; returns false when unknown.
bool parse_isa(const std::string& name, Isa* out);

}  // namespace submoe
