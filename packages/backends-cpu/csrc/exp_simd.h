// exp_simd.h: float32 exp and tanh over simd.h's Vec<float>, compiled once
// per ISA (included into ewise_avx2.cc / ewise_avx512.cc inside their
// namespace; no include guard on purpose). The same operations per lane at
// either width, so both copies give identical results.
//
// exp: Cephes range reduction (x = n ln2 + r, |r| <= ln2/2) and a degree-6
// polynomial, about 1 ulp; lanes outside [-87, 88] (overflow, denormal
// results, NaN) take std::exp so edge cases match the libm result.

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

// tanh as Cephes' tanhf: x + x^3 P(x^2) for |x| < 0.625, else
// 1 - 2 / (exp(2|x|) + 1) with the sign of x (|x| clamped to 9, where tanh
// is 1 in float32); a few ulp. NaN lanes take std::tanh.
inline Vec<float>::V tanh_ps(Vec<float>::V x) {
  using W = Vec<float>;
  using V = W::V;
  const V ax = W::abs(x);
  const V z = W::mul(x, x);
  V p = W::set1(-5.70498872745e-3f);
  p = W::fma(p, z, W::set1(2.06390887954e-2f));
  p = W::fma(p, z, W::set1(-5.37397155531e-2f));
  p = W::fma(p, z, W::set1(1.33314422036e-1f));
  p = W::fma(p, z, W::set1(-3.33332819422e-1f));
  const V small = W::fma(W::mul(p, z), x, x);
  const V c = W::min(ax, W::set1(9.0f));
  const V e = exp_ps(W::add(c, c));
  const V large = W::sub(W::set1(1.0f), W::div(W::set1(2.0f), W::add(e, W::set1(1.0f))));
  // |.| then the sign of x: tanh(-0) is -0, as in libm.
  return W::copysign(W::abs(W::select_lt(ax, W::set1(0.625f), small, large)), x);
}

// out[i] = tanh(a[i]); a and out may alias; the tail through a padded vector.
inline void tanh_f32(const float* a, float* out, int64_t n) {
  using W = Vec<float>;
  alignas(64) float x[W::L], y[W::L];
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; i += W::L) {
    const int64_t w = n - i < W::L ? n - i : W::L;
    if (w == W::L) {
      const W::V v = W::loadu(a + i);
      if (W::all_in(v, -inf, inf)) {
        W::storeu(out + i, tanh_ps(v));
        continue;
      }
    }
    for (int j = 0; j < W::L; ++j) x[j] = j < w ? a[i + j] : 0.0f;
    W::storeu(y, tanh_ps(W::loadu(x)));
    for (int64_t j = 0; j < w; ++j) out[i + j] = x[j] == x[j] ? y[j] : std::tanh(x[j]);
  }
}
