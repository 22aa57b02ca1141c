// ewise.cuh: the grid-stride, vectorised loops shared by the elementwise
// kernels of ewise_binary.cu, ewise_unary.cu and ewise_strided.cu, and the
// binary op functors of ewise_binary.cu and ewise_strided.cu.
//
// Buffers come from the caching allocator 256-byte aligned and compact
// operands start at element 0, so every operand is read and written in packs
// of up to 16 bytes (4 floats, 2 doubles or int64s); the last n % N elements
// are done one by one. The pointers are not __restrict__: out may be the same
// buffer as an input (in-place updates), which is safe because each element
// is read and then written by the same thread.
#pragma once

#include <cmath>

#include "common.cuh"

namespace lamina_cuda {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class A, class B = A, class C = A>
__host__ __device__ constexpr int pack_width() {
  constexpr std::size_t w = sizeof(A) > sizeof(B) ? (sizeof(A) > sizeof(C) ? sizeof(A) : sizeof(C))
                                                  : (sizeof(B) > sizeof(C) ? sizeof(B) : sizeof(C));
  return static_cast<int>(16 / w);
}

template <int N, class T>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p, int64_t pack) {
  return reinterpret_cast<const Pack<T, N>*>(p)[pack];
}

// Mode of a binary kernel: both operands buffers, or one a scalar value.
enum BinaryMode : int { kEwise = 0, kScalar = 1, kReversed = 2 };

// out[i] = op(a[i], b[i]) / op(a[i], v) / op(v, a[i]) for i < n.
template <class T, class Op, int Mode>
__device__ __forceinline__ void binary_loop(const T* a, const T* b, T v, T* out, int64_t n) {
  constexpr int N = pack_width<T>();
  const Op op{};
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    const Pack<T, N> x = load_pack<N>(a, p);
    Pack<T, N> y;
    if constexpr (Mode == kEwise) y = load_pack<N>(b, p);
    Pack<T, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if constexpr (Mode == kEwise) r.v[k] = op(x.v[k], y.v[k]);
      else if constexpr (Mode == kScalar) r.v[k] = op(x.v[k], v);
      else r.v[k] = op(v, x.v[k]);
    }
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  for (int64_t i = packs * N + start; i < n; i += step) {
    if constexpr (Mode == kEwise) out[i] = op(a[i], b[i]);
    else if constexpr (Mode == kScalar) out[i] = op(a[i], v);
    else out[i] = op(v, a[i]);
  }
}

// out[i] = op(a[i]) for i < n; TIn and TOut may differ (ewise_cast).
template <class TIn, class TOut, class Op>
__device__ __forceinline__ void unary_loop(const TIn* a, TOut* out, int64_t n) {
  constexpr int N = pack_width<TIn, TOut>();
  const Op op{};
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    const Pack<TIn, N> x = load_pack<N>(a, p);
    Pack<TOut, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = op(x.v[k]);
    reinterpret_cast<Pack<TOut, N>*>(out)[p] = r;
  }
  for (int64_t i = packs * N + start; i < n; i += step) out[i] = op(a[i]);
}

// Blocks for n elements processed in packs of N.
inline unsigned ewise_grid(int64_t n, int pack, int device) {
  return grid_for((n + pack - 1) / pack, device);
}

// out.size elements; every input must hold at least that many (ValueError).
inline int64_t ewise_size(const char* op, const Array& out,
                          std::initializer_list<const Array*> inputs) {
  int i = 0;
  for (const Array* x : inputs) {
    if (x->size() < out.size())
      value_error(op, ": operand ", i, " has ", x->size(), " elements, out has ", out.size());
    ++i;
  }
  return out.size();
}

// The binary ops of ewise_binary.cu and ewise_strided.cu: one functor each, so
// both kernel families compute exactly the same values.
struct Add {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Sub {
  template <class T> __device__ T operator()(T a, T b) const { return a - b; }
};
struct Mul {
  template <class T> __device__ T operator()(T a, T b) const { return a * b; }
};
struct Div {
  template <class T> __device__ T operator()(T a, T b) const { return a / b; }
};
struct Power {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
  __device__ double operator()(double a, double b) const { return pow(a, b); }
};
struct Maximum {  // the first NaN wins, as in numpy.maximum
  template <class T> __device__ T operator()(T a, T b) const {
    return (a != a || a > b) ? a : b;
  }
};
struct Minimum {
  template <class T> __device__ T operator()(T a, T b) const {
    return (a != a || a < b) ? a : b;
  }
};
struct Eq {
  template <class T> __device__ T operator()(T a, T b) const { return a == b ? T(1) : T(0); }
};
struct Ne {
  template <class T> __device__ T operator()(T a, T b) const { return a != b ? T(1) : T(0); }
};
struct Lt {
  template <class T> __device__ T operator()(T a, T b) const { return a < b ? T(1) : T(0); }
};
struct Le {
  template <class T> __device__ T operator()(T a, T b) const { return a <= b ? T(1) : T(0); }
};
struct Gt {
  template <class T> __device__ T operator()(T a, T b) const { return a > b ? T(1) : T(0); }
};
struct Ge {
  template <class T> __device__ T operator()(T a, T b) const { return a >= b ? T(1) : T(0); }
};

// Comparisons run on every dtype, arithmetic on the float ones only.
template <bool Comparison, class Fn>
void dispatch_kind(const char* op, DType dt, Fn&& fn) {
  if constexpr (Comparison) dispatch_all(dt, fn);
  else dispatch_float(op, dt, fn);
}

}  // namespace lamina_cuda
