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

// Short blocks (s < kShortBlock: the 1x1 to 5x5 maps at the end of a ResNet) run
// over the channels [c0, c1) together, row by row. Channel by channel, each block
// is a few elements a cache line or more from the next, with its own kLanes-wide
// sum. A row of channels [c0, c1) is (c1 - c0) * s contiguous elements, so each
// loop runs along the row, with the channel's values repeated s times ("spread"),
// and vectorises. Sums accumulate per element of the row over the batch, then each
// channel adds its s partial sums in order: for s = 1 that is the channel loops'
// order (the same bits), for larger s another fixed one (the thread count does
// not change it). Zen 4, 1 thread, batch 128, stats / apply / backward in us,
// channel loops -> row loops: 128 channels of 1x1 17 / 28 / 56 -> 11 / 8 / 20;
// 64 of 2x2 43 / 32 / 78 -> 17 / 9 / 27; 32 of 4x4 52 / 15 / 66 -> 26 / 14 / 45
// (8x8, s = 64: no faster, left to the channel loops).

// Each of v[0, w) repeated s times.
template <class V>
std::vector<V> spread(const V* v, int64_t w, int64_t s) {
  std::vector<V> out(static_cast<std::size_t>(w * s));
  for (int64_t k = 0; k < w; ++k)
    for (int64_t j = 0; j < s; ++j) out[static_cast<std::size_t>(k * s + j)] = v[k];
  return out;
}

// Each channel's s partial sums of part, added in order, into out[0, w).
inline void fold(const std::vector<double>& part, int64_t w, int64_t s, double* out) {
  for (int64_t k = 0; k < w; ++k) {
    double t = 0;
    for (int64_t j = 0; j < s; ++j) t += part[static_cast<std::size_t>(k * s + j)];
    out[k] = t;
  }
}

// Mean and biased variance of channels [c0, c1).
template <class T>
void stats_rows(const T* x, int64_t n, int64_t c, int64_t s, int64_t c0, int64_t c1, T* mean,
                T* var) {
  const int64_t w = c1 - c0, len = w * s;
  const double count = double(n * s);
  std::vector<double> part(static_cast<std::size_t>(len), 0.0);
  double* __restrict__ p = part.data();
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ row = x + (i * c + c0) * s;
    for (int64_t e = 0; e < len; ++e) p[e] += double(row[e]);
  }
  std::vector<double> mu(static_cast<std::size_t>(w)), sq(mu.size());
  fold(part, w, s, mu.data());
  for (int64_t k = 0; k < w; ++k) mu[k] /= count;
  const std::vector<double> mu_e = spread(mu.data(), w, s);
  const double* __restrict__ m = mu_e.data();
  std::fill(part.begin(), part.end(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ row = x + (i * c + c0) * s;
    for (int64_t e = 0; e < len; ++e) {
      const double d = double(row[e]) - m[e];
      p[e] += d * d;
    }
  }
  fold(part, w, s, sq.data());
  for (int64_t k = 0; k < w; ++k) {
    mean[c0 + k] = T(mu[k]);
    var[c0 + k] = T(sq[k] / count);
  }
}

// out = (x - mu) * scale + shift over channels [c0, c1), coefficients indexed from c0.
template <class T>
void apply_rows(const T* x, T* out, int64_t n, int64_t c, int64_t s, int64_t c0, int64_t c1,
                const T* mu, const T* scale, const T* shift) {
  const int64_t w = c1 - c0, len = w * s;
  const std::vector<T> mu_e = spread(mu, w, s), scale_e = spread(scale, w, s),
                       shift_e = spread(shift, w, s);
  const T* __restrict__ m = mu_e.data();
  const T* __restrict__ sc = scale_e.data();
  const T* __restrict__ sh = shift_e.data();
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ xi = x + (i * c + c0) * s;
    T* __restrict__ yi = out + (i * c + c0) * s;
    for (int64_t e = 0; e < len; ++e) yi[e] = (xi[e] - m[e]) * sc[e] + sh[e];
  }
}

// sum(g) and sum(g * (x - mu)) over channels [c0, c1), in double, indexed from c0.
template <class T>
void grad_sums_rows(const T* g, const T* x, int64_t n, int64_t c, int64_t s, int64_t c0,
                    int64_t c1, const double* mu, double* g_sum, double* gx_sum) {
  const int64_t w = c1 - c0, len = w * s;
  const std::vector<double> mu_e = spread(mu, w, s);
  std::vector<double> part_g(static_cast<std::size_t>(len), 0.0), part_gx = part_g;
  const double* __restrict__ m = mu_e.data();
  double* __restrict__ pg = part_g.data();
  double* __restrict__ pgx = part_gx.data();
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ gi = g + (i * c + c0) * s;
    const T* __restrict__ xi = x + (i * c + c0) * s;
    for (int64_t e = 0; e < len; ++e) {
      const double gv = gi[e];
      pg[e] += gv;
      pgx[e] += gv * (double(xi[e]) - m[e]);
    }
  }
  fold(part_g, w, s, g_sum);
  fold(part_gx, w, s, gx_sum);
}

// dx = g * a + (x - mu) * k1 + k0 over channels [c0, c1), coefficients indexed from c0.
template <class T>
void dx_rows(const T* g, const T* x, T* dx, int64_t n, int64_t c, int64_t s, int64_t c0,
             int64_t c1, const T* a, const T* mu, const T* k1, const T* k0) {
  const int64_t w = c1 - c0, len = w * s;
  const std::vector<T> a_e = spread(a, w, s), mu_e = spread(mu, w, s), k1_e = spread(k1, w, s),
                       k0_e = spread(k0, w, s);
  const T* __restrict__ pa = a_e.data();
  const T* __restrict__ m = mu_e.data();
  const T* __restrict__ p1 = k1_e.data();
  const T* __restrict__ p0 = k0_e.data();
  for (int64_t i = 0; i < n; ++i) {
    const T* __restrict__ gi = g + (i * c + c0) * s;
    const T* __restrict__ xi = x + (i * c + c0) * s;
    T* __restrict__ di = dx + (i * c + c0) * s;
    for (int64_t e = 0; e < len; ++e) di[e] = gi[e] * pa[e] + (xi[e] - m[e]) * p1[e] + p0[e];
  }
}

template <class T>
BatchNormLoops<T> batch_norm_loops() {
  return {&stats_channel<T>, &apply_channel<T>, &grad_sums_channel<T>, &dx_channel<T>,
          &stats_rows<T>, &apply_rows<T>, &grad_sums_rows<T>, &dx_rows<T>};
}

}  // namespace
