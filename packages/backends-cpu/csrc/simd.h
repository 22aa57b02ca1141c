// simd.h: the vector vocabulary the per-ISA kernels are written in, Vec<T>
// with L lanes of T: a __m512/__m512d in a translation unit compiled with
// -mavx512f (gemm_avx512.cc, ...), a __m256/__m256d under -mavx2 -mfma.
// Included (after <immintrin.h>) inside the per-ISA namespace, so the two
// copies are distinct types; no include guard on purpose.

template <class T> struct Vec;

#if defined(__AVX512F__)
template <> struct Vec<float> {
  using V = __m512;
  static constexpr int L = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V round(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], built in the exponent field.
  static V pow2(V n) {
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_castsi512_ps(e);
  }
  // Whether lo <= x <= hi in every lane (false for a NaN lane).
  static bool all_in(V x, float lo, float hi) {
    return (_mm512_cmp_ps_mask(x, set1(lo), _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, set1(hi), _CMP_LE_OQ)) ==
           0xFFFF;
  }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }  // a < b ? a : b
  static V max(V a, V b) { return _mm512_max_ps(a, b); }  // a > b ? a : b
  static V abs(V x) { return _mm512_abs_ps(x); }
  // |mag| with the sign of sgn (mag >= 0).
  static V copysign(V mag, V sgn) {
    const __m512i s = _mm512_and_si512(_mm512_castps_si512(sgn), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), s));
  }
  // x < t ? a : b, lane by lane.
  static V select_lt(V x, V t, V a, V b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, t, _CMP_LT_OQ), b, a); }
};
template <> struct Vec<double> {
  using V = __m512d;
  static constexpr int L = 8;
  static V zero() { return _mm512_setzero_pd(); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V load(const double* p) { return _mm512_load_pd(p); }
  static V loadu(const double* p) { return _mm512_loadu_pd(p); }
  static void storeu(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V bcast(const double* p) { return _mm512_set1_pd(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V min(V a, V b) { return _mm512_min_pd(a, b); }
  static V max(V a, V b) { return _mm512_max_pd(a, b); }
};
#else
template <> struct Vec<float> {
  using V = __m256;
  static constexpr int L = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_castsi256_ps(e);
  }
  static bool all_in(V x, float lo, float hi) {
    const V ok = _mm256_and_ps(_mm256_cmp_ps(x, set1(lo), _CMP_GE_OQ), _mm256_cmp_ps(x, set1(hi), _CMP_LE_OQ));
    return _mm256_movemask_ps(ok) == 0xFF;
  }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }  // a < b ? a : b
  static V max(V a, V b) { return _mm256_max_ps(a, b); }  // a > b ? a : b
  static V abs(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  static V copysign(V mag, V sgn) { return _mm256_or_ps(mag, _mm256_and_ps(sgn, _mm256_set1_ps(-0.0f))); }
  static V select_lt(V x, V t, V a, V b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, t, _CMP_LT_OQ)); }
};
template <> struct Vec<double> {
  using V = __m256d;
  static constexpr int L = 4;
  static V zero() { return _mm256_setzero_pd(); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V load(const double* p) { return _mm256_load_pd(p); }
  static V loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void storeu(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V min(V a, V b) { return _mm256_min_pd(a, b); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
};
#endif
