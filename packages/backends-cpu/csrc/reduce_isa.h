// reduce_isa.h: the body of reduce_avx2.cc and reduce_avx512.cc, each of
// which defines LAMINA_ISA (avx2 or avx512) and includes this once: the
// column sums of reduce_sum_axis (reduce_columns.h) and the row loops of
// rows.h compiled for that ISA, with the float32 exp of exp_simd.h, put into
// that ISA's table by fill_reduce (isa_table.h). Every copy gives identical
// results (fixed addition order). No include guard on purpose.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "isa_table.h"

namespace lamina_cpu {
namespace LAMINA_ISA {

#include "simd.h"
#include "exp_simd.h"
#include "reduce_columns.h"
#include "rows.h"

template <class T>
void softmax_row_isa(const T* x, T* y, int64_t n) {
  softmax_row(x, y, n, [](T* p, int64_t k) {
    if constexpr (std::is_same_v<T, float>) exp_f32_flush(p, p, k);
    else for (int64_t i = 0; i < k; ++i) p[i] = std::exp(p[i]);
  });
}

void fill_reduce(IsaKernels& k) {
  fill_rows(k.f32);
  fill_rows(k.f64);
  fill_rows(k.i64);
  fill_rows(k.b8);
  k.f32.softmax_row = &softmax_row_isa<float>;
  k.f64.softmax_row = &softmax_row_isa<double>;
}

}  // namespace LAMINA_ISA
}  // namespace lamina_cpu
