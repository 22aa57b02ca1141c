// narrow_avx2.cc: the float16/bfloat16 conversion loops (narrow_loops.h)
// compiled with -mavx2 -mf16c -fno-trapping-math, in the avx2 table: float16
// converts 8 values per F16C instruction, bfloat16 in 8-lane AVX2 integer code.
#include <immintrin.h>

#include "isa_table.h"
#include "narrow.h"

namespace lamina_cpu {
namespace avx2 {
#include "narrow_loops.h"

void fill_narrow(IsaKernels& k) { fill_narrow_loops(k); }
}  // namespace avx2
}  // namespace lamina_cpu
