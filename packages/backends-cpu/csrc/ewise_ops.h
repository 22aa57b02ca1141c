// ewise_ops.h: the elementwise operator table. Each op is a struct with a
// static `f` templated on the element type, `kDtypes`, the dtypes its
// kernels take (the interface's kernel_dtypes is built from these), and
// `kSimd`, the dtypes the AVX2 copy of the loops holds (the others run the
// baseline loops, which the compiler vectorises where the op allows). Comparisons return bool, so
// their kernels can write a bool out or 1/0 in the operands' dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common.h"

namespace lamina_cpu::ops {

// Why a kernel must look at its integer operands before writing: a zero
// divisor, a negative exponent (numpy's int64 power refuses both) or none.
enum class IntDomain { Any, NonzeroDivisor, NonnegativeExponent };

#define LAMINA_OP(NAME, DTYPES, SIMD, EXPR)        \
  struct NAME {                                    \
    static constexpr DTypeMask kDtypes = DTYPES;   \
    static constexpr DTypeMask kSimd = SIMD;       \
    static constexpr bool kCompare = false;        \
    template <class T>                             \
    static inline T f(T a, [[maybe_unused]] T b) { \
      return EXPR;                                 \
    }                                              \
  };
#define LAMINA_CMP(NAME, EXPR)                                \
  struct NAME {                                               \
    static constexpr DTypeMask kDtypes = kAllDtypes;          \
    static constexpr DTypeMask kSimd = kNumbers;              \
    static constexpr bool kCompare = true;                    \
    template <class T>                                        \
    static inline bool f(T a, T b) {                          \
      return EXPR;                                            \
    }                                                         \
  };

// Integer helpers: two's complement wrap-around (numpy's and PyTorch's)
// instead of signed overflow; Python's rounding for // and %.
template <class T>
inline T wrap_sub(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<int64_t>(uint64_t(a) - uint64_t(b));
  else return static_cast<T>(a - b);
}
template <class T>
inline T wrap_neg(T a) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<int64_t>(0 - uint64_t(a));
  else return -a;
}
template <class T>
inline T abs_of(T a) {
  if constexpr (std::is_same_v<T, int64_t>) return a < 0 ? wrap_neg(a) : a;  // |INT64_MIN| wraps
  else return std::abs(a);
}

// numpy's npy_divmod for floats (PyTorch's floor division agrees): the
// quotient rounded toward negative infinity and the remainder with the
// divisor's sign; x / 0 gives inf or nan.
template <class T>
inline T float_floordiv(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}
template <class T>
inline T float_remainder(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == T(0)) return mod;
  if (mod != T(0)) {
    if ((b < T(0)) != (mod < T(0))) mod += b;
  } else {
    mod = std::copysign(T(0), b);
  }
  return mod;
}

