// exp_simd.h: float32 exp, tanh and erf over simd.h's Vec<float>, compiled once
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

// out[i] = f(a[i]) with vf on whole vectors; elements outside [lo, hi] (and
// NaN) take the scalar sf, so edge cases match libm. a and out may alias.
// Every element in range takes vf whatever its position (the tail goes
// through a padded vector), so the AVX2 and AVX-512 copies agree bit for bit.
template <class VF, class SF>
inline void map_f32(const float* a, float* out, int64_t n, float lo, float hi, VF vf, SF sf) {
  using W = Vec<float>;
  alignas(64) float x[W::L], y[W::L];
  for (int64_t i = 0; i < n; i += W::L) {
    const int64_t w = n - i < W::L ? n - i : W::L;
    if (w == W::L) {
      const W::V v = W::loadu(a + i);
      if (W::all_in(v, lo, hi)) {
        W::storeu(out + i, vf(v));
        continue;
      }
    }
    for (int j = 0; j < W::L; ++j) x[j] = j < w ? a[i + j] : 0.0f;
    W::storeu(y, vf(W::loadu(x)));
    for (int64_t j = 0; j < w; ++j) out[i + j] = x[j] >= lo && x[j] <= hi ? y[j] : sf(x[j]);
  }
}

inline void exp_f32(const float* a, float* out, int64_t n) {
  map_f32(a, out, n, -87.0f, 88.0f, exp_ps, [](float v) { return std::exp(v); });
}

// exp for softmax rows, whose arguments are x - max(x) <= 0: below -87 (a
// result under 2^-125 next to the row's 1) it gives 0, so a masked row
// (-inf entries) stays on the vector path. NaN lanes take std::exp.
inline void exp_f32_flush(const float* a, float* out, int64_t n) {
  using W = Vec<float>;
  const float inf = std::numeric_limits<float>::infinity();
  map_f32(a, out, n, -inf, 88.0f,
          [](W::V x) { return W::select_lt(x, W::set1(-87.0f), W::zero(), exp_ps(x)); },
          [](float v) { return std::exp(v); });
}

// tanh as Cephes' tanhf: x + x^3 P(x^2) for |x| < 0.625, else
// 1 - 2 / (exp(2|x|) + 1) with the sign of x (|x| clamped to 10: tanh rounds
// to 1 in float32 from 9.01 on, while at 9 it is still 1 - 2^-24); a few ulp.
// NaN lanes take std::tanh.
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
  const V c = W::min(ax, W::set1(10.0f));
  const V e = exp_ps(W::add(c, c));
  const V large = W::sub(W::set1(1.0f), W::div(W::set1(2.0f), W::add(e, W::set1(1.0f))));
  // |.| then the sign of x: tanh(-0) is -0, as in libm.
  return W::copysign(W::abs(W::select_lt(ax, W::set1(0.625f), small, large)), x);
}

inline void tanh_f32(const float* a, float* out, int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  map_f32(a, out, n, -inf, inf, tanh_ps, [](float v) { return std::tanh(v); });
}

