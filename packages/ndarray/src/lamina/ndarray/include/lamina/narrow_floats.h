// narrow_floats.h: float16 and bfloat16 storage types and their conversions
// to and from float, shared by the compiled backends (interface v2.2).
//
// The types hold bits only and have no arithmetic, so a kernel body that
// would compute on them does not compile: every op on a narrow dtype that a
// backend does not make native runs on float32 copies (the ndarray layer's
// _narrow.py). Conversion from float rounds to nearest, ties to even, with
// overflow to infinity and NaN kept a quiet NaN: bit for bit what the numpy
// reference backend (numpy's float16, _bfloat16_bits) and PyTorch give.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define LAMINA_NARROW_FN __host__ __device__ inline
#else
#define LAMINA_NARROW_FN inline
#endif

namespace lamina {

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T>
constexpr bool is_narrow_v = false;
template <>
constexpr bool is_narrow_v<Half> = true;
template <>
constexpr bool is_narrow_v<BFloat16> = true;

LAMINA_NARROW_FN uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

LAMINA_NARROW_FN float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Each conversion computes every case and selects one, without branches, so a
// loop of them vectorises.
LAMINA_NARROW_FN float to_float(BFloat16 x) { return bits_float(uint32_t(x.bits) << 16); }

LAMINA_NARROW_FN BFloat16 to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;  // wraps only for NaNs
  uint32_t quiet_nan = (u >> 16) | 0x0040u;
  return BFloat16{uint16_t((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded)};
}

LAMINA_NARROW_FN float to_float(Half x) {
  uint32_t sign = uint32_t(x.bits & 0x8000u) << 16;
  uint32_t exponent = (x.bits >> 10) & 0x1Fu;
  uint32_t mantissa = x.bits & 0x3FFu;
  // zero or subnormal: mantissa * 2^-24, exact in float
  uint32_t small = float_bits(float(int32_t(mantissa)) * 5.9604644775390625e-8f);
  uint32_t normal = ((exponent + 112u) << 23) | (mantissa << 13);
  uint32_t special = 0x7F800000u | (mantissa << 13);  // inf, NaN
  return bits_float(sign | (exponent == 0 ? small : exponent == 31 ? special : normal));
}

LAMINA_NARROW_FN Half to_half(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7FFFFFFFu;
  // 65520 and above round to inf; a NaN stays a quiet NaN
  uint32_t large = a > 0x7F800000u ? 0x7E00u | ((a >> 13) & 0x3FFu) : 0x7C00u;
  // below 2^-14, a float16 subnormal: adding 0.5 moves the value's bits to
  // float16 subnormal units at the bottom of the mantissa, and the float
  // addition rounds to nearest even
  uint32_t small = float_bits(bits_float(a) + 0.5f) - 0x3F000000u;
  // normal: re-bias the exponent, round the 13 dropped bits to even (a carry
  // may reach inf)
  uint32_t normal = (a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
  uint32_t out = a >= 0x47800000u ? large : a < 0x38800000u ? small : normal;
  return Half{uint16_t(out | sign)};
}

}  // namespace lamina
