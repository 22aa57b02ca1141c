// reduce_isa.h: the body of reduce_avx2.cc and reduce_avx512.cc, each of
// which defines LAMINA_ISA (avx2 or avx512) and includes this once: the
// column sums of reduce_sum_axis (reduce_columns.h) and the row loops of
// rows.h compiled for that ISA, with the float32 exp of exp_simd.h. Every copy gives identical results (fixed addition order).
// No include guard on purpose.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common.h"
#include "gemm.h"

#define LAMINA_PASTE2(a, b) a##_##b
#define LAMINA_PASTE(a, b) LAMINA_PASTE2(a, b)

namespace lamina_cpu {

namespace LAMINA_ISA {
#include "simd.h"
#include "exp_simd.h"
#include "reduce_columns.h"
#include "rows.h"
}  // namespace LAMINA_ISA

template <class T>
void LAMINA_PASTE(sum_columns, LAMINA_ISA)(const T* src, T* dst, int64_t rows, int64_t ld,
                                            int64_t w) {
  LAMINA_ISA::sum_columns<T>(src, dst, rows, ld, w);
}

template <class T, bool Max>
T LAMINA_PASTE(row_extreme, LAMINA_ISA)(const T* p, int64_t n) {
  return LAMINA_ISA::row_extreme<T, Max>(p, n);
}

template <class T>
void LAMINA_PASTE(softmax_row, LAMINA_ISA)(const T* x, T* y, int64_t n) {
  LAMINA_ISA::softmax_row(x, y, n, [](T* p, int64_t k) {
    if constexpr (std::is_same_v<T, float>) LAMINA_ISA::exp_f32_flush(p, p, k);
    else for (int64_t i = 0; i < k; ++i) p[i] = std::exp(p[i]);
  });
}

template <class T>
void LAMINA_PASTE(layer_norm_row, LAMINA_ISA)(const T* x, const T* w, const T* b, T* y,
                                               int64_t n, double eps, T* mean, T* rstd) {
  LAMINA_ISA::layer_norm_row(x, w, b, y, n, eps, mean, rstd);
}

#define LAMINA_INSTANTIATE(T)                                                                  \
  template void LAMINA_PASTE(sum_columns, LAMINA_ISA)<T>(const T*, T*, int64_t, int64_t,       \
                                                         int64_t);                             \
  template T LAMINA_PASTE(row_extreme, LAMINA_ISA)<T, true>(const T*, int64_t);                \
  template T LAMINA_PASTE(row_extreme, LAMINA_ISA)<T, false>(const T*, int64_t);
LAMINA_INSTANTIATE(float)
LAMINA_INSTANTIATE(double)
LAMINA_INSTANTIATE(int64_t)
#undef LAMINA_INSTANTIATE
template bool LAMINA_PASTE(row_extreme, LAMINA_ISA)<bool, true>(const bool*, int64_t);
template bool LAMINA_PASTE(row_extreme, LAMINA_ISA)<bool, false>(const bool*, int64_t);
#define LAMINA_INSTANTIATE(T)                                                                  \
  template void LAMINA_PASTE(softmax_row, LAMINA_ISA)<T>(const T*, T*, int64_t);               \
  template void LAMINA_PASTE(layer_norm_row, LAMINA_ISA)<T>(const T*, const T*, const T*, T*,  \
                                                            int64_t, double, T*, T*);
LAMINA_INSTANTIATE(float)
LAMINA_INSTANTIATE(double)
#undef LAMINA_INSTANTIATE

}  // namespace lamina_cpu

#undef LAMINA_PASTE
#undef LAMINA_PASTE2
