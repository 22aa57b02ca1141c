// exp_simd.h: float32 exp over simd.h's Vec<float>, compiled once per ISA
// (included into ewise_avx2.cc / ewise_avx512.cc inside their namespace; no
// include guard on purpose). Cephes range reduction (x = n ln2 + r,
// |r| <= ln2/2) and a degree-6 polynomial, about 1 ulp; the same operations
// per lane at either width, so both copies give identical results. A vector
// with any lane outside [-87, 88] (overflow, denormal results, NaN) is
// computed with std::exp so edge cases match the libm result.

inline Vec<float>::V exp_ps(Vec<float>::V x) {
  using W = Vec<float>;
  using V = W::V;
  const V n = W::round(W::mul(x, W::set1(1.44269504088896341f)));
  V r = W::fnma(n, W::set1(0.693359375f), x);
  r = W::fnma(n, W::set1(-2.12194440e-4f), r);
  V p = W::set1(1.9875691500e-4f);
  p = W::fma(p, r, W::set1(1.3981999507e-3f));
  p = W::fma(p, r, W::set1(8.3334519073e-3f));
  p = W::fma(p, r, W::set1(4.1665795894e-2f));
  p = W::fma(p, r, W::set1(1.6666665459e-1f));
  p = W::fma(p, r, W::set1(5.0000001201e-1f));
  const V y = W::fma(p, W::mul(r, r), W::add(r, W::set1(1.0f)));
  return W::mul(y, W::pow2(n));
}

// out[i] = exp(a[i]); a and out may alias. Every element in [-87, 88] takes
// the polynomial, whatever its position (the tail goes through a padded
// vector), so the AVX2 and AVX-512 copies agree bit for bit.
inline void exp_f32(const float* a, float* out, int64_t n) {
  using W = Vec<float>;
  alignas(64) float x[W::L], y[W::L];
  for (int64_t i = 0; i < n; i += W::L) {
    const int64_t w = n - i < W::L ? n - i : W::L;
    if (w == W::L) {
      const W::V v = W::loadu(a + i);
      if (W::all_in(v, -87.0f, 88.0f)) {
        W::storeu(out + i, exp_ps(v));
        continue;
      }
    }
    for (int j = 0; j < W::L; ++j) x[j] = j < w ? a[i + j] : 0.0f;
    W::storeu(y, exp_ps(W::loadu(x)));
    for (int64_t j = 0; j < w; ++j)
      out[i + j] = x[j] >= -87.0f && x[j] <= 88.0f ? y[j] : std::exp(x[j]);
  }
}
