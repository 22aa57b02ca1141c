// narrow.h: the float16/bfloat16 conversion loops behind ewise_cast (narrow.cc).
#pragma once

#include <cstdint>

#include "common.h"

namespace lamina_cpu {

// o[i] = a[i] converted, for i < n: exactly to float32, or rounded to nearest
// even from it (lamina/narrow_floats.h).
void to_float32(const Half* a, float* o, int64_t n);
void to_float32(const BFloat16* a, float* o, int64_t n);
void from_float32(const float* a, Half* o, int64_t n);
void from_float32(const float* a, BFloat16* o, int64_t n);

}  // namespace lamina_cpu
