// ewise_binary.cu: binary elementwise kernels over compact operands:
// ewise_OP(a, b, out), scalar_OP(a, value, out) for OP in add, sub, mul, div,
// power, maximum, minimum, eq, ne, lt, le, gt, ge, and the reversed scalar_rsub,
// scalar_rdiv, scalar_rpower (value OP a).
//
// Arithmetic takes float32/float64; the comparisons also take int64 and write
// 1 or 0 in their operands' dtype. maximum/minimum propagate NaN like numpy.
// Each op gets its own __global__ (ewise_add_kernel, scalar_add_kernel, ...)
// so the name in an error or a profile is the op's; all share binary_loop.
#include <cmath>

#include "ewise.cuh"

namespace lamina_cuda {

// Defines ewise_NAME_kernel, scalar_NAME_kernel and their launchers.
#define LAMINA_BINARY(NAME, OP, CMP)                                                        \
  template <class T>                                                                        \
  __global__ void ewise_##NAME##_kernel(const T* a, const T* b, T* out, int64_t n) {        \
    binary_loop<T, OP, kEwise>(a, b, T(0), out, n);                                         \
  }                                                                                         \
  template <class T>                                                                        \
  __global__ void scalar_##NAME##_kernel(const T* a, T value, T* out, int64_t n) {          \
    binary_loop<T, OP, kScalar>(a, nullptr, value, out, n);                                 \
  }                                                                                         \
  void ewise_##NAME(const Array& a, const Array& b, Array& out) {                           \
    require_same_dtype("ewise_" #NAME, {&a, &b, &out});                                     \
    const int64_t n = ewise_size("ewise_" #NAME, out, {&a, &b});                            \
    const Launch ctx = launch_on("ewise_" #NAME, {&a, &b, &out});                           \
    if (n == 0) return;                                                                     \
    dispatch_kind<CMP>("ewise_" #NAME, out.dtype(), [&](auto t) {                           \
      using T = decltype(t);                                                                \
      launch_kernel(&ewise_##NAME##_kernel<T>, ewise_grid(n, pack_width<T>(), ctx.device),  \
                    kThreads, 0, ctx.stream, a.data<T>(), b.data<T>(), out.data<T>(), n);   \
      check_launch("ewise_" #NAME "_kernel", ctx.stream);                                   \
    });                                                                                     \
  }                                                                                         \
  void scalar_##NAME(const Array& a, const Scalar& value, Array& out) {                     \
    require_same_dtype("scalar_" #NAME, {&a, &out});                                        \
    const int64_t n = ewise_size("scalar_" #NAME, out, {&a});                               \
    const Launch ctx = launch_on("scalar_" #NAME, {&a, &out});                              \
    if (n == 0) return;                                                                     \
    dispatch_kind<CMP>("scalar_" #NAME, out.dtype(), [&](auto t) {                          \
      using T = decltype(t);                                                                \
      launch_kernel(&scalar_##NAME##_kernel<T>, ewise_grid(n, pack_width<T>(), ctx.device), \
                    kThreads, 0, ctx.stream, a.data<T>(), value.as<T>(), out.data<T>(), n); \
      check_launch("scalar_" #NAME "_kernel", ctx.stream);                                  \
    });                                                                                     \
  }

// Defines scalar_rNAME_kernel (value OP a) and its launcher.
#define LAMINA_REVERSED(NAME, OP)                                                           \
  template <class T>                                                                        \
  __global__ void scalar_##NAME##_kernel(const T* a, T value, T* out, int64_t n) {          \
    binary_loop<T, OP, kReversed>(a, nullptr, value, out, n);                               \
  }                                                                                         \
  void scalar_##NAME(const Array& a, const Scalar& value, Array& out) {                     \
    require_same_dtype("scalar_" #NAME, {&a, &out});                                        \
    const int64_t n = ewise_size("scalar_" #NAME, out, {&a});                               \
    const Launch ctx = launch_on("scalar_" #NAME, {&a, &out});                              \
    if (n == 0) return;                                                                     \
    dispatch_float("scalar_" #NAME, out.dtype(), [&](auto t) {                              \
      using T = decltype(t);                                                                \
      launch_kernel(&scalar_##NAME##_kernel<T>, ewise_grid(n, pack_width<T>(), ctx.device), \
                    kThreads, 0, ctx.stream, a.data<T>(), value.as<T>(), out.data<T>(), n); \
      check_launch("scalar_" #NAME "_kernel", ctx.stream);                                  \
    });                                                                                     \
  }

LAMINA_BINARY(add, Add, false)
LAMINA_BINARY(sub, Sub, false)
LAMINA_BINARY(mul, Mul, false)
LAMINA_BINARY(div, Div, false)
LAMINA_BINARY(power, Power, false)
LAMINA_BINARY(maximum, Maximum, false)
LAMINA_BINARY(minimum, Minimum, false)
LAMINA_BINARY(eq, Eq, true)
LAMINA_BINARY(ne, Ne, true)
LAMINA_BINARY(lt, Lt, true)
LAMINA_BINARY(le, Le, true)
LAMINA_BINARY(gt, Gt, true)
LAMINA_BINARY(ge, Ge, true)

LAMINA_REVERSED(rsub, Sub)
LAMINA_REVERSED(rdiv, Div)
LAMINA_REVERSED(rpower, Power)

}  // namespace lamina_cuda
