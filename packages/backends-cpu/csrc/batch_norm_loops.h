// batch_norm_loops.h: the per-channel loops of batch_norm.cc, included once
// per instruction set inside its namespace (batch_norm.cc: generic;
// batch_norm_avx2.cc: compiled with -mavx2 -mfma) so that the compiler
// vectorises the same source for each; batch_norm_loops<T>() returns the
// table of one ISA. No #pragma once: each includer compiles its own copy,
// in an unnamed namespace so the copies never collide at link time.
//
// Channel ch of a compact (n, c, s) buffer is n blocks of s contiguous
// elements, block i at (i * c + ch) * s. Sums run in double over kLanes
// independent partial sums per block, added in a fixed order (the same on
// every ISA and thread count).
namespace {

constexpr int kLanes = 8;

// Sum over p[0, s) of f(p[j]) in double.
template <class T, class F>
double block_sum(const T* __restrict__ p, int64_t s, F f) {
  double acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= s; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += f(p[j + k]);
  double tail = 0;
  for (; j < s; ++j) tail += f(p[j]);
  for (int k = 0; k < kLanes; ++k) tail += acc[k];
  return tail;
}

// Mean and biased variance of channel ch (two passes; n * s >= 1).
template <class T>
void stats_channel(const T* x, int64_t n, int64_t c, int64_t s, int64_t ch, T* mean, T* var) {
  const double count = double(n * s);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += block_sum(x + (i * c + ch) * s, s, [](T v) { return double(v); });
  const double mu = sum / count;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i)
    sq += block_sum(x + (i * c + ch) * s, s, [mu](T v) {
      const double d = double(v) - mu;
      return d * d;
    });
  mean[ch] = T(mu);
  var[ch] = T(sq / count);
}

// out = (x - mu) * scale + shift over channel ch.
template <class T>
void apply_channel(const T* x, T* out, int64_t n, int64_t c, int64_t s, int64_t ch, T mu,
                   T scale, T shift) {
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ xi = x + (i * c + ch) * s;
    T* __restrict__ yi = out + (i * c + ch) * s;
    for (int64_t j = 0; j < s; ++j) yi[j] = (xi[j] - mu) * scale + shift;
  }
}

// sum(g) and sum(g * (x - mu)) over channel ch, in double.
template <class T>
void grad_sums_channel(const T* g, const T* x, int64_t n, int64_t c, int64_t s, int64_t ch,
                       double mu, double* g_sum, double* gx_sum) {
  double ag[kLanes] = {}, agx[kLanes] = {};
  double tg = 0, tgx = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ gi = g + (i * c + ch) * s;
    const T* __restrict__ xi = x + (i * c + ch) * s;
    int64_t j = 0;
    for (; j + kLanes <= s; j += kLanes)
      for (int k = 0; k < kLanes; ++k) {
        const double gv = gi[j + k];
        ag[k] += gv;
        agx[k] += gv * (double(xi[j + k]) - mu);
      }
    for (; j < s; ++j) {
      tg += gi[j];
      tgx += double(gi[j]) * (double(xi[j]) - mu);
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    tg += ag[k];
    tgx += agx[k];
  }
  *g_sum = tg;
  *gx_sum = tgx;
}

// dx = g * a + (x - mu) * k1 + k0 over channel ch.
template <class T>
void dx_channel(const T* g, const T* x, T* dx, int64_t n, int64_t c, int64_t s, int64_t ch, T a,
                T mu, T k1, T k0) {
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ gi = g + (i * c + ch) * s;
    const T* __restrict__ xi = x + (i * c + ch) * s;
    T* __restrict__ di = dx + (i * c + ch) * s;
    for (int64_t j = 0; j < s; ++j) di[j] = gi[j] * a + (xi[j] - mu) * k1 + k0;
  }
}

template <class T>
BatchNormLoops<T> batch_norm_loops() {
  return {&stats_channel<T>, &apply_channel<T>, &grad_sums_channel<T>, &dx_channel<T>};
}

}  // namespace
