// rows.h: loops over one compact row p[0:n]: lane sums, max/min, and the
// bodies of softmax_last and layer_norm_last. Included into reduce.cc
// (portable build), reduce_avx2.cc and reduce_avx512.cc inside a namespace
// each, so every copy is one spelling that the compiler vectorises for its
// ISA. Sums run in 16 explicit lanes folded in a fixed order, so every copy
// gives identical results. Include only inside a namespace, after simd.h
// where __AVX2__ is defined.

constexpr int kLanes = 16;

// The accumulator of a float sum (double); an int64 sum stays in int64.
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// Sum of f(p[i]) over i < n in type A: 16 lanes, folded pairwise, then the
// tail. int64 sums wrap around (wrap_add), as numpy's.
template <class A, class T, class F>
A lane_fold(const T* __restrict__ p, int64_t n, F f) {
  A acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = wrap_add(acc[j], f(p[i + j]));
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] = wrap_add(acc[j], acc[j + w]);
  A tail = A(0);
  for (; i < n; ++i) tail = wrap_add(tail, f(p[i]));
  return wrap_add(acc[0], tail);
}

template <class T>
T lane_sum(const T* __restrict__ p, int64_t n) {
  return lane_fold<T>(p, n, [](T x) { return x; });
}

// Sum of a row: blocks of 1024 lane-summed, blocks accumulated in a wider type.
template <class T>
T row_sum(const T* p, int64_t n) {
  Acc<T> total = 0;
  for (int64_t b = 0; b < n; b += 1024)
    total = wrap_add<Acc<T>>(total, lane_sum(p + b, std::min<int64_t>(1024, n - b)));
  return static_cast<T>(total);
}

// Max (or min) of p[0:n], n >= 1, with 16 lanes. A NaN anywhere gives NaN,
// like numpy: the lanes take a plain compare-and-select, and whether a NaN
// was seen is tested apart, so the lanes vectorise.
template <class T, bool Max>
inline T pick(T x, T acc) {
  return (Max ? x > acc : x < acc) ? x : acc;
}

// acc[j] = pick(p[i + j], acc[j]) over the whole blocks of kLanes; returns
// where the blocks end. GCC does not vectorise a float compare-and-select
// (maxps differs from it only for NaN and signed zeros, and the compiler
// may not assume either away), so the ISA copies spell the lanes out:
// max(x, acc) is exactly x > acc ? x : acc, so every copy agrees bit for bit.
template <class T, bool Max>
int64_t extreme_blocks(const T* __restrict__ p, int64_t n, T* acc) {
  int64_t i = 0;
#if defined(__AVX2__)
  if constexpr (std::is_floating_point_v<T>) {
    using W = Vec<T>;
    constexpr int kV = kLanes / W::L;
    typename W::V v[kV];
    for (int k = 0; k < kV; ++k) v[k] = W::loadu(acc + k * W::L);
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kV; ++k) {
        const typename W::V x = W::loadu(p + i + k * W::L);
        v[k] = Max ? W::max(x, v[k]) : W::min(x, v[k]);
      }
    for (int k = 0; k < kV; ++k) W::storeu(acc + k * W::L, v[k]);
    return i;
  }
#endif
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = pick<T, Max>(p[i + j], acc[j]);
  return i;
}

template <class T, bool Max>
T row_extreme(const T* __restrict__ p, int64_t n) {
  T acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = p[0];
  const int64_t i = extreme_blocks<T, Max>(p, n, acc);
  T r = acc[0];
  for (int j = 1; j < kLanes; ++j) r = pick<T, Max>(acc[j], r);
  for (int64_t k = i; k < n; ++k) r = pick<T, Max>(p[k], r);
  if constexpr (std::is_floating_point_v<T>) {
    // x - x is 0 for finite x and NaN for NaN and +-inf: only an inf or NaN
    // row pays for the exact test.
    if (lane_fold<T>(p, n, [](T x) { return x - x; }) != T(0))
      for (int64_t k = 0; k < n; ++k)
        if (p[k] != p[k]) return p[k];
  }
  return r;
}

