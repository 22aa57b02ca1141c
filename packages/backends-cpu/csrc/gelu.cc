// gelu.cc: the optional gelu and gelu_backward kernels. Without them
// lamina.ndarray runs GELU as an ewise_program of eleven steps (mul, erf, add,
// ...); these run the same steps, each rounded as its own kernel would, in
// registers: the unfused result bit for bit at 1.3-1.4x the program's speed
// (exp_simd.h has the figures). float32 takes the ISA's vector loops
// (exp_simd.h) where the machine has AVX2; float64, and float32 below AVX2,
// the scalar loop below, whose libm calls are the unary kernels' there.
// float16 and bfloat16 run the float32 loops on widened blocks, rounded once.
#include <algorithm>
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

// Runs f(s, e) on [s, e) of a float32 view of n elements: the arrays
// themselves for T = float or double, else (float16, bfloat16) blocks widened
// into float32 scratch, computed, and rounded back once: the float32 kernel on
// widened operands, bit for bit (the ndarray layer's fallback), in one pass.
template <class T, class F>
void on_float_blocks(int64_t n, const T* const* ins, int nin, T* out, F f) {
  parallel_for(n, kParallelGrain, [&](int64_t s, int64_t e) {
    if constexpr (!::lamina::is_narrow_v<T>) {
      f(ins, out, s, e);
    } else {
      constexpr int64_t kBlock = 1024;
      float buf[3][kBlock];
      for (int64_t b = s; b < e; b += kBlock) {
        const int64_t m = std::min(kBlock, e - b);
        const float* wide[2] = {buf[0], buf[1]};
        for (int i = 0; i < nin; ++i) to_float32(ins[i] + b, buf[i], m);
        f(wide, buf[2], int64_t(0), m);
        from_float32(buf[2], out + b, m);
      }
    }
  });
}

void gelu(const Array& a, Array& out, bool tanh) {
  const char* op = "gelu";
  require_same_dtype(op, {&a, &out});
  require_dtype_in(op, out.dtype(), kGeluDtypes);
  require_cover(op, "a", a, out);
  dispatch_in<kGeluDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    using W = std::conditional_t<::lamina::is_narrow_v<T>, float, T>;
    const T* ins[1] = {a.data<T>()};
    const auto vector = isa_kernels().of<W>().gelu[tanh];
    on_float_blocks<T>(out.size(), ins, 1, out.data<T>(),
                       [&](const W* const* x, W* y, int64_t s, int64_t e) {
      if (vector) return vector(x[0] + s, y + s, e - s);
      for (int64_t i = s; i < e; ++i) y[i] = gelu_one(x[0][i], tanh);
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
    const T* ins[2] = {a.data<T>(), g.data<T>()};
    const auto vector = isa_kernels().of<W>().gelu_backward[tanh];
    on_float_blocks<T>(out.size(), ins, 2, out.data<T>(),
                       [&](const W* const* x, W* y, int64_t s, int64_t e) {
      if (vector) return vector(x[0] + s, x[1] + s, y + s, e - s);
      for (int64_t i = s; i < e; ++i) y[i] = gelu_grad_one(x[0][i], x[1][i], tanh);
    });
  });
}

}  // namespace lamina_cpu
