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

LAMINA_NARROW_FN float to_float(BFloat16 x) { return bits_float(uint32_t(x.bits) << 16); }

LAMINA_NARROW_FN BFloat16 to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return BFloat16{uint16_t((u >> 16) | 0x0040u)};
  // below the NaNs, u + 0x7FFF + 1 cannot carry out of 32 bits
  return BFloat16{uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}

LAMINA_NARROW_FN float to_float(Half x) {
  uint32_t sign = uint32_t(x.bits & 0x8000u) << 16;
  uint32_t exponent = (x.bits >> 10) & 0x1Fu;
  uint32_t mantissa = x.bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return bits_float(float_bits(magnitude) | sign);
  }
  if (exponent == 31) return bits_float(sign | 0x7F800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

LAMINA_NARROW_FN Half to_half(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7FFFFFFFu;
  uint32_t out;
  if (a >= 0x47800000u) {  // 65536 and above, inf, NaN
    out = a > 0x7F800000u ? 0x7E00u | ((a >> 13) & 0x3FFu) : 0x7C00u;
  } else if (a < 0x38800000u) {  // below 2^-14: a float16 subnormal (or zero)
    // Adding 0.5 shifts the value's bits to float16 subnormal units at the
    // bottom of the mantissa; the float addition rounds to nearest even.
    out = float_bits(bits_float(a) + 0.5f) - 0x3F000000u;
  } else {  // normal: re-bias the exponent, round the 13 dropped bits to even
    out = (a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u)) >> 13;  // a carry may reach inf
  }
  return Half{uint16_t(out | sign)};
}

}  // namespace lamina
