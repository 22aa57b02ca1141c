// gelu.cc: the optional gelu and gelu_backward kernels. Without them
// lamina.ndarray runs GELU as an ewise_program of eleven steps (mul, erf, add,
// ...); these run the same steps, each rounded as its own kernel would, in
// registers: the unfused result bit for bit at 1.3-1.4x the program's speed
// (exp_simd.h has the figures). float32 takes the ISA's vector loops
// (exp_simd.h) where the machine has AVX2; float64, and float32 below AVX2,
// the scalar loop below, whose libm calls are the unary kernels' there.
// float16 and bfloat16 run the float32 loops on widened blocks, rounded once.
#include <cmath>
#include <type_traits>

#include "isa_table.h"
#include "kernels.h"
#include "narrow.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

// The program's constants, computed as Python computes them (1 / sqrt(2) and
// sqrt(0.5) differ in a double's last bit), then rounded to T.
template <class T>
struct Consts {
  const double pi = 3.141592653589793;
  const T sqrt_half = T(1 / std::sqrt(2.0)), inv_sqrt_2pi = T(1 / std::sqrt(2 * pi)),
          sqrt_2_over_pi = T(std::sqrt(2 / pi)), cubic = T(0.044715), cubic3 = T(3 * 0.044715);
};

// One element, a statement per program step (no step fused with the next).
template <class T>
T gelu_one(T x, bool tanh) {
  static const Consts<T> C;
  T t;
  if (tanh) {
    t = x * x;
    t = t * x;
    t = t * C.cubic;
    t = t + x;
    t = t * C.sqrt_2_over_pi;
    t = std::tanh(t);
  } else {
    t = x * C.sqrt_half;
    t = std::erf(t);
  }
  t = t + T(1);
  t = t * T(0.5);
  return t * x;
}

template <class T>
T gelu_grad_one(T x, T g, bool tanh) {
  static const Consts<T> C;
  if (tanh) {
    T t = x * x;
    t = t * x;
    t = t * C.cubic;
    t = x + t;
    t = t * C.sqrt_2_over_pi;
    t = std::tanh(t);
    T du = x * x;
    du = du * C.cubic3;
    du = du + T(1);
    du = du * C.sqrt_2_over_pi;
    T left = t + T(1);
    left = left * T(0.5);
    T right = x * T(0.5);
    T sq = t * t;
    sq = T(1) - sq;
    right = right * sq;
    right = right * du;
    return g * (left + right);
  }
  T pdf = x * x;
  pdf = pdf * T(-0.5);
  pdf = std::exp(pdf);
  pdf = pdf * C.inv_sqrt_2pi;
  T cdf = x * C.sqrt_half;
  cdf = std::erf(cdf);
  cdf = cdf + T(1);
  cdf = cdf * T(0.5);
  pdf = x * pdf;
  return g * (cdf + pdf);
}

void require_cover(const char* op, const char* what, const Array& x, const Array& out) {
  if (x.size() < out.size())
    value_error(op, ": ", what, " has ", x.size(), " elements, out has ", out.size());
}

}  // namespace

void gelu(const Array& a, Array& out, bool tanh) {
  const char* op = "gelu";
  require_same_dtype(op, {&a, &out});
  require_dtype_in(op, out.dtype(), kGeluDtypes);
  require_cover(op, "a", a, out);
  dispatch_in<kGeluDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    using W = std::conditional_t<::lamina::is_narrow_v<T>, float, T>;
    const T* x = a.data<T>();
    T* y = out.data<T>();
    const auto vector = isa_kernels().of<W>().gelu[tanh];
    auto loop = [&](const W* xs, W* ys, int64_t n) {
      if (vector) return vector(xs, ys, n);
      for (int64_t i = 0; i < n; ++i) ys[i] = gelu_one(xs[i], tanh);
    };
    parallel_for(out.size(), kParallelGrain, [&](int64_t s, int64_t e) {
      if constexpr (::lamina::is_narrow_v<T>) {
        narrow_blocks(y + s, e - s, [&](int64_t i, int64_t len, float* fa, float*) {
          to_float32(x + s + i, fa, len);
        }, [&](const float* fa, const float*, float* fo, int64_t len) { loop(fa, fo, len); });
      } else {
        loop(x + s, y + s, e - s);
      }
    });
  });
}

void gelu_backward(const Array& a, const Array& g, Array& out, bool tanh) {
  const char* op = "gelu_backward";
  require_same_dtype(op, {&a, &g, &out});
  require_dtype_in(op, out.dtype(), kGeluDtypes);
  require_cover(op, "a", a, out);
  require_cover(op, "g", g, out);
  dispatch_in<kGeluDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    using W = std::conditional_t<::lamina::is_narrow_v<T>, float, T>;
    const T* x = a.data<T>();
    const T* gp = g.data<T>();
    T* y = out.data<T>();
    const auto vector = isa_kernels().of<W>().gelu_backward[tanh];
    auto loop = [&](const W* xs, const W* gs, W* ys, int64_t n) {
      if (vector) return vector(xs, gs, ys, n);
      for (int64_t i = 0; i < n; ++i) ys[i] = gelu_grad_one(xs[i], gs[i], tanh);
    };
    parallel_for(out.size(), kParallelGrain, [&](int64_t s, int64_t e) {
      if constexpr (::lamina::is_narrow_v<T>) {
        narrow_blocks(y + s, e - s, [&](int64_t i, int64_t len, float* fa, float* fb) {
          to_float32(x + s + i, fa, len);
          to_float32(gp + s + i, fb, len);
        }, [&](const float* fa, const float* fb, float* fo, int64_t len) { loop(fa, fb, fo, len); });
      } else {
        loop(x + s, gp + s, y + s, e - s);
      }
    });
  });
}

}  // namespace lamina_cpu
