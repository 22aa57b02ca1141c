// ewise_avx2.cc: AVX2/FMA elementwise code, compiled with -mavx2 -mfma and
// called only when the CPU has both: the AVX2 copies of the generic loops
// (ewise_loops.h) and a float32 exp. exp_f32_avx2 uses the Cephes range
// reduction (x = n ln2 + r, |r| <= ln2/2) and a degree-6 polynomial, about
// 1 ulp; blocks with any lane outside [-87, 88] (overflow, denormal results,
// NaN) are computed with std::exp so edge cases match the libm result.
#include <immintrin.h>

#include <cmath>

#include "ewise_dispatch.h"
#include "gemm.h"

namespace lamina_cpu {

namespace avx2 {
#include "ewise_loops.h"
}  // namespace avx2

template <class Op, class T> BinaryLoop<T> avx2_binary_loop() { return &avx2::binary_loop<Op, T>; }
template <class Op, class T> ScalarLoop<T> avx2_scalar_loop() { return &avx2::scalar_loop<Op, T>; }
template <class Op, class T> UnaryLoop<T> avx2_unary_loop() { return &avx2::unary_loop<Op, T>; }

#define LAMINA_INSTANTIATE_BINARY(OP)                                           \
  template BinaryLoop<float> avx2_binary_loop<ops::OP, float>();                \
  template BinaryLoop<double> avx2_binary_loop<ops::OP, double>();              \
  template ScalarLoop<float> avx2_scalar_loop<ops::OP, float>();                \
  template ScalarLoop<double> avx2_scalar_loop<ops::OP, double>();
#define LAMINA_INSTANTIATE_UNARY(OP)                                            \
  template UnaryLoop<float> avx2_unary_loop<ops::OP, float>();                  \
  template UnaryLoop<double> avx2_unary_loop<ops::OP, double>();
LAMINA_BINARY_OP_LIST(LAMINA_INSTANTIATE_BINARY)
LAMINA_UNARY_OP_LIST(LAMINA_INSTANTIATE_UNARY)
#define LAMINA_INSTANTIATE_INT(OP)                                              \
  template BinaryLoop<int64_t> avx2_binary_loop<ops::OP, int64_t>();            \
  template ScalarLoop<int64_t> avx2_scalar_loop<ops::OP, int64_t>();
LAMINA_INSTANTIATE_INT(Add) LAMINA_INSTANTIATE_INT(Sub) LAMINA_INSTANTIATE_INT(Mul)
LAMINA_INSTANTIATE_INT(Maximum) LAMINA_INSTANTIATE_INT(Minimum) LAMINA_INSTANTIATE_INT(Eq)
LAMINA_INSTANTIATE_INT(Ne) LAMINA_INSTANTIATE_INT(Lt) LAMINA_INSTANTIATE_INT(Le)
LAMINA_INSTANTIATE_INT(Gt) LAMINA_INSTANTIATE_INT(Ge) LAMINA_INSTANTIATE_INT(Rsub)
template UnaryLoop<int64_t> avx2_unary_loop<ops::Neg, int64_t>();
template UnaryLoop<int64_t> avx2_unary_loop<ops::Abs, int64_t>();
template UnaryLoop<int64_t> avx2_unary_loop<ops::Sign, int64_t>();
#undef LAMINA_INSTANTIATE_BINARY
#undef LAMINA_INSTANTIATE_UNARY
#undef LAMINA_INSTANTIATE_INT
namespace {

inline __m256 exp_ps(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 r2 = _mm256_mul_ps(r, r);
  __m256 y = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

}  // namespace

void exp_f32_avx2(const float* a, float* out, int64_t n) {
  const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(a + i);
    __m256 ok = _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), _mm256_cmp_ps(x, hi, _CMP_LE_OQ));
    if (_mm256_movemask_ps(ok) == 0xFF) {
      _mm256_storeu_ps(out + i, exp_ps(x));
    } else {
      for (int64_t j = i; j < i + 8; ++j) out[j] = std::exp(a[j]);
    }
  }
  for (; i < n; ++i) out[i] = std::exp(a[i]);
}

}  // namespace lamina_cpu
