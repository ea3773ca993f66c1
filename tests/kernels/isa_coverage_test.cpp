// Which SIMD kernels this run exercised. The kernel tests run every ISA the
// CPU supports; AVX-512 ones cannot run on a CPU without it (and Intel SDE,
// the emulator that could, is not installable from Debian or PyPI). So a
// CPU with AVX-512 must not skip them (the dispatcher would use them: they
// are the headline kernels there), and on a CPU without it this test is
// skipped with a message saying what went unexercised, which scripts/test.sh
// repeats in its final banner. SUBMOE_REQUIRE_AVX512=1 (set by
// scripts/gpu_check.sh on an AVX-512 host) turns the skip into a failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "submoe/core/cpu_features.h"

namespace submoe {
namespace {

TEST(IsaCoverage, Avx512KernelsAreExercisedWhereTheCpuHasThem) {
  const bool required = std::getenv("SUBMOE_REQUIRE_AVX512") != nullptr &&
                        std::string(std::getenv("SUBMOE_REQUIRE_AVX512")) == "1";
  const CpuFeatures& f = cpu_features();
  if (f.avx512) {
    // best_isa() is what every dispatcher starts from: with AVX-512 present
    // (and not capped by SUBMOE_MAX_ISA) the tests above ran the AVX-512 tables.
    const char* cap = std::getenv("SUBMOE_MAX_ISA");
    if (cap == nullptr) {
      EXPECT_EQ(best_isa(), Isa::kAvx512) << "AVX-512 CPU but the kernels dispatch to " << isa_name(best_isa());
    }
    std::printf("[isa] AVX-512 kernels exercised (avx512_bf16 %d, avx512_vnni %d, avx512_vbmi %d)\n", f.avx512_bf16,
                f.avx512_vnni, f.avx512_vbmi);
    if (required) {
      EXPECT_TRUE(f.avx512_vnni && f.avx512_vbmi) << "SUBMOE_REQUIRE_AVX512=1 but this CPU lacks VNNI or VBMI: the "
                                                     "permute/int8 kernels were not exercised";
    }
    return;
  }
  if (required) FAIL() << "SUBMOE_REQUIRE_AVX512=1 but this CPU has no AVX-512: its kernels were not exercised";
  GTEST_SKIP() << "AVX-512 kernels NOT exercised: this CPU has no AVX-512 (the AVX2 and scalar kernels, which it "
                  "dispatches to, were)";
}

}  // namespace
}  // namespace submoe
