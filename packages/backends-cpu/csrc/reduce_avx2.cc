// reduce_avx2.cc: the AVX2 copy of the column-sum loop of reduce_sum_axis
// (reduce_columns.h), compiled with -mavx2 -mfma and called only when
// active_isa() >= avx2. Only additions in a fixed order: every copy gives
// identical results.
#include <cstdint>

#include "common.h"
#include "gemm.h"

namespace lamina_cpu {

namespace avx2 {
#include "reduce_columns.h"
}  // namespace avx2

template <class T>
void sum_columns_avx2(const T* src, T* dst, int64_t rows, int64_t ld, int64_t w) {
  avx2::sum_columns<T>(src, dst, rows, ld, w);
}

template void sum_columns_avx2<float>(const float*, float*, int64_t, int64_t, int64_t);
template void sum_columns_avx2<double>(const double*, double*, int64_t, int64_t, int64_t);
template void sum_columns_avx2<int64_t>(const int64_t*, int64_t*, int64_t, int64_t, int64_t);

}  // namespace lamina_cpu
