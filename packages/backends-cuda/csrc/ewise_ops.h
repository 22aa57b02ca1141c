// ewise_ops.h: the one list of the backend's elementwise ops. No other file of
// the backend names an op: kernels.h declares each op's launchers, bindings.cc
// exports them, kernel_dtypes.h gives their dtypes, and ewise_binary.cu,
// ewise_strided.cu and ewise_unary.cu define them, all by expanding the lists
// below. Adding an op is one line here plus its functor (ewise.cuh for binary
// ops, ewise_unary.cu for unary ones).
//
// Plain C++ and no device code (bindings.cc includes it): the functors are
// only named here. The dtype sets are those of kernel_dtypes.h.
#pragma once

// X(NAME, FUNCTOR, DTYPES, FORMS, DOC) for each binary op. Its kernels:
//   ewise_NAME(a, b, out)              out[i] = f(a[i], b[i])
//   ewise_strided_NAME(a, b, out, shape, a_strides, a_offset, b_strides, b_offset)
//   scalar_NAME(a, value, out)         out[i] = f(a[i], value)   FORMS SCALAR or REVERSED
//   scalar_rNAME(a, value, out)        out[i] = f(value, a[i])   FORMS REVERSED
// all taking DTYPES; DOC says what f(x, y) is. A functor that derives from
// Comparison (ewise.cuh) may also write a bool out.
#define LAMINA_BINARY_OPS(X) LAMINA_BINARY_OPS_WITH(LAMINA_CALL_WITHOUT, X)

// The same list with P passed on as X's first argument: X(P, NAME, ...). For a
// consumer that expands a macro of its own per kernel (kernel_dtypes.h).
#define LAMINA_BINARY_OPS_WITH(X, P)                                        \
  X(P, add, Add, kAllDTypes, SCALAR, "x + y")                               \
  X(P, sub, Sub, kNumbers, REVERSED, "x - y")                               \
  X(P, mul, Mul, kAllDTypes, SCALAR, "x * y")                               \
  X(P, div, Div, kFloats, REVERSED, "x / y")                                \
  X(P, power, Power, kNumbers, REVERSED, "x ** y")                          \
  X(P, maximum, Maximum, kAllDTypes, SCALAR, "max(x, y), NaN if either is") \
  X(P, minimum, Minimum, kAllDTypes, SCALAR, "min(x, y), NaN if either is") \
  X(P, eq, Eq, kAllDTypes, SCALAR, "x == y")                                \
  X(P, ne, Ne, kAllDTypes, SCALAR, "x != y")                                \
  X(P, lt, Lt, kAllDTypes, SCALAR, "x < y")                                 \
  X(P, le, Le, kAllDTypes, SCALAR, "x <= y")                                \
  X(P, gt, Gt, kAllDTypes, SCALAR, "x > y")                                 \
  X(P, ge, Ge, kAllDTypes, SCALAR, "x >= y")                                \
  X(P, floordiv, FloorDiv, kNumbers, EWISE, "x // y, rounding toward -inf") \
  X(P, remainder, Remainder, kNumbers, EWISE, "x % y, with the sign of y")  \
  X(P, bitwise_and, BitwiseAnd, kIntegral, EWISE, "x & y")                  \
  X(P, bitwise_or, BitwiseOr, kIntegral, EWISE, "x | y")                    \
  X(P, bitwise_xor, BitwiseXor, kIntegral, EWISE, "x ^ y")

// X(NAME, FUNCTOR, DTYPES, DOC) for each unary op: the kernel ewise_NAME(a, out),
// out[i] = f(a[i]) with f(x) as DOC says, taking DTYPES.
#define LAMINA_UNARY_OPS(X) LAMINA_UNARY_OPS_WITH(LAMINA_CALL_WITHOUT, X)
#define LAMINA_UNARY_OPS_WITH(X, P)                                              \
  X(P, neg, Neg, kNumbers, "-x")                                                 \
  X(P, abs, Abs, kNumbers, "|x|")                                                \
  X(P, sign, Sign, kNumbers, "-1, 0 or 1 as x < 0, == 0 or > 0 (NaN stays NaN)") \
  X(P, exp, Exp, kFloats, "exp(x)")                                              \
  X(P, log, Log, kFloats, "log(x)")                                              \
  X(P, sqrt, Sqrt, kFloats, "sqrt(x)")                                           \
  X(P, tanh, Tanh, kFloats, "tanh(x)")                                           \
  X(P, sin, Sin, kFloats, "sin(x)")                                              \
  X(P, cos, Cos, kFloats, "cos(x)")                                              \
  X(P, erf, Erf, kFloats, "erf(x)")                                              \
  X(P, bitwise_not, BitwiseNot, kIntegral, "~x (not x for bool)")

#define LAMINA_CALL_WITHOUT(X, ...) X(__VA_ARGS__)

// LAMINA_IF_SCALAR(FORMS, code...) is code when an op of those FORMS has a
// scalar_NAME kernel, else nothing; LAMINA_IF_REVERSED likewise for scalar_rNAME.
#define LAMINA_IF_SCALAR(FORMS, ...) LAMINA_IF_SCALAR_##FORMS(__VA_ARGS__)
#define LAMINA_IF_SCALAR_EWISE(...)
#define LAMINA_IF_SCALAR_SCALAR(...) __VA_ARGS__
#define LAMINA_IF_SCALAR_REVERSED(...) __VA_ARGS__
#define LAMINA_IF_REVERSED(FORMS, ...) LAMINA_IF_REVERSED_##FORMS(__VA_ARGS__)
#define LAMINA_IF_REVERSED_EWISE(...)
#define LAMINA_IF_REVERSED_SCALAR(...)
#define LAMINA_IF_REVERSED_REVERSED(...) __VA_ARGS__