// erf: x P(x^2) for |x| < 1, else 1 - exp(-x^2) Q(u) with the sign of x,
// u = (|x| - 2.5) / 1.5 and |x| clamped to 4 (where erf is 1 in float32).
// P (degree 6) and Q (degree 12) are least-squares fits of erf(x)/x and
// erfc(x) exp(x^2) made for Lamina (relative error 1e-8 and 2e-8); within
// 2.3 ulp of erf over [-1, 1] and 1 ulp beyond. NaN lanes take std::erf.
inline Vec<float>::V erf_ps(Vec<float>::V x) {
  using W = Vec<float>;
  using V = W::V;
  static constexpr float kP[] = {7.970398874081216e-05f, -0.0008043200186036437f,
                                 0.005191816014791056f,  -0.026855501428033456f,
                                 0.11283621889833997f,   -0.37612628724094893f,
                                 1.1283791660945424f};
  static constexpr float kQ[] = {1.2231314305919186e-05f, -3.6003218838176476e-05f,
                                 5.944405553237009e-05f,  -0.00014632414358365772f,
                                 0.00040976474298817106f, -0.0010149186707232877f,
                                 0.002403988125571808f,   -0.005568214396760189f,
                                 0.012489210968805887f,   -0.027005582988262913f,
                                 0.05611051084731809f,    -0.11152101101313139f,
                                 0.2108063638041372f};
  const V ax = W::abs(x), z = W::mul(x, x);
  V p = W::set1(kP[0]);
  for (int i = 1; i < 7; ++i) p = W::fma(p, z, W::set1(kP[i]));
  const V c = W::min(ax, W::set1(4.0f));
  const V u = W::mul(W::sub(c, W::set1(2.5f)), W::set1(1.0f / 1.5f));
  V q = W::set1(kQ[0]);
  for (int i = 1; i < 13; ++i) q = W::fma(q, u, W::set1(kQ[i]));
  const V tail = W::fnma(exp_ps(W::sub(W::zero(), W::mul(c, c))), q, W::set1(1.0f));
  return W::copysign(W::abs(W::select_lt(ax, W::set1(1.0f), W::mul(x, p), tail)), x);
}

inline void erf_f32(const float* a, float* out, int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  map_f32(a, out, n, -inf, inf, erf_ps, [](float v) { return std::erf(v); });
}

// ---------------------------------------------------------------- GELU
// GELU and its backward in one pass over memory, the same float32 steps, in
// the same order, as the ewise_program listings of lamina.ndarray's gelu and
// gelu_backward (_fused.py): each step rounded, exp, erf and tanh as the
// kernels above (lanes their vector path does not take get libm's value,
// map_lanes), so the result is the unfused kernels', bit for bit, with no
// block temporaries between the steps: on 1M floats (Zen 3, 1 thread) the
// forward took 1.45 ms where the program took 1.9, the backward 2.15 for 3.0.

// f's lanes as map_f32 gives them: vf's where the lane lies in [lo, hi], sf's
// elsewhere (and for NaN).
template <class VF, class SF>
inline Vec<float>::V map_lanes(Vec<float>::V v, float lo, float hi, VF vf, SF sf) {
  using W = Vec<float>;
  const W::V y = vf(v);
  if (W::all_in(v, lo, hi)) return y;
  alignas(64) float x[W::L], r[W::L];
  W::storeu(x, v);
  W::storeu(r, y);
  for (int j = 0; j < W::L; ++j)
    if (!(x[j] >= lo && x[j] <= hi)) r[j] = sf(x[j]);
  return W::loadu(r);
}

inline Vec<float>::V exp_lanes(Vec<float>::V v) {
  return map_lanes(v, -87.0f, 88.0f, exp_ps, [](float x) { return std::exp(x); });
}
inline Vec<float>::V erf_lanes(Vec<float>::V v) {
  const float inf = std::numeric_limits<float>::infinity();
  return map_lanes(v, -inf, inf, erf_ps, [](float x) { return std::erf(x); });
}
inline Vec<float>::V tanh_lanes(Vec<float>::V v) {
  const float inf = std::numeric_limits<float>::infinity();
  return map_lanes(v, -inf, inf, tanh_ps, [](float x) { return std::tanh(x); });
}

// v, through an empty asm: a multiply that made v cannot be fused into the
// add that uses it (the compiler contracts a * b + c into an FMA otherwise),
// so each step is rounded on its own, as the program's kernels round it.
inline Vec<float>::V rounded(Vec<float>::V v) {
  __asm__("" : "+v"(v));
  return v;
}

// The constants as the program's scalars: Python's doubles rounded to float.
struct GeluConstants {
  static constexpr float kSqrtHalf = float(0.7071067811865475);       // 1 / sqrt(2)
  static constexpr float kInvSqrt2Pi = float(0.3989422804014327);     // 1 / sqrt(2 pi)
  static constexpr float kSqrt2OverPi = float(0.7978845608028654);    // sqrt(2 / pi)
  static constexpr float kCubic = float(0.044715);
  static constexpr float kCubic3 = float(3 * 0.044715);
};

