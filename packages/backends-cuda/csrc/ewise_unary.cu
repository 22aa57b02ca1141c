// ewise_unary.cu: unary elementwise kernels over compact operands:
// ewise_OP(a, out) for each unary op of ewise_ops.h (with the dtypes it lists
// there, its functor below), ewise_where(cond, a, b, out), relu_backward(x,
// g, out) (float32, float64) and ewise_cast(a, out) (every dtype).
//
// The math is CUDA's full-precision libm (no fast-math): results differ from
// numpy's by a few ulp at most. int64 neg and abs wrap (abs(INT64_MIN) is
// INT64_MIN, as numpy's). ewise_cast from float to int64 truncates toward zero
// and, like numpy on x86-64, maps NaN and out-of-range values to INT64_MIN; to
// bool it is x != 0 (NaN is true).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ewise.cuh"

namespace lamina_cuda {

namespace {

template <class TOut>
struct CastTo {
  template <class TIn> __device__ TOut operator()(TIn x) const {
    // a 16-bit float converts through float, as PyTorch's (float64 -> float32 -> bfloat16)
    if constexpr (::lamina::is_narrow_v<TIn>) {
      return CastTo<TOut>{}(::lamina::to_float(x));
    } else if constexpr (std::is_same_v<TOut, Half>) {
      return ::lamina::to_half(CastTo<float>{}(x));
    } else if constexpr (std::is_same_v<TOut, BFloat16>) {
      return ::lamina::to_bfloat16(CastTo<float>{}(x));
    } else if constexpr (std::is_same_v<TOut, int64_t> && std::is_floating_point_v<TIn>) {
      // 2^63 is exact in float and double; CUDA's cvt saturates and maps NaN to
      // 0, numpy (x86-64) gives INT64_MIN for both.
      const TIn limit = static_cast<TIn>(9223372036854775808.0);
      return (x >= -limit && x < limit) ? static_cast<int64_t>(x) : INT64_MIN;
    } else {
      return static_cast<TOut>(x);
    }
  }
};

}  // namespace

#define LAMINA_UNARY(NAME, OP, SET, DOC)                                                   \
  template <class T>                                                                       \
  __global__ void ewise_##NAME##_kernel(const T* a, T* out, int64_t n) {                   \
    unary_loop<T, T, OpFor<OP, T>>(a, out, n);                                             \
  }                                                                                        \
  void ewise_##NAME(const Array& a, Array& out) {                                          \
    require_same_dtype("ewise_" #NAME, {&a, &out});                                        \
    require_dtype("ewise_" #NAME, a.dtype(), kernel_dtypes::ewise_##NAME);                 \
    const int64_t n = ewise_size("ewise_" #NAME, out, {&a});                               \
    const Launch ctx = launch_on("ewise_" #NAME, {&a, &out});                              \
    if (n == 0) return;                                                                    \
    dispatch<kernel_dtypes::ewise_##NAME>("ewise_" #NAME, out.dtype(), [&](auto t) {       \
      using T = decltype(t);                                                               \
      launch_kernel(&ewise_##NAME##_kernel<T>, ewise_grid(n, pack_width<T>(), ctx.device), \
                    kThreads, 0, ctx.stream, a.data<T>(), out.data<T>(), n);               \
      check_launch("ewise_" #NAME "_kernel", ctx.stream);                                  \
    });                                                                                    \
  }

LAMINA_UNARY_OPS(LAMINA_UNARY)

// out[i] = cond[i] != 0 ? a[i] : b[i]; cond is T, int64 or bool. No __restrict__: out may alias.
template <class C, class T>
__global__ void ewise_where_kernel(const C* cond, const T* a, const T* b, T* out, int64_t n) {
  constexpr int N = pack_width<C, T>();
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    const Pack<C, N> c = load_pack<N>(cond, p);
    const Pack<T, N> x = load_pack<N>(a, p), y = load_pack<N>(b, p);
    Pack<T, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = c.v[k] != C(0) ? x.v[k] : y.v[k];
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  for (int64_t i = packs * N + start; i < n; i += step) out[i] = cond[i] != C(0) ? a[i] : b[i];
}

void ewise_where(const Array& cond, const Array& a, const Array& b, Array& out) {
  require_same_dtype("ewise_where", {&a, &b, &out});
  const DType c = cond.dtype();
  if (c != a.dtype() && c != DType::Int64 && c != DType::Bool)
    throw TypeError(cat("ewise_where: cond is ", cond.dtype_str(), "; it must be ",
                        a.dtype_str(), " (the dtype of a), int64 or bool"));
  const int64_t n = ewise_size("ewise_where", out, {&cond, &a, &b});
  const Launch ctx = launch_on("ewise_where", {&cond, &a, &b, &out});
  if (n == 0) return;
  dispatch<kernel_dtypes::ewise_where>("ewise_where", out.dtype(), [&](auto t) {
    using T = decltype(t);
    auto launch = [&](auto c) {
      using C = decltype(c);
      launch_kernel(&ewise_where_kernel<C, T>, ewise_grid(n, pack_width<C, T>(), ctx.device),
                    kThreads, 0, ctx.stream, cond.data<C>(), a.data<T>(), b.data<T>(),
                    out.data<T>(), n);
      check_launch("ewise_where_kernel", ctx.stream);
    };
    if (c == DType::Int64) launch(int64_t{});
    else if (c == DType::Bool) launch(bool{});
    else launch(T{});
  });
}

// ReLU's backward: g where x > 0 or is NaN, +0 where x <= 0 (PyTorch's threshold
// rule, the cpu backend's bits). No __restrict__: out may alias.
template <class T>
__global__ void relu_backward_kernel(const T* x, const T* g, T* out, int64_t n) {
  constexpr int N = pack_width<T>();
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    const Pack<T, N> a = load_pack<N>(x, p), d = load_pack<N>(g, p);
    Pack<T, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = a.v[k] <= T(0) ? T(0) : d.v[k];
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  for (int64_t i = packs * N + start; i < n; i += step) out[i] = x[i] <= T(0) ? T(0) : g[i];
}

void relu_backward(const Array& x, const Array& g, Array& out) {
  require_same_dtype("relu_backward", {&x, &g, &out});
  const int64_t n = ewise_size("relu_backward", out, {&x, &g});
  const Launch ctx = launch_on("relu_backward", {&x, &g, &out});
  if (n == 0) return;
  dispatch<kernel_dtypes::relu_backward>("relu_backward", out.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_kernel(&relu_backward_kernel<T>, ewise_grid(n, pack_width<T>(), ctx.device), kThreads,
                  0, ctx.stream, x.data<T>(), g.data<T>(), out.data<T>(), n);
    check_launch("relu_backward_kernel", ctx.stream);
  });
}

template <class TIn, class TOut>
__global__ void ewise_cast_kernel(const TIn* a, TOut* out, int64_t n) {
  unary_loop<TIn, TOut, CastTo<TOut>>(a, out, n);
}

void ewise_cast(const Array& a, Array& out) {
  const int64_t n = ewise_size("ewise_cast", out, {&a});
  const Launch ctx = launch_on("ewise_cast", {&a, &out});
  if (n == 0) return;
  if (a.dtype() == out.dtype()) {
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(out.raw(), a.raw(), out.nbytes(), cudaMemcpyDeviceToDevice,
                                      ctx.stream),
                      "ewise_cast");
    return;
  }
  dispatch<kernel_dtypes::ewise_cast>("ewise_cast", a.dtype(), [&](auto ti) {
    dispatch<kernel_dtypes::ewise_cast>("ewise_cast", out.dtype(), [&](auto to) {
      using TIn = decltype(ti);
      using TOut = decltype(to);
      if constexpr (!std::is_same_v<TIn, TOut>) {
        launch_kernel(&ewise_cast_kernel<TIn, TOut>,
                      ewise_grid(n, pack_width<TIn, TOut>(), ctx.device), kThreads, 0, ctx.stream,
                      a.data<TIn>(), out.data<TOut>(), n);
        check_launch("ewise_cast_kernel", ctx.stream);
      }
    });
  });
}

}  // namespace lamina_cuda
