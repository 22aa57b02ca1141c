// transpose4.h: the 4x4 (and 2x4) register transposes of 4-byte elements that the
// blocked copies (strided.cc) and GEMM packing (matmul.cc) share. Shuffles
// move bits only, so int32 values and NaN payloads pass unchanged. Compiled
// at the baseline ISA (SSE2 on any x86-64); elsewhere LAMINA_HAS_TRANSPOSE4
// stays undefined and the callers keep their scalar loops.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#define LAMINA_HAS_TRANSPOSE4 1

namespace lamina_cpu {

// dst[j * ldd + i] = src[i * lds + j] for i, j < 4 (strides in elements).
inline void transpose4x4(const void* src, int64_t lds, void* dst, int64_t ldd) {
  const float* s = static_cast<const float*>(src);
  float* d = static_cast<float*>(dst);
  __m128 a0 = _mm_loadu_ps(s), a1 = _mm_loadu_ps(s + lds);
  __m128 a2 = _mm_loadu_ps(s + 2 * lds), a3 = _mm_loadu_ps(s + 3 * lds);
  _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
  _mm_storeu_ps(d, a0);
  _mm_storeu_ps(d + ldd, a1);
  _mm_storeu_ps(d + 2 * ldd, a2);
  _mm_storeu_ps(d + 3 * ldd, a3);
}

// dst[j * ldd + i] = src[i * lds + j] for i < 2, j < 4: two rows of four into
// four pairs (the last two rows of a 6-row GEMM panel).
inline void transpose2x4(const void* src, int64_t lds, void* dst, int64_t ldd) {
  const float* s = static_cast<const float*>(src);
  float* d = static_cast<float*>(dst);
  const __m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + lds);
  const __m128 lo = _mm_unpacklo_ps(a, b), hi = _mm_unpackhi_ps(a, b);
  _mm_storel_pi(reinterpret_cast<__m64*>(d), lo);
  _mm_storeh_pi(reinterpret_cast<__m64*>(d + ldd), lo);
  _mm_storel_pi(reinterpret_cast<__m64*>(d + 2 * ldd), hi);
  _mm_storeh_pi(reinterpret_cast<__m64*>(d + 3 * ldd), hi);
}

}  // namespace lamina_cpu
#endif
