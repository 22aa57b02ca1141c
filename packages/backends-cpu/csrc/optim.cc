// optim.cc: adam_step, the Adam/AdamW update of one parameter in one pass over
// its four buffers (instead of a dozen elementwise kernels and their
// allocations). Compiled without -mfma, like the other portable files: each
// product and sum is rounded on its own, in the order the composite of
// scalar and elementwise kernels takes, so the two give identical results.
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

void adam_step(const Array& param, const Array& grad, const Array& exp_avg,
               const Array& exp_avg_sq, Array& param_out, Array& exp_avg_out,
               Array& exp_avg_sq_out, double beta1, double beta2, double eps,
               double weight_decay, double decay, double step_size, double inv_bias2_sqrt) {
  const char* op = "adam_step";
  require_same_dtype(op, {&param, &grad, &exp_avg, &exp_avg_sq, &param_out, &exp_avg_out,
                          &exp_avg_sq_out});
  require_float(op, param.dtype());
  const int64_t n = param_out.size();
  for (const Array* x : std::initializer_list<const Array*>{&param, &grad, &exp_avg, &exp_avg_sq,
                                                             &exp_avg_out, &exp_avg_sq_out})
    if (x->size() < n)
      value_error(op, ": every buffer needs ", n, " elements (param_out's), one has ", x->size());
  dispatch_float(op, param.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    const T* m = exp_avg.data<T>();
    const T* v = exp_avg_sq.data<T>();
    T* po = param_out.data<T>();
    T* mo = exp_avg_out.data<T>();
    T* vo = exp_avg_sq_out.data<T>();
    // Each scalar in T, as the scalar kernels take it (1 - beta in double first).
    const T b1 = T(beta1), c1 = T(1.0 - beta1), b2 = T(beta2), c2 = T(1.0 - beta2);
    const T e = T(eps), wd = T(weight_decay), keep = T(decay), lr = T(step_size);
    const T unbias = T(inv_bias2_sqrt);
    // Outputs may be the inputs (an in-place update): element i is read before
    // it is written, so no iteration depends on another (ivdep: vectorise
    // without the alias checks seven pointers would need).
    auto update = [&](int64_t s, int64_t end, auto l2) {
#pragma GCC ivdep
      for (int64_t i = s; i < end; ++i) {
        const T pi = p[i];
        const T gi = l2 ? T(g[i] + T(pi * wd)) : g[i];
        const T mi = T(T(m[i] * b1) + T(gi * c1));
        const T vi = T(T(v[i] * b2) + T(T(gi * gi) * c2));
        const T denom = T(T(std::sqrt(vi) * unbias) + e);
        po[i] = T(T(pi * keep) - T(T(mi / denom) * lr));
        mo[i] = mi;
        vo[i] = vi;
      }
    };
    parallel_for(n, kParallelGrain, [&](int64_t s, int64_t end) {
      if (weight_decay != 0) update(s, end, std::true_type{});
      else update(s, end, std::false_type{});
    });
  });
}

}  // namespace lamina_cpu
