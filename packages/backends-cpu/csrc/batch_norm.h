// batch_norm.h: the table of batch_norm.cc's per-channel loops, one per
// instruction set (batch_norm_loops.h holds their source).
#pragma once

#include <cstdint>

namespace lamina_cpu {

template <class T>
struct BatchNormLoops {
  void (*stats)(const T* x, int64_t n, int64_t c, int64_t s, int64_t ch, T* mean, T* var);
  void (*apply)(const T* x, T* out, int64_t n, int64_t c, int64_t s, int64_t ch, T mu, T scale,
                T shift);
  void (*grad_sums)(const T* g, const T* x, int64_t n, int64_t c, int64_t s, int64_t ch,
                    double mu, double* g_sum, double* gx_sum);
  void (*dx)(const T* g, const T* x, T* dx, int64_t n, int64_t c, int64_t s, int64_t ch, T a,
             T mu, T k1, T k0);
};

namespace avx2 {
// batch_norm_avx2.cc (x86 builds with the AVX2 translation units only).
BatchNormLoops<float> batch_norm_loops_f32();
BatchNormLoops<double> batch_norm_loops_f64();
}  // namespace avx2

}  // namespace lamina_cpu
