// attention_rows.h: the row loops of attention.cc, included once per
// instruction set inside its namespace (attention.cc: generic;
// attention_avx2.cc: -mavx2 -mfma), so that the compiler vectorises the same
// source for each; attention_rows<T>() returns one ISA's table. No #pragma
// once: each includer compiles its own copy, in an unnamed namespace.
//
// Sums run in kLanes partial sums folded in a fixed order, then in double,
// the same on every ISA and thread count.
namespace {

constexpr int kLanes = 8;

// Sum over i < n of f(i), in kLanes lanes of T folded into a double.
template <class T, class F>
double lane_sum(int64_t n, F f) {
  T acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  double total = 0;
  for (; i < n; ++i) total += double(f(i));
  for (int j = 0; j < kLanes; ++j) total += double(acc[j]);
  return total;
}

// s[0:n] = scale * s + m (m null: no mask), returning the largest (-inf for
// n = 0). A NaN lane may be passed over: the caller finds a NaN by its sum.
template <class T>
T scale_and_max(T* __restrict__ s, const T* __restrict__ m, int64_t n, T scale) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T top = kNegInf;
  int64_t j = 0;
#if defined(__AVX2__)
  // GCC does not vectorise a float compare-and-select; maxps is one (x > acc ?
  // x : acc, NaN x giving acc)
  if constexpr (std::is_same_v<T, float>) {
    using W = Vec<float>;
    const W::V k = W::set1(scale);
    W::V peak = W::set1(kNegInf);
    for (; j + W::L <= n; j += W::L) {
      const W::V x = m ? W::fma(W::loadu(s + j), k, W::loadu(m + j)) : W::mul(W::loadu(s + j), k);
      W::storeu(s + j, x);
      peak = W::max(x, peak);
    }
    alignas(64) float lanes[W::L];
    W::storeu(lanes, peak);
    for (int l = 0; l < W::L; ++l) top = lanes[l] > top ? lanes[l] : top;
  }
#endif
  for (; j < n; ++j) {
    s[j] = m ? s[j] * scale + m[j] : s[j] * scale;
    top = s[j] > top ? s[j] : top;
  }
  return top;
}

template <class T>
T softmax_row(T* __restrict__ s, const T* __restrict__ m, int64_t seen, int64_t n, T scale,
              ExpLoop<T> exp) {
  const T top = scale_and_max(s, m, seen, scale);
  if (top == -std::numeric_limits<T>::infinity()) {  // no key left, unless a NaN hid
    T fill = T(0), lse = top;
    for (int64_t i = 0; i < seen; ++i)
      if (s[i] != s[i]) fill = lse = s[i];
    for (int64_t i = 0; i < n; ++i) s[i] = fill;
    return lse;
  }
  for (int64_t i = 0; i < seen; ++i) s[i] -= top;
  exp(s, s, seen);
  // a NaN score makes the sum NaN, and so the whole row and its lse, as in the composite
  const double total = lane_sum<T>(seen, [s](int64_t i) { return s[i]; });
  const T inv = T(1.0 / total);
  for (int64_t i = 0; i < seen; ++i) s[i] *= inv;
  for (int64_t i = seen; i < n; ++i) s[i] = T(0);
  return T(double(top) + std::log(total));
}

template <class T>
void probabilities_row(T* __restrict__ s, const T* __restrict__ m, int64_t seen, int64_t n,
                       T scale, T lse, ExpLoop<T> exp) {
  if (lse == -std::numeric_limits<T>::infinity()) {  // no key was seen: p is 0
    for (int64_t i = 0; i < n; ++i) s[i] = T(0);
    return;
  }
  if (m) {
    for (int64_t j = 0; j < seen; ++j) s[j] = s[j] * scale + m[j] - lse;
  } else {
    for (int64_t j = 0; j < seen; ++j) s[j] = s[j] * scale - lse;
  }
  exp(s, s, seen);
  for (int64_t i = seen; i < n; ++i) s[i] = T(0);
}

template <class T>
void score_grads_row(const T* __restrict__ p, T* __restrict__ dp, int64_t n, T scale) {
  const T dot = T(lane_sum<T>(n, [p, dp](int64_t i) { return p[i] * dp[i]; }));
  for (int64_t i = 0; i < n; ++i) dp[i] = p[i] * (dp[i] - dot) * scale;
}

template <class T>
AttentionRows<T> attention_rows() {
  return {&softmax_row<T>, &probabilities_row<T>, &score_grads_row<T>};
}

}  // namespace