// y = softmax(x) over one row: x - max, exp (exp_inplace(y, n), the ISA's),
// divided by the row sum. A NaN in the row makes the whole row NaN.
template <class T, class Exp>
void softmax_row(const T* __restrict__ x, T* __restrict__ y, int64_t n, Exp exp_inplace) {
  const T peak = row_extreme<T, true>(x, n);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] - peak;
  exp_inplace(y, n);
  const T total = row_sum(y, n);
  for (int64_t i = 0; i < n; ++i) y[i] /= total;
}

// y = (x - mean) * rstd * w + b over one row, n >= 1, writing its mean and
// rstd. Two passes over the row (mean, then the centred sum of squares):
// the one-pass E[x^2] - E[x]^2 cancels badly when |mean| >> std. Statistics
// and centring stay in Acc<T>, so a float32 mean is not rounded before use.
template <class T>
void layer_norm_row(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                    T* __restrict__ y, int64_t n, double eps, T* mean, T* rstd) {
  using A = Acc<T>;
  const A mu = lane_fold<A>(x, n, [](T v) { return A(v); }) / A(n);
  const A sq = lane_fold<A>(x, n, [mu](T v) { return (A(v) - mu) * (A(v) - mu); });
  const A inv = 1 / std::sqrt(sq / A(n) + A(eps));
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>((A(x[i]) - mu) * inv * w[i] + b[i]);
  *mean = static_cast<T>(mu);
  *rstd = static_cast<T>(inv);
}

// One row of layer_norm_backward_last (reduce.cc): with xhat = (x - mu) * inv
// and gw = g * w, dx = (gw - mean(gw) - xhat * mean(gw * xhat)) * inv, and the
// row's g * xhat and g added into the column sums dw and db. The row sums run
// in one vector of lanes of T each, one loop per sum, folded in Acc<T>: two
// sums in one loop over 16 lanes vectorised into permutes, 4.5x slower.
// (Restrict-qualified parameters: GCC honours them there, not on locals.)
template <class T>
void layer_norm_backward_row(const T* __restrict__ g, const T* __restrict__ x,
                             const T* __restrict__ w, T mu, T inv, T* __restrict__ dx,
                             T* __restrict__ dw, T* __restrict__ db, int64_t size) {
  using A = Acc<T>;
  constexpr int kL = 32 / sizeof(T);
  T a1[kL] = {}, a2[kL] = {};
  int64_t n = size / kL * kL;
  for (int64_t i = 0; i < n; i += kL)
    for (int j = 0; j < kL; ++j) a1[j] += g[i + j] * w[i + j];
  for (int64_t i = 0; i < n; i += kL)
    for (int j = 0; j < kL; ++j) a2[j] += g[i + j] * w[i + j] * ((x[i + j] - mu) * inv);
  A t1 = 0, t2 = 0;
  for (int64_t i = n; i < size; ++i) {
    t1 += A(g[i] * w[i]);
    t2 += A(g[i] * w[i] * ((x[i] - mu) * inv));
  }
  for (int j = 0; j < kL; ++j) {
    t1 += A(a1[j]);
    t2 += A(a2[j]);
  }
  const T m1 = static_cast<T>(t1 / A(size)), m2 = static_cast<T>(t2 / A(size));
  for (int64_t k = 0; k < size; ++k) {
    const T xhat = (x[k] - mu) * inv;
    dx[k] = (g[k] * w[k] - m1 - xhat * m2) * inv;
    dw[k] += g[k] * xhat;
    db[k] += g[k];
  }
}

// This copy's row loops for T into an ISA table (isa_table.h); softmax_row
// is the includer's, since its exp differs per ISA. (reduce_columns.h is
// included before this file.)
template <class T>
void fill_rows(TypeKernels<T>& t) {
  t.row_max = &row_extreme<T, true>;
  t.row_min = &row_extreme<T, false>;
  if constexpr (!std::is_same_v<T, bool>) t.sum_columns = &sum_columns<T>;
  if constexpr (std::is_floating_point_v<T>) {
    t.layer_norm_row = &layer_norm_row<T>;
    t.layer_norm_backward_row = &layer_norm_backward_row<T>;
  }
}
