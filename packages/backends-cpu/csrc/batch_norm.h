// batch_norm.h: the table of batch_norm.cc's per-channel loops, one per
// instruction set (batch_norm_loops.h holds their source).
#pragma once

#include <cstdint>

namespace lamina_cpu {

// Blocks shorter than this (s, the values per channel and image: 4x4 maps and
// smaller) run through the row loops, several channels at a time
// (batch_norm_loops.h).
constexpr int64_t kShortBlock = 32;

template <class T>
struct BatchNormLoops {
  void (*stats)(const T* x, int64_t n, int64_t c, int64_t s, int64_t ch, T* mean, T* var);
  void (*apply)(const T* x, T* out, int64_t n, int64_t c, int64_t s, int64_t ch, T mu, T scale,
                T shift);
  void (*grad_sums)(const T* g, const T* x, int64_t n, int64_t c, int64_t s, int64_t ch,
                    double mu, double* g_sum, double* gx_sum);
  void (*dx)(const T* g, const T* x, T* dx, int64_t n, int64_t c, int64_t s, int64_t ch, T a,
             T mu, T k1, T k0);
  // The same over channels [c0, c1) for s < kShortBlock; the coefficient arrays
  // are indexed from c0, mean and var (like the outputs above) from 0.
  void (*stats_rows)(const T* x, int64_t n, int64_t c, int64_t s, int64_t c0, int64_t c1,
                     T* mean, T* var);
  void (*apply_rows)(const T* x, T* out, int64_t n, int64_t c, int64_t s, int64_t c0,
                     int64_t c1, const T* mu, const T* scale, const T* shift);
  void (*grad_sums_rows)(const T* g, const T* x, int64_t n, int64_t c, int64_t s, int64_t c0,
                         int64_t c1, const double* mu, double* g_sum, double* gx_sum);
  void (*dx_rows)(const T* g, const T* x, T* dx, int64_t n, int64_t c, int64_t s, int64_t c0,
                  int64_t c1, const T* a, const T* mu, const T* k1, const T* k0);
};

namespace avx2 {
// batch_norm_avx2.cc (x86 builds with the AVX2 translation units only).
BatchNormLoops<float> batch_norm_loops_f32();
BatchNormLoops<double> batch_norm_loops_f64();
}  // namespace avx2

}  // namespace lamina_cpu
