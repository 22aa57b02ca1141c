// narrow.cc: the float16/bfloat16 conversion loops of the baseline table and
// the entry points every kernel calls, which take the active ISA's loops
// (narrow_avx2.cc has the F16C and AVX2 ones). The conversions compute every
// case and select one (lamina/narrow_floats.h); this file is compiled with
// -fno-trapping-math (CMakeLists.txt), which lets the compiler compute a
// float operation the selected case does not use, so the loops vectorise
// (about 4x faster for float16). Rounding is unchanged: to nearest even.
#include "narrow.h"

#include "isa_table.h"

namespace lamina_cpu {

namespace base {
#include "narrow_loops.h"

void fill_narrow(IsaKernels& k) { fill_narrow_loops(k); }
}  // namespace base

void to_float32(const Half* a, float* o, int64_t n) { isa_kernels().narrow.half_to_float(a, o, n); }

void to_float32(const BFloat16* a, float* o, int64_t n) {
  isa_kernels().narrow.bfloat16_to_float(a, o, n);
}

void from_float32(const float* a, Half* o, int64_t n) { isa_kernels().narrow.float_to_half(a, o, n); }

void from_float32(const float* a, BFloat16* o, int64_t n) {
  isa_kernels().narrow.float_to_bfloat16(a, o, n);
}

}  // namespace lamina_cpu
