// reduce_avx512.cc: the AVX-512 copy of the column-sum loop of reduce_sum_axis
// (reduce_columns.h), compiled with -mavx512f/dq/bw/vl and called only when
// active_isa() is avx512. Only additions in a fixed order: every copy gives
// identical results.
#include <cstdint>

#include "common.h"
#include "gemm.h"

namespace lamina_cpu {

namespace avx512 {
#include "reduce_columns.h"
}  // namespace avx512

template <class T>
void sum_columns_avx512(const T* src, T* dst, int64_t rows, int64_t ld, int64_t w) {
  avx512::sum_columns<T>(src, dst, rows, ld, w);
}

template void sum_columns_avx512<float>(const float*, float*, int64_t, int64_t, int64_t);
template void sum_columns_avx512<double>(const double*, double*, int64_t, int64_t, int64_t);
template void sum_columns_avx512<int64_t>(const int64_t*, int64_t*, int64_t, int64_t, int64_t);

}  // namespace lamina_cpu
