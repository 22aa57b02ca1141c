// ewise_ops.h: the elementwise operator table. Each op is a struct with a
// static `f` templated on the element type and `kInt`, whether it is defined
// on int64 buffers (interface v1 calls arithmetic kernels on floats only;
// comparisons and sign-like ops also serve int64 label arrays).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace lamina_cpu::ops {

#define LAMINA_OP(NAME, INT_OK, EXPR)              \
  struct NAME {                                    \
    static constexpr bool kInt = INT_OK;           \
    template <class T>                             \
    static inline T f(T a, [[maybe_unused]] T b) { \
      return EXPR;                                 \
    }                                              \
  };

LAMINA_OP(Add, true, a + b)
LAMINA_OP(Sub, true, a - b)
LAMINA_OP(Mul, true, a * b)
LAMINA_OP(Div, false, a / b)
LAMINA_OP(Power, false, std::pow(a, b))
// numpy's rule: NaN in either operand wins.
LAMINA_OP(Maximum, true, (a >= b || a != a) ? a : b)
LAMINA_OP(Minimum, true, (a <= b || a != a) ? a : b)
LAMINA_OP(Eq, true, a == b ? T(1) : T(0))
LAMINA_OP(Ne, true, a != b ? T(1) : T(0))
LAMINA_OP(Lt, true, a < b ? T(1) : T(0))
LAMINA_OP(Le, true, a <= b ? T(1) : T(0))
LAMINA_OP(Gt, true, a > b ? T(1) : T(0))
LAMINA_OP(Ge, true, a >= b ? T(1) : T(0))
LAMINA_OP(Rsub, true, b - a)
LAMINA_OP(Rdiv, false, b / a)
LAMINA_OP(Rpower, false, std::pow(b, a))

LAMINA_OP(Neg, true, -a)
LAMINA_OP(Abs, true, std::abs(a))
LAMINA_OP(Exp, false, std::exp(a))
LAMINA_OP(Log, false, std::log(a))
LAMINA_OP(Sqrt, false, std::sqrt(a))
LAMINA_OP(Tanh, false, std::tanh(a))
LAMINA_OP(Sin, false, std::sin(a))
LAMINA_OP(Cos, false, std::cos(a))
LAMINA_OP(Erf, false, std::erf(a))
LAMINA_OP(Sign, true, a > T(0) ? T(1) : (a < T(0) ? T(-1) : a))

#undef LAMINA_OP

// Ops whose per-element cost is far above a load/store: they go parallel at
// a smaller size.
template <class Op>
constexpr bool kTranscendental =
    std::is_same_v<Op, Exp> || std::is_same_v<Op, Log> || std::is_same_v<Op, Tanh> ||
    std::is_same_v<Op, Sin> || std::is_same_v<Op, Cos> || std::is_same_v<Op, Erf> || std::is_same_v<Op, Power> ||
    std::is_same_v<Op, Rpower>;

}  // namespace lamina_cpu::ops
