// ewise_isa.h: the body of ewise_avx2.cc and ewise_avx512.cc, each of which
// defines LAMINA_ISA (avx2 or avx512) and includes this once: the float32
// exp, tanh, erf and GELU (exp_simd.h) compiled for that ISA and, where
// LAMINA_ISA_LOOPS is defined (AVX2 only), the generic loops (ewise_loops.h),
// all put into that ISA's table by fill_ewise (isa_table.h). The AVX-512
// copy of the loops was measured no faster in cache and 6-18% slower on
// 16M-element add/max/mul (memory-bound) on Zen 4, so the AVX-512 table
// keeps the AVX2 loops it inherits. No include guard on purpose.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "isa_table.h"

namespace lamina_cpu {
namespace LAMINA_ISA {

#include "simd.h"
#include "exp_simd.h"
#if defined(LAMINA_ISA_LOOPS)
#include "ewise_loops.h"
#endif

void fill_ewise(IsaKernels& k) {
#if defined(LAMINA_ISA_LOOPS)
  fill_loops<true>(k);
#endif
  k.f32.unary[ops::kOpId<ops::Exp>] = &exp_f32;
  k.f32.unary[ops::kOpId<ops::Tanh>] = &tanh_f32;
  k.f32.unary[ops::kOpId<ops::Erf>] = &erf_f32;
  k.f32.gelu[0] = &gelu_f32<false>;
  k.f32.gelu[1] = &gelu_f32<true>;
  k.f32.gelu_backward[0] = &gelu_backward_f32<false>;
  k.f32.gelu_backward[1] = &gelu_backward_f32<true>;
}

}  // namespace LAMINA_ISA
}  // namespace lamina_cpu
