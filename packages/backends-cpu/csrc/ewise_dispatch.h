// ewise_dispatch.h: function-pointer types of the elementwise loops, the
// accessors of their AVX2 copies (ewise_avx2.cc, called only when
// active_isa() >= avx2) and the per-ISA float32 exp, tanh and erf. The op lists
// below are the instantiations the AVX2 copy holds.
#pragma once

#include <cstdint>

#include "ewise_ops.h"

namespace lamina_cpu {

// O, the element type of out, is T except for a comparison writing bool.
template <class T, class O = T> using BinaryLoop = void (*)(const T*, const T*, O*, int64_t);
template <class T, class O = T> using ScalarLoop = void (*)(const T*, T, O*, int64_t);
template <class T> using UnaryLoop = void (*)(const T*, T*, int64_t);

template <class Op, class T, class O> BinaryLoop<T, O> avx2_binary_loop();
template <class Op, class T, class O> ScalarLoop<T, O> avx2_scalar_loop();
template <class Op, class T> UnaryLoop<T> avx2_unary_loop();
// out[i] = tanh(a[i]) for float32 (exp_simd.h); a and out may alias.
void tanh_f32_avx2(const float* a, float* out, int64_t n);
void tanh_f32_avx512(const float* a, float* out, int64_t n);
void erf_f32_avx2(const float* a, float* out, int64_t n);
void erf_f32_avx512(const float* a, float* out, int64_t n);

// X(Op) for every binary-family op with an AVX2 copy (the reversed ones are
// scalar-only but share the instantiation list), and for every unary op with
// one: the ops whose kSimd holds the float dtypes (ewise_ops.h).
#define LAMINA_BINARY_OP_LIST(X)                                                      \
  X(Add) X(Sub) X(Mul) X(Div) X(Power) X(Maximum) X(Minimum) X(Eq) X(Ne) X(Lt) X(Le) \
  X(Gt) X(Ge) X(Rsub) X(Rdiv) X(Rpower)
#define LAMINA_UNARY_OP_LIST(X) \
  X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Tanh) X(Sin) X(Cos) X(Erf) X(Sign)

}  // namespace lamina_cpu
