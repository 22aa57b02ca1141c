// ewise_isa.h: the body of ewise_avx2.cc and ewise_avx512.cc, each of which
// defines LAMINA_ISA (avx2 or avx512) and includes this once: the float32
// exp, tanh and erf (exp_simd.h) compiled for that ISA and, where LAMINA_ISA_LOOPS
// is defined (AVX2 only), the generic loops (ewise_loops.h) with the
// accessors ewise_dispatch.h declares (avx2_binary_loop, ...). The AVX-512
// copy of the loops was measured no faster in cache and 6-18% slower on
// 16M-element add/max/mul (memory-bound) on Zen 4, so the AVX-512 path runs
// the AVX2 loops. No include guard on purpose.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "ewise_dispatch.h"
#include "gemm.h"

#define LAMINA_PASTE2(a, b) a##_##b
#define LAMINA_PASTE(a, b) LAMINA_PASTE2(a, b)
#define LAMINA_FN(name) LAMINA_PASTE(LAMINA_ISA, name)

namespace lamina_cpu {

namespace LAMINA_ISA {
#include "simd.h"
#include "exp_simd.h"
}  // namespace LAMINA_ISA

void LAMINA_PASTE(exp_f32, LAMINA_ISA)(const float* a, float* out, int64_t n) {
  LAMINA_ISA::exp_f32(a, out, n);
}
void LAMINA_PASTE(tanh_f32, LAMINA_ISA)(const float* a, float* out, int64_t n) {
  LAMINA_ISA::tanh_f32(a, out, n);
}
void LAMINA_PASTE(erf_f32, LAMINA_ISA)(const float* a, float* out, int64_t n) {
  LAMINA_ISA::erf_f32(a, out, n);
}

#if defined(LAMINA_ISA_LOOPS)
namespace LAMINA_ISA {
#include "ewise_loops.h"
}  // namespace LAMINA_ISA

template <class Op, class T, class O> BinaryLoop<T, O> LAMINA_FN(binary_loop)() { return &LAMINA_ISA::binary_loop<Op, T, O>; }
template <class Op, class T, class O> ScalarLoop<T, O> LAMINA_FN(scalar_loop)() { return &LAMINA_ISA::scalar_loop<Op, T, O>; }
template <class Op, class T> UnaryLoop<T> LAMINA_FN(unary_loop)() { return &LAMINA_ISA::unary_loop<Op, T>; }

// The instantiations named by each op's kSimd (ewise_ops.h).
#define LAMINA_INSTANTIATE_BINARY_AS(OP, T, O)                   \
  template BinaryLoop<T, O> LAMINA_FN(binary_loop)<ops::OP, T, O>(); \
  template ScalarLoop<T, O> LAMINA_FN(scalar_loop)<ops::OP, T, O>();
#define LAMINA_INSTANTIATE_BINARY(OP)                 \
  LAMINA_INSTANTIATE_BINARY_AS(OP, float, float)      \
  LAMINA_INSTANTIATE_BINARY_AS(OP, double, double)
#define LAMINA_INSTANTIATE_UNARY(OP)                                   \
  template UnaryLoop<float> LAMINA_FN(unary_loop)<ops::OP, float>();   \
  template UnaryLoop<double> LAMINA_FN(unary_loop)<ops::OP, double>();
LAMINA_BINARY_OP_LIST(LAMINA_INSTANTIATE_BINARY)
LAMINA_UNARY_OP_LIST(LAMINA_INSTANTIATE_UNARY)
#define LAMINA_INSTANTIATE_INT(OP) LAMINA_INSTANTIATE_BINARY_AS(OP, int64_t, int64_t)
LAMINA_INSTANTIATE_INT(Add) LAMINA_INSTANTIATE_INT(Sub) LAMINA_INSTANTIATE_INT(Mul)
LAMINA_INSTANTIATE_INT(Maximum) LAMINA_INSTANTIATE_INT(Minimum) LAMINA_INSTANTIATE_INT(Eq)
LAMINA_INSTANTIATE_INT(Ne) LAMINA_INSTANTIATE_INT(Lt) LAMINA_INSTANTIATE_INT(Le)
LAMINA_INSTANTIATE_INT(Gt) LAMINA_INSTANTIATE_INT(Ge) LAMINA_INSTANTIATE_INT(Rsub)
template UnaryLoop<int64_t> LAMINA_FN(unary_loop)<ops::Neg, int64_t>();
template UnaryLoop<int64_t> LAMINA_FN(unary_loop)<ops::Abs, int64_t>();
template UnaryLoop<int64_t> LAMINA_FN(unary_loop)<ops::Sign, int64_t>();
// comparisons writing a bool out
#define LAMINA_INSTANTIATE_TO_BOOL(OP)               \
  LAMINA_INSTANTIATE_BINARY_AS(OP, float, bool)      \
  LAMINA_INSTANTIATE_BINARY_AS(OP, double, bool)     \
  LAMINA_INSTANTIATE_BINARY_AS(OP, int64_t, bool)
LAMINA_INSTANTIATE_TO_BOOL(Eq) LAMINA_INSTANTIATE_TO_BOOL(Ne) LAMINA_INSTANTIATE_TO_BOOL(Lt)
LAMINA_INSTANTIATE_TO_BOOL(Le) LAMINA_INSTANTIATE_TO_BOOL(Gt) LAMINA_INSTANTIATE_TO_BOOL(Ge)
#undef LAMINA_INSTANTIATE_BINARY_AS
#undef LAMINA_INSTANTIATE_BINARY
#undef LAMINA_INSTANTIATE_UNARY
#undef LAMINA_INSTANTIATE_INT
#undef LAMINA_INSTANTIATE_TO_BOOL
#endif  // LAMINA_ISA_LOOPS

}  // namespace lamina_cpu

#undef LAMINA_FN
#undef LAMINA_PASTE
#undef LAMINA_PASTE2