// y = (t + 1) * 0.5 * x with t = erf(x / sqrt 2), or, tanh form,
// t = tanh(sqrt(2/pi) * (x + 0.044715 x^3)).
template <bool kTanh>
inline Vec<float>::V gelu_ps(Vec<float>::V x) {
  using W = Vec<float>;
  using C = GeluConstants;
  W::V t;
  if constexpr (kTanh) {
    t = rounded(W::mul(W::mul(W::mul(x, x), x), W::set1(C::kCubic)));
    t = tanh_lanes(W::mul(W::add(t, x), W::set1(C::kSqrt2OverPi)));
  } else {
    t = erf_lanes(W::mul(x, W::set1(C::kSqrtHalf)));
  }
  return W::mul(W::mul(W::add(t, W::set1(1.0f)), W::set1(0.5f)), x);
}

// g * GELU'(x): erf form Phi(x) + x phi(x); tanh form
// (t + 1) / 2 + x / 2 (1 - t^2) du, du = (1 + 3 * 0.044715 x^2) sqrt(2/pi).
template <bool kTanh>
inline Vec<float>::V gelu_grad_ps(Vec<float>::V x, Vec<float>::V g) {
  using W = Vec<float>;
  using C = GeluConstants;
  const W::V one = W::set1(1.0f), half = W::set1(0.5f);
  if constexpr (kTanh) {
    W::V t = rounded(W::mul(W::mul(W::mul(x, x), x), W::set1(C::kCubic)));
    t = tanh_lanes(W::mul(W::add(x, t), W::set1(C::kSqrt2OverPi)));
    W::V du = rounded(W::mul(W::mul(x, x), W::set1(C::kCubic3)));
    du = W::mul(W::add(du, one), W::set1(C::kSqrt2OverPi));
    const W::V left = rounded(W::mul(W::add(t, one), half));
    const W::V square = rounded(W::mul(t, t));
    W::V right = W::mul(W::mul(x, half), W::sub(one, square));
    right = rounded(W::mul(right, du));
    return W::mul(g, W::add(left, right));
  } else {
    W::V pdf = exp_lanes(W::mul(W::mul(x, x), W::set1(-0.5f)));
    pdf = W::mul(pdf, W::set1(C::kInvSqrt2Pi));
    const W::V cdf =
        rounded(W::mul(W::add(erf_lanes(W::mul(x, W::set1(C::kSqrtHalf))), one), half));
    return W::mul(g, W::add(cdf, rounded(W::mul(x, pdf))));
  }
}

// out[i] = gelu(x[i]) for i < n; the tail through a zero-padded vector.
template <bool kTanh>
inline void gelu_f32(const float* x, float* out, int64_t n) {
  using W = Vec<float>;
  int64_t i = 0;
  for (; i + W::L <= n; i += W::L) W::storeu(out + i, gelu_ps<kTanh>(W::loadu(x + i)));
  if (i == n) return;
  alignas(64) float a[W::L] = {}, y[W::L];
  for (int64_t j = 0; j < n - i; ++j) a[j] = x[i + j];
  W::storeu(y, gelu_ps<kTanh>(W::loadu(a)));
  for (int64_t j = 0; j < n - i; ++j) out[i + j] = y[j];
}

// out[i] = g[i] * gelu'(x[i]) for i < n.
template <bool kTanh>
inline void gelu_backward_f32(const float* x, const float* g, float* out, int64_t n) {
  using W = Vec<float>;
  int64_t i = 0;
  for (; i + W::L <= n; i += W::L)
    W::storeu(out + i, gelu_grad_ps<kTanh>(W::loadu(x + i), W::loadu(g + i)));
  if (i == n) return;
  alignas(64) float a[W::L] = {}, b[W::L] = {}, y[W::L];
  for (int64_t j = 0; j < n - i; ++j) a[j] = x[i + j], b[j] = g[i + j];
  W::storeu(y, gelu_grad_ps<kTanh>(W::loadu(a), W::loadu(b)));
  for (int64_t j = 0; j < n - i; ++j) out[i + j] = y[j];
}
