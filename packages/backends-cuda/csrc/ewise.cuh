// ewise.cuh: the grid-stride, vectorised loops shared by the elementwise
// kernels of ewise_binary.cu, ewise_unary.cu and ewise_strided.cu, and the
// functors of the ops that ewise_ops.h lists (program.cu calls them too).
//
// Buffers come from the caching allocator 256-byte aligned and compact
// operands start at element 0, so every operand is read and written in packs
// of up to 16 bytes (4 floats, 2 doubles or int64s); the last n % N elements
// are done one by one. The pointers are not __restrict__: out may be the same
// buffer as an input (in-place updates), which is safe because each element
// is read and then written by the same thread.
#pragma once

#include <cmath>
#include <type_traits>

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

// ---------------------------------------------------------------- 16-bit floats
// An op on float16/bfloat16 (interface v2.2) computes in float32: Widened<Op, N>
// widens the operands, runs Op's float overload and rounds the result once to
// nearest even (narrow_result, common.cuh; a comparison's bool stays bool),
// which is the float32 fallback's value bit for bit. A scalar value stays
// float32 (ValueOf, common.cuh).
template <class Op, class N>
struct Widened {
  __device__ auto operator()(N a, N b) const {
    return narrow_result<N>(Op{}(::lamina::to_float(a), ::lamina::to_float(b)));
  }
  __device__ auto operator()(N a, float v) const {
    return narrow_result<N>(Op{}(::lamina::to_float(a), v));
  }
  __device__ auto operator()(float v, N a) const {
    return narrow_result<N>(Op{}(v, ::lamina::to_float(a)));
  }
  __device__ N operator()(N a) const { return narrow_result<N>(Op{}(::lamina::to_float(a))); }
};

// The functor a kernel on T runs for Op.
template <class Op, class T>
using OpFor = std::conditional_t<::lamina::is_narrow_v<T>, Widened<Op, T>, Op>;

// An op's result as an element of out: a comparison's bool becomes 1 or 0.
template <class TOut, class R>
__device__ __forceinline__ TOut out_as(R r) {
  if constexpr (::lamina::is_narrow_v<TOut> && std::is_same_v<R, bool>)
    return narrow_result<TOut>(r ? 1.0f : 0.0f);
  else if constexpr (::lamina::is_narrow_v<TOut>) return r;
  else return static_cast<TOut>(r);
}

// Mode of a binary kernel: both operands buffers, or one a scalar value.
enum BinaryMode : int { kEwise = 0, kScalar = 1, kReversed = 2 };

// out[i] = op(a[i], b[i]) / op(a[i], v) / op(v, a[i]) for i < n. TOut is T, or
// bool for a comparison writing a mask (op returns bool; it converts to 1/0 in T).
template <class T, class TOut, class Op, int Mode>
__device__ __forceinline__ void binary_loop(const T* a, const T* b, ValueOf<T> v, TOut* out,
                                            int64_t n) {
  constexpr int N = pack_width<T, T, TOut>();
  const Op op{};
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    const Pack<T, N> x = load_pack<N>(a, p);
    Pack<T, N> y;
    if constexpr (Mode == kEwise) y = load_pack<N>(b, p);
    Pack<TOut, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if constexpr (Mode == kEwise) r.v[k] = out_as<TOut>(op(x.v[k], y.v[k]));
      else if constexpr (Mode == kScalar) r.v[k] = out_as<TOut>(op(x.v[k], v));
      else r.v[k] = out_as<TOut>(op(v, x.v[k]));
    }
    reinterpret_cast<Pack<TOut, N>*>(out)[p] = r;
  }
  for (int64_t i = packs * N + start; i < n; i += step) {
    if constexpr (Mode == kEwise) out[i] = out_as<TOut>(op(a[i], b[i]));
    else if constexpr (Mode == kScalar) out[i] = out_as<TOut>(op(a[i], v));
    else out[i] = out_as<TOut>(op(v, a[i]));
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

// The binary ops of ewise_ops.h: one functor each, which ewise_binary.cu and
// ewise_strided.cu both instantiate, so both kernel families compute exactly
// the same values; each only for the dtypes its line of ewise_ops.h lists.
struct Add {
  template <class T> __device__ T operator()(T a, T b) const { return add_wrap(a, b); }
};
struct Sub {
  template <class T> __device__ T operator()(T a, T b) const { return sub_wrap(a, b); }
};
struct Mul {
  template <class T> __device__ T operator()(T a, T b) const { return mul_wrap(a, b); }
};
struct Div {
  template <class T> __device__ T operator()(T a, T b) const { return a / b; }
};
struct Power {  // an integer exponent is >= 0 here: the launchers reject negative ones
  __device__ float operator()(float a, float b) const { return powf(a, b); }
  __device__ double operator()(double a, double b) const { return pow(a, b); }
  __device__ int64_t operator()(int64_t a, int64_t b) const {
    int64_t r = 1;  // square and multiply, wrapping like numpy's integer power
    for (; b > 0; b >>= 1) {
      if (b & 1) r = mul_wrap(r, a);
      a = mul_wrap(a, a);
    }
    return r;
  }
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
// Rounding toward -inf and the divisor's sign, as Python's // and %. Floats
// follow numpy's npy_divmod step by step (so x // 0 is x / 0 and x % 0 NaN);
// integers give 0 for x // 0 and x % 0 as numpy does (no trap, no error), and
// INT64_MIN // -1 wraps to INT64_MIN.
struct FloorDiv {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      if (b == 0) return 0;
      if (b == -1) return neg_wrap(a);  // INT64_MIN / -1 traps on x86
      const int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    } else {
      if (b == T(0)) return a / b;
      const T mod = fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      if (div == T(0)) return copysign(T(0), a / b);
      T floor_div = floor(div);
      if (div - floor_div > T(0.5)) floor_div += T(1);
      return floor_div;
    }
  }
};
struct Remainder {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      if (b == 0 || b == -1) return 0;  // INT64_MIN % -1 traps on x86
      const int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    } else {
      const T mod = fmod(a, b);
      if (b == T(0)) return mod;
      if (mod == T(0)) return copysign(T(0), b);
      return ((b < T(0)) != (mod < T(0))) ? mod + b : mod;
    }
  }
};
struct BitwiseAnd {
  template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct BitwiseOr {
  template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct BitwiseXor {
  template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
// Comparisons return bool; binary_loop writes it as bool or as 1/0 in T.
// Deriving from Comparison lets their kernels write a bool out.
struct Comparison {};
struct Eq : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a == b; }
};
struct Ne : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a != b; }
};
struct Lt : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a < b; }
};
struct Le : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a <= b; }
};
struct Gt : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a > b; }
};
struct Ge : Comparison {
  template <class T> __device__ bool operator()(T a, T b) const { return a >= b; }
};

