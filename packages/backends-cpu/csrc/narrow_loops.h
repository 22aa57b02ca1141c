// narrow_loops.h: the float16/bfloat16 conversion loops, written once and
// compiled per ISA: narrow.cc includes this inside namespace base and
// narrow_avx2.cc inside avx2 (with -mavx2 -mf16c, where float16 takes the
// F16C instructions). Both round to nearest even, as lamina/narrow_floats.h.
// No include guard on purpose. (Included after isa_table.h.)

template <class From, class To, class F>
void convert_all(const From* __restrict a, To* __restrict o, int64_t n, F convert) {
  for (int64_t i = 0; i < n; ++i) o[i] = convert(a[i]);
}

inline void half_to_float(const Half* a, float* o, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))));
#endif
  convert_all(a + i, o + i, n - i, [](Half x) { return ::lamina::to_float(x); });
}

inline void float_to_half(const float* a, Half* o, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  convert_all(a + i, o + i, n - i, [](float x) { return ::lamina::to_half(x); });
}

inline void bfloat16_to_float(const BFloat16* a, float* o, int64_t n) {
  convert_all(a, o, n, [](BFloat16 x) { return ::lamina::to_float(x); });
}

inline void float_to_bfloat16(const float* a, BFloat16* o, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  // narrow_floats.h's to_bfloat16 on 8 lanes (GCC vectorises it only 4 wide,
  // at a third of this speed), two registers packed into 16 results
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  auto round8 = [&](const float* p) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(p));
    const __m256i top = _mm256_srli_epi32(u, 16);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(top, one)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, magnitude), inf);
    return _mm256_blendv_epi8(rounded, _mm256_or_si256(top, quiet), nan);
  };
  for (; i + 16 <= n; i += 16) {
    const __m256i packed = _mm256_packus_epi32(round8(a + i), round8(a + i + 8));  // per lane
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_permute4x64_epi64(packed, 0xD8));
  }
#endif
  convert_all(a + i, o + i, n - i, [](float x) { return ::lamina::to_bfloat16(x); });
}

inline void fill_narrow_loops(IsaKernels& k) {
  k.narrow = {&half_to_float, &bfloat16_to_float, &float_to_half, &float_to_bfloat16};
}
