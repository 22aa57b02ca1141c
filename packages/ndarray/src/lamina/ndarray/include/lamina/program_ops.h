// program_ops.h: the ops of an elementwise program (the optional kernel
// ewise_program of the backend interface), in the order that numbers them.
// Python's lamina.ndarray._interface.PROGRAM_OPS lists the same names in the
// same order (a test compares the two). X(name, Op, Kind): Op names the
// backend's op type, Kind is Binary (a OP b), Scalar (a OP value, value OP a
// for the r-ops) or Unary.
#pragma once

#define LAMINA_PROGRAM_OPS(X)                                                            \
  X(add, Add, Binary) X(sub, Sub, Binary) X(mul, Mul, Binary) X(div, Div, Binary)       \
  X(power, Power, Binary) X(maximum, Maximum, Binary) X(minimum, Minimum, Binary)       \
  X(scalar_add, Add, Scalar) X(scalar_sub, Sub, Scalar) X(scalar_mul, Mul, Scalar)      \
  X(scalar_div, Div, Scalar) X(scalar_power, Power, Scalar)                             \
  X(scalar_maximum, Maximum, Scalar) X(scalar_minimum, Minimum, Scalar)                 \
  X(scalar_rsub, Rsub, Scalar) X(scalar_rdiv, Rdiv, Scalar)                             \
  X(scalar_rpower, Rpower, Scalar)                                                      \
  X(neg, Neg, Unary) X(abs, Abs, Unary) X(exp, Exp, Unary) X(log, Log, Unary)           \
  X(sqrt, Sqrt, Unary) X(tanh, Tanh, Unary) X(sin, Sin, Unary) X(cos, Cos, Unary)       \
  X(erf, Erf, Unary) X(sign, Sign, Unary)