template <class Op>
constexpr bool kComparison = std::is_base_of_v<Comparison, Op>;

// The unary ops of ewise_ops.h, which ewise_unary.cu and program.cu both call.
struct Neg {
  template <class T> __device__ T operator()(T x) const { return neg_wrap(x); }
};
struct Abs {
  __device__ float operator()(float x) const { return fabsf(x); }
  __device__ double operator()(double x) const { return fabs(x); }
  __device__ int64_t operator()(int64_t x) const { return x < 0 ? neg_wrap(x) : x; }
};
struct Exp {
  __device__ float operator()(float x) const { return expf(x); }
  __device__ double operator()(double x) const { return exp(x); }
};
struct Log {
  __device__ float operator()(float x) const { return logf(x); }
  __device__ double operator()(double x) const { return log(x); }
};
struct Sqrt {
  __device__ float operator()(float x) const { return sqrtf(x); }
  __device__ double operator()(double x) const { return sqrt(x); }
};
struct Tanh {
  __device__ float operator()(float x) const { return tanhf(x); }
  __device__ double operator()(double x) const { return tanh(x); }
};
struct Sin {
  __device__ float operator()(float x) const { return sinf(x); }
  __device__ double operator()(double x) const { return sin(x); }
};
struct Cos {
  __device__ float operator()(float x) const { return cosf(x); }
  __device__ double operator()(double x) const { return cos(x); }
};
struct Erf {
  __device__ float operator()(float x) const { return erff(x); }
  __device__ double operator()(double x) const { return erf(x); }
};
struct Sign {  // 0 stays 0 and NaN stays NaN, as in numpy.sign
  template <class T> __device__ T operator()(T x) const {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
  }
};

struct BitwiseNot {  // logical not on bool (~ of a bool's int value is never 0)
  template <class T> __device__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return ~x;
  }
};

// The out dtype of a binary op: the operands' (a, b and out one dtype), or bool
// for a comparison. TypeError otherwise.
void require_binary_out(const char* op, bool comparison, const Array& a, const Array& out);

// Calls fn(T{}, TOut{}) for operands of dtype dt writing out_dt: TOut is T, or
// bool when a comparison writes a mask. T ranges over Set (kernel_dtypes.h).
template <DTypes Set, bool IsComparison, class Fn>
void dispatch_binary(const char* op, DType dt, DType out_dt, Fn&& fn) {
  dispatch<Set>(op, dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (IsComparison && !std::is_same_v<T, bool>) {
      if (out_dt == DType::Bool) return fn(T{}, bool{});
    }
    fn(T{}, T{});
  });
}

}  // namespace lamina_cuda
