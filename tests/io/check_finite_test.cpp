// io::check_finite on every float dtype: NaN and both infinities are found at
// their element, the largest finite values, subnormals and -0 pass, and
// integer dtypes are never flagged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

const std::string kName = "w";

template <typename U>
TensorView view_of(const std::vector<U>& v, DType dtype) {
  TensorView t;
  t.name = kName;  // (assigning the literal trips a GCC 12 -Wrestrict false positive at -O3)
  t.dtype = dtype;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data = reinterpret_cast<const uint8_t*>(v.data());
  t.nbytes = v.size() * sizeof(U);
  return t;
}

TEST(CheckFinite, EveryFloatDtypeFindsNanAndInfinitiesAtTheirElement) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {std::nanf(""), inf, -inf}) {
    std::vector<float> f = {0.0f, -0.0f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                            bad, 1.0f};
    const Status s = check_finite(view_of(f, DType::kF32));
    EXPECT_EQ(s.code(), ErrorCode::kNumerical);
    EXPECT_NE(s.message().find("'w'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("element 4"), std::string::npos) << s.message();
    std::vector<double> d(f.begin(), f.end());
    EXPECT_NE(check_finite(view_of(d, DType::kF64)).message().find("element 4"), std::string::npos);
  }
  // bf16 0x7f80 = +inf, 0xffc0 = NaN; 0x7f7f the largest finite.
  std::vector<uint16_t> b = {0x0000, 0x8000, 0x7f7f, 0x0001, 0xffc0};
  EXPECT_NE(check_finite(view_of(b, DType::kBF16)).message().find("element 4"), std::string::npos);
  b[4] = 0x7f80;
  EXPECT_NE(check_finite(view_of(b, DType::kBF16)).message().find("element 4"), std::string::npos);
  b.pop_back();
  EXPECT_TRUE(check_finite(view_of(b, DType::kBF16)).is_ok());
  // f16 0x7bff = 65504 (finite), 0x7c00 = +inf, 0xfe00 = NaN.
  std::vector<uint16_t> h = {0x7bff, 0xfbff, 0x0001, 0x7c00};
  EXPECT_NE(check_finite(view_of(h, DType::kF16)).message().find("element 3"), std::string::npos);
  h[3] = 0xfe00;
  EXPECT_NE(check_finite(view_of(h, DType::kF16)).message().find("element 3"), std::string::npos);
  h.pop_back();
  EXPECT_TRUE(check_finite(view_of(h, DType::kF16)).is_ok());
  // The same bit patterns as integers are data, not numbers.
  std::vector<uint16_t> u = {0x7c00, 0x7f80, 0xffff};
  EXPECT_TRUE(check_finite(view_of(u, DType::kU16)).is_ok());
}

// Both fp8 formats, every byte: check_finite flags exactly the values the
// converter turns into NaN or infinity (E5M2: exponent all ones; E4M3fn:
// S.1111.111 only).
TEST(CheckFinite, Fp8AgreesWithTheConverterOnEveryByte) {
  for (DType dtype : {DType::kF8E5M2, DType::kF8E4M3}) {
    int flagged = 0;
    for (int b = 0; b < 256; ++b) {
      const std::vector<uint8_t> one = {0x00, static_cast<uint8_t>(b)};
      const TensorView t = view_of(one, dtype);
      auto f = to_f32(t);
      ASSERT_TRUE(f.is_ok());
      const bool finite = std::isfinite((*f)[1]);
      const Status s = check_finite(t);
      EXPECT_EQ(s.is_ok(), finite) << dtype_name(dtype) << " byte " << b;
      if (!s.is_ok()) {
        EXPECT_NE(s.message().find("element 1"), std::string::npos) << s.message();
        ++flagged;
      }
    }
    EXPECT_EQ(flagged, dtype == DType::kF8E5M2 ? 8 : 2) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace submoe::io