// Integer // and % as Python's; the kernels reject a zero divisor before
// the loop (the guards here only keep the hardware from trapping), and
// INT64_MIN // -1 wraps as numpy's.
inline int64_t int_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t int_remainder(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T>
inline T floordiv(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return int_floordiv(a, b);
  else return float_floordiv(a, b);
}
template <class T>
inline T remainder(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return int_remainder(a, b);
  else return float_remainder(a, b);
}

// a ** b: std::pow for floats; square-and-multiply, wrapping, for int64
// (b >= 0, checked by the kernel; 0 ** 0 is 1).
template <class T>
inline T power(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) {
    uint64_t base = uint64_t(a), result = 1;
    for (uint64_t e = b < 0 ? 0 : uint64_t(b); e; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return static_cast<int64_t>(result);
  } else {
    return std::pow(a, b);
  }
}

template <class T>
inline T bitwise_not(T a) {
  if constexpr (std::is_same_v<T, bool>) return !a;
  else return ~a;
}

LAMINA_OP(Add, kAllDtypes, kNumbers, wrap_add(a, b))  // bool: or
LAMINA_OP(Sub, kNumbers, kNumbers, wrap_sub(a, b))
LAMINA_OP(Mul, kAllDtypes, kNumbers, wrap_mul(a, b))  // bool: and
LAMINA_OP(Div, kFloats, kFloats, a / b)
LAMINA_OP(Power, kNumbers, kFloats, power(a, b))
// numpy's rule: NaN in either operand wins.
LAMINA_OP(Maximum, kAllDtypes, kNumbers, (a >= b || a != a) ? a : b)
LAMINA_OP(Minimum, kAllDtypes, kNumbers, (a <= b || a != a) ? a : b)
LAMINA_CMP(Eq, a == b)
LAMINA_CMP(Ne, a != b)
LAMINA_CMP(Lt, a < b)
LAMINA_CMP(Le, a <= b)
LAMINA_CMP(Gt, a > b)
LAMINA_CMP(Ge, a >= b)
LAMINA_OP(Rsub, kNumbers, kNumbers, wrap_sub(b, a))
LAMINA_OP(Rdiv, kFloats, kFloats, b / a)
LAMINA_OP(Rpower, kNumbers, kFloats, power(b, a))
LAMINA_OP(FloorDiv, kNumbers, 0, floordiv(a, b))
LAMINA_OP(Remainder, kNumbers, 0, remainder(a, b))
LAMINA_OP(BitwiseAnd, kIntegral, 0, a & b)
LAMINA_OP(BitwiseOr, kIntegral, 0, a | b)
LAMINA_OP(BitwiseXor, kIntegral, 0, a ^ b)

LAMINA_OP(Neg, kNumbers, kNumbers, wrap_neg(a))
LAMINA_OP(Abs, kNumbers, kNumbers, abs_of(a))
LAMINA_OP(Exp, kFloats, kFloats, std::exp(a))
LAMINA_OP(Log, kFloats, kFloats, std::log(a))
LAMINA_OP(Sqrt, kFloats, kFloats, std::sqrt(a))
LAMINA_OP(Tanh, kFloats, kFloats, std::tanh(a))
LAMINA_OP(Sin, kFloats, kFloats, std::sin(a))
LAMINA_OP(Cos, kFloats, kFloats, std::cos(a))
LAMINA_OP(Erf, kFloats, kFloats, std::erf(a))
LAMINA_OP(Sign, kNumbers, kNumbers, a > T(0) ? T(1) : (a < T(0) ? T(-1) : a))
LAMINA_OP(BitwiseNot, kIntegral, 0, bitwise_not(a))

#undef LAMINA_OP
#undef LAMINA_CMP

// The dtypes an op's kernels take: its kDtypes and, where those hold float32,
// the 16-bit floats, which run its float32 loops on widened blocks (ewise.cc).
template <class Op>
constexpr DTypeMask kKernelDtypes =
    Op::kDtypes | ((Op::kDtypes & dtype_bit(DType::Float32)) != 0 ? kNarrow : 0u);

// An op's result as an element of out: a comparison's bool becomes 1 or 0
// through a select (a cast of the bool kept GCC from vectorising the
// float32 loop: 10x slower).
template <class O, class R>
inline O to_out(R r) {
  if constexpr (std::is_same_v<R, bool> && !std::is_same_v<O, bool>) return r ? O(1) : O(0);
  else return static_cast<O>(r);
}

// X(Op, name) for every kernel of each family: ewise_NAME(a, b, out) and
// ewise_strided_NAME(...), scalar_NAME(a, value, out) and ewise_NAME(a, out).
// kernels.h declares, ewise.cc defines and bindings.cc exports (with its
// kDtypes) from these; isa_table.h sizes the per-ISA loop tables by them.
#define LAMINA_ARITH_CMP_LIST(X)                                                           \
  X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(Power, power) X(Maximum, maximum)     \
  X(Minimum, minimum) X(Eq, eq) X(Ne, ne) X(Lt, lt) X(Le, le) X(Gt, gt) X(Ge, ge)
#define LAMINA_EWISE_BINARY_LIST(X)                                                   \
  LAMINA_ARITH_CMP_LIST(X) X(FloorDiv, floordiv) X(Remainder, remainder)              \
  X(BitwiseAnd, bitwise_and) X(BitwiseOr, bitwise_or) X(BitwiseXor, bitwise_xor)
#define LAMINA_REVERSED_LIST(X) X(Rsub, rsub) X(Rdiv, rdiv) X(Rpower, rpower)
#define LAMINA_SCALAR_BINARY_LIST(X) LAMINA_ARITH_CMP_LIST(X) LAMINA_REVERSED_LIST(X)
#define LAMINA_EWISE_UNARY_LIST(X)                                                         \
  X(Neg, neg) X(Abs, abs) X(Exp, exp) X(Log, log) X(Sqrt, sqrt) X(Tanh, tanh) X(Sin, sin) \
  X(Cos, cos) X(Erf, erf) X(Sign, sign) X(BitwiseNot, bitwise_not)
// Every op with binary loops (a OP b and a OP value).
#define LAMINA_BINARY_LOOP_LIST(X) LAMINA_EWISE_BINARY_LIST(X) LAMINA_REVERSED_LIST(X)

// Each op's slot in the per-ISA loop tables (isa_table.h): kOpId<Op>.
#define LAMINA_ENUMERATOR(OP, NAME) OP,
enum class BinaryOpId : int { LAMINA_BINARY_LOOP_LIST(LAMINA_ENUMERATOR) kCount };
enum class UnaryOpId : int { LAMINA_EWISE_UNARY_LIST(LAMINA_ENUMERATOR) kCount };
#undef LAMINA_ENUMERATOR
template <class Op> constexpr int kOpId = -1;
#define LAMINA_BINARY_ID(OP, NAME) template <> constexpr int kOpId<OP> = int(BinaryOpId::OP);
#define LAMINA_UNARY_ID(OP, NAME) template <> constexpr int kOpId<OP> = int(UnaryOpId::OP);
LAMINA_BINARY_LOOP_LIST(LAMINA_BINARY_ID)
LAMINA_EWISE_UNARY_LIST(LAMINA_UNARY_ID)
#undef LAMINA_BINARY_ID
#undef LAMINA_UNARY_ID
constexpr int kBinaryOps = int(BinaryOpId::kCount), kUnaryOps = int(UnaryOpId::kCount);

// The int64 operand an op must check before its loop: b, the divisor or
// exponent (for the reversed power, b is the array a: value ** a).
template <class Op> constexpr IntDomain kIntDomain = IntDomain::Any;
template <> constexpr IntDomain kIntDomain<FloorDiv> = IntDomain::NonzeroDivisor;
template <> constexpr IntDomain kIntDomain<Remainder> = IntDomain::NonzeroDivisor;
template <> constexpr IntDomain kIntDomain<Power> = IntDomain::NonnegativeExponent;
template <> constexpr IntDomain kIntDomain<Rpower> = IntDomain::NonnegativeExponent;

// Ops whose per-element cost is far above a load/store: they go parallel at
// a smaller size.
template <class Op>
constexpr bool kTranscendental =
    std::is_same_v<Op, Exp> || std::is_same_v<Op, Log> || std::is_same_v<Op, Tanh> ||
    std::is_same_v<Op, Sin> || std::is_same_v<Op, Cos> || std::is_same_v<Op, Erf> || std::is_same_v<Op, Power> ||
    std::is_same_v<Op, Rpower> || std::is_same_v<Op, FloorDiv> || std::is_same_v<Op, Remainder>;

}  // namespace lamina_cpu::ops
