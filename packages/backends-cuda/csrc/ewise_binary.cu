// ewise_binary.cu: the binary elementwise kernels over compact operands, for
// each binary op of ewise_ops.h: ewise_OP(a, b, out) and, where its line there
// asks for them, scalar_OP(a, value, out) and the reversed scalar_rOP(a, value,
// out) (value OP a).
//
// The dtypes of each kernel are its op's in ewise_ops.h. Comparisons write
// a bool mask, or (as interface v1.0 did) 1 or 0 in their operands' dtype.
// maximum/minimum propagate NaN like numpy; int64 arithmetic wraps; an integer
// power with a negative exponent raises ValueError (as numpy), found by a check
// kernel before the op runs (one synchronisation, for int64 powers only).
// Each op gets its own __global__ (ewise_add_kernel, scalar_add_kernel, ...)
// so the name in an error or a profile is the op's; all share binary_loop.
#include <cmath>
#include <type_traits>

#include "ewise.cuh"

namespace lamina_cuda {

void require_binary_out(const char* op, bool comparison, const Array& a, const Array& out) {
  if (out.dtype() != a.dtype() && !(comparison && out.dtype() == DType::Bool))
    throw TypeError(cat(op, ": out is ", out.dtype_str(), "; it must be ", a.dtype_str(),
                        comparison ? " (the operands' dtype) or bool" : " (the operands' dtype)"));
}

namespace {

// ValueError unless the n int64 exponents at x are >= 0 (waits for a check kernel).
void require_natural_exponents(const char* op, const Array& x, int64_t n, const Launch& ctx) {
  int64_t value = 0;
  const int64_t bad = find_outside(op, x.data<int64_t>(), n, 0, INT64_MAX, ctx, &value);
  if (bad >= 0)
    value_error(op, ": integers to negative integer powers are not allowed (exponent ", value,
                " at entry ", bad, "); convert to a float dtype first");
}

}  // namespace

// Defines ewise_NAME_kernel and its launcher.
#define LAMINA_EWISE_BINARY(NAME, OP)                                                         \
  template <class T, class TOut>                                                              \
  __global__ void ewise_##NAME##_kernel(const T* a, const T* b, TOut* out, int64_t n) {       \
    binary_loop<T, TOut, OpFor<OP, T>, kEwise>(a, b, ValueOf<T>{}, out, n);                   \
  }                                                                                           \
  void ewise_##NAME(const Array& a, const Array& b, Array& out) {                             \
    constexpr const char* name = "ewise_" #NAME;                                              \
    require_same_dtype(name, {&a, &b});                                                       \
    require_binary_out(name, kComparison<OP>, a, out);                                        \
    require_dtype(name, a.dtype(), kernel_dtypes::ewise_##NAME);                              \
    const int64_t n = ewise_size(name, out, {&a, &b});                                        \
    const Launch ctx = launch_on(name, {&a, &b, &out});                                       \
    if (n == 0) return;                                                                       \
    if (std::is_same_v<OP, Power> && a.dtype() == DType::Int64)                               \
      require_natural_exponents(name, b, n, ctx);                                             \
    dispatch_binary<kernel_dtypes::ewise_##NAME, kComparison<OP>>(                            \
        name, a.dtype(), out.dtype(), [&](auto t, auto to) {                                  \
          using T = decltype(t);                                                              \
          using TOut = decltype(to);                                                          \
          launch_kernel(&ewise_##NAME##_kernel<T, TOut>,                                      \
                        ewise_grid(n, pack_width<T, T, TOut>(), ctx.device), kThreads, 0,     \
                        ctx.stream, a.data<T>(), b.data<T>(), out.data<TOut>(), n);           \
          check_launch("ewise_" #NAME "_kernel", ctx.stream);                                 \
        });                                                                                   \
  }

// Defines scalar_NAME_kernel and its launcher; MODE kScalar (a OP value) or
// kReversed (value OP a, the scalar_rNAME kernels).
#define LAMINA_SCALAR_BINARY(NAME, OP, MODE)                                                  \
  template <class T, class TOut>                                                              \
  __global__ void scalar_##NAME##_kernel(const T* a, ValueOf<T> value, TOut* out, int64_t n) {\
    binary_loop<T, TOut, OpFor<OP, T>, MODE>(a, nullptr, value, out, n);                      \
  }                                                                                           \
  void scalar_##NAME(const Array& a, const Scalar& value, Array& out) {                       \
    constexpr const char* name = "scalar_" #NAME;                                             \
    require_binary_out(name, kComparison<OP>, a, out);                                        \
    require_dtype(name, a.dtype(), kernel_dtypes::scalar_##NAME);                             \
    const int64_t n = ewise_size(name, out, {&a});                                            \
    const Launch ctx = launch_on(name, {&a, &out});                                           \
    if (n == 0) return;                                                                       \
    if (std::is_same_v<OP, Power> && a.dtype() == DType::Int64) {                             \
      if (MODE == kReversed) require_natural_exponents(name, a, n, ctx);                      \
      else if (value.as<int64_t>() < 0)                                                       \
        value_error(name, ": integers to negative integer powers are not allowed ",           \
                    "(exponent ", value.as<int64_t>(), "); convert to a float dtype first");  \
    }                                                                                         \
    dispatch_binary<kernel_dtypes::scalar_##NAME, kComparison<OP>>(                           \
        name, a.dtype(), out.dtype(), [&](auto t, auto to) {                                  \
          using T = decltype(t);                                                              \
          using TOut = decltype(to);                                                          \
          launch_kernel(&scalar_##NAME##_kernel<T, TOut>,                                     \
                        ewise_grid(n, pack_width<T, T, TOut>(), ctx.device), kThreads, 0,     \
                        ctx.stream, a.data<T>(), value.as<ValueOf<T>>(), out.data<TOut>(), n); \
          check_launch("scalar_" #NAME "_kernel", ctx.stream);                                \
        });                                                                                   \
  }

// Every kernel of one binary op of ewise_ops.h.
#define LAMINA_BINARY_OP(NAME, OP, SET, FORMS, DOC)                                           \
  LAMINA_EWISE_BINARY(NAME, OP)                                                               \
  LAMINA_IF_SCALAR(FORMS, LAMINA_SCALAR_BINARY(NAME, OP, kScalar))                            \
  LAMINA_IF_REVERSED(FORMS, LAMINA_SCALAR_BINARY(r##NAME, OP, kReversed))

LAMINA_BINARY_OPS(LAMINA_BINARY_OP)

}  // namespace lamina_cuda
