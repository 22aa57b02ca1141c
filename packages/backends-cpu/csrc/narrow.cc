// narrow.cc: the float16/bfloat16 conversion loops. The conversions compute
// every case and select one (lamina/narrow_floats.h); this file is compiled
// with -fno-trapping-math (CMakeLists.txt), which lets the compiler compute a
// float operation the selected case does not use, so the loops vectorise
// (about 4x faster for float16). Rounding is unchanged: still to nearest even.
#include "narrow.h"

namespace lamina_cpu {

namespace {

template <class From, class To, class F>
void convert_all(const From* __restrict a, To* __restrict o, int64_t n, F convert) {
  for (int64_t i = 0; i < n; ++i) o[i] = convert(a[i]);
}

}  // namespace

void to_float32(const Half* a, float* o, int64_t n) {
  convert_all(a, o, n, [](Half x) { return ::lamina::to_float(x); });
}

void to_float32(const BFloat16* a, float* o, int64_t n) {
  convert_all(a, o, n, [](BFloat16 x) { return ::lamina::to_float(x); });
}

void from_float32(const float* a, Half* o, int64_t n) {
  convert_all(a, o, n, [](float x) { return ::lamina::to_half(x); });
}

void from_float32(const float* a, BFloat16* o, int64_t n) {
  convert_all(a, o, n, [](float x) { return ::lamina::to_bfloat16(x); });
}

}  // namespace lamina_cpu
