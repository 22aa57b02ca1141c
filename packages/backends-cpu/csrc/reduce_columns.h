// reduce_columns.h: the column-sum loop of reduce_sum_axis, included into
// reduce.cc (portable build) and reduce_avx2.cc (-mavx2) inside a namespace
// each, so both copies are one spelling. Include only inside a namespace.
//
// dst[i] = sum over k of src[k * ld + i], i < w, rows added in order k = 0, 1, ...
// Four rows per pass: the output is loaded and stored once per four rows.
// Only additions, in the same order at any vector width: both copies give
// identical results. int64 sums wrap around (wrap_add, common.h).
template <class T>
void sum_columns(const T* src, T* __restrict__ dst, int64_t rows, int64_t ld, int64_t w) {
  for (int64_t i = 0; i < w; ++i) dst[i] = T(0);
  int64_t k = 0;
  for (; k + 4 <= rows; k += 4) {
    const T* __restrict__ r0 = src + k * ld;
    const T* __restrict__ r1 = r0 + ld;
    const T* __restrict__ r2 = r1 + ld;
    const T* __restrict__ r3 = r2 + ld;
    for (int64_t i = 0; i < w; ++i)
      dst[i] = wrap_add(wrap_add(wrap_add(wrap_add(dst[i], r0[i]), r1[i]), r2[i]), r3[i]);
  }
  for (; k < rows; ++k) {
    const T* __restrict__ r = src + k * ld;
    for (int64_t i = 0; i < w; ++i) dst[i] = wrap_add(dst[i], r[i]);
  }
}
