// batch_norm.cc: the fused batch-norm kernels (interface v2.1, optional):
// batch_norm_stats, batch_norm_apply and batch_norm_backward. Composed from
// NDArray ops a BatchNorm is ~6 passes over its input forward and ~8
// backward; these are 3 forward (two for the statistics, the second mostly
// from cache, one to normalise) and 2 backward (the two per-channel sums,
// then dx).
//
// Layout: x, g, out and dx are compact (N, C, S) from element 0 (S = the
// product of the trailing dims, 1 for an (N, C) input); mean, var, rstd,
// weight, bias, dweight and dbias are (C,). The math is the numpy reference
// backend's (lamina.ndarray._numpy_norm): two-pass statistics and the
// backward sums accumulated in double; apply and dx run in the dtype with
// per-channel coefficients computed in double.
//
// Channels run in parallel (threading.h), each reduced by one thread in a
// fixed order, so results do not depend on the thread count. The loops over
// a channel (batch_norm_loops.h) are compiled once per instruction set: the
// active ISA's table (avx2 on the avx2 and avx512 paths) is read once per call.
#include "batch_norm.h"

#include <algorithm>
#include <type_traits>

#include "isa.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

namespace base {
#include "batch_norm_loops.h"
}  // namespace base

namespace {

// The active instruction set's loops for T.
template <class T>
BatchNormLoops<T> loops() {
#if defined(LAMINA_HAVE_AVX2_TU)
  if (active_isa() != Isa::Generic) {
    if constexpr (std::is_same_v<T, float>) return avx2::batch_norm_loops_f32();
    else return avx2::batch_norm_loops_f64();
  }
#endif
  return base::batch_norm_loops<T>();
}

// Runs f(ch) for every channel, in parallel when the channels hold enough values.
template <class F>
void for_channels(int64_t c, int64_t per_channel, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_channel));
  parallel_for(c, grain, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) f(ch);
  }, 1);
}

void require_norm_dtypes(const char* op, std::initializer_list<const Array*> arrays) {
  require_same_dtype(op, arrays);
  require_dtype_in(op, (*arrays.begin())->dtype(), kBatchNormDtypes);
}

}  // namespace

void batch_norm_stats(const Array& x, Array& mean, Array& var, int64_t n, int64_t c, int64_t s) {
  const char* op = "batch_norm_stats";
  require_norm_dtypes(op, {&x, &mean, &var});
  checks::check_batch_norm(op, n, c, s,
                           {{"x", x.size(), true}, {"mean", mean.size(), false},
                            {"var", var.size(), false}});
  if (c > 0 && (n == 0 || s == 0))
    value_error(op, ": no values per channel in (", n, ", ", c, ", ", s,
                "); a mean needs n * s >= 1");
  dispatch_in<kBatchNormDtypes>(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const auto stats = loops<T>().stats;
    const T* px = x.data<T>();
    T* pm = mean.data<T>();
    T* pv = var.data<T>();
    for_channels(c, n * s, [&](int64_t ch) { stats(px, n, c, s, ch, pm, pv); });
  });
}

void batch_norm_apply(const Array& x, const Array& mean, const Array& rstd, const Array& weight,
                      const Array& bias, Array& out, int64_t n, int64_t c, int64_t s) {
  const char* op = "batch_norm_apply";
  require_norm_dtypes(op, {&x, &mean, &rstd, &weight, &bias, &out});
  checks::check_batch_norm(op, n, c, s,
                           {{"x", x.size(), true}, {"out", out.size(), true},
                            {"mean", mean.size(), false}, {"rstd", rstd.size(), false},
                            {"weight", weight.size(), false}, {"bias", bias.size(), false}});
  dispatch_in<kBatchNormDtypes>(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const auto apply = loops<T>().apply;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T* pm = mean.data<T>();
    const T* pr = rstd.data<T>();
    const T* pw = weight.data<T>();
    const T* pb = bias.data<T>();
    for_channels(c, n * s, [&](int64_t ch) {
      apply(px, po, n, c, s, ch, pm[ch], pr[ch] * pw[ch], pb[ch]);
    });
  });
}

void batch_norm_backward(const Array& g, const Array& x, const Array& mean, const Array& rstd,
                         const Array& weight, Array& dx, Array& dweight, Array& dbias, int64_t n,
                         int64_t c, int64_t s, bool training) {
  const char* op = "batch_norm_backward";
  require_norm_dtypes(op, {&g, &x, &mean, &rstd, &weight, &dx, &dweight, &dbias});
  checks::check_batch_norm(
      op, n, c, s,
      {{"g", g.size(), true}, {"x", x.size(), true}, {"dx", dx.size(), true},
       {"mean", mean.size(), false}, {"rstd", rstd.size(), false},
       {"weight", weight.size(), false}, {"dweight", dweight.size(), false},
       {"dbias", dbias.size(), false}});
  dispatch_in<kBatchNormDtypes>(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const BatchNormLoops<T> table = loops<T>();
    const T* pg = g.data<T>();
    const T* px = x.data<T>();
    T* pdx = dx.data<T>();
    const double count = double(n * s);
    for_channels(c, 2 * n * s, [&](int64_t ch) {
      const double mu = mean.data<T>()[ch], r = rstd.data<T>()[ch];
      double g_sum = 0, gx_sum = 0;
      table.grad_sums(pg, px, n, c, s, ch, mu, &g_sum, &gx_sum);
      gx_sum *= r;  // sum(g * xhat)
      dbias.data<T>()[ch] = T(g_sum);
      dweight.data<T>()[ch] = T(gx_sum);
      if (!count) return;
      // dx = a (g - g_sum / m - xhat gx_sum / m) = a g + k1 (x - mean) + k0
      const double a = double(weight.data<T>()[ch]) * r;
      const T k1 = training ? T(-a * r * gx_sum / count) : T(0);
      const T k0 = training ? T(-a * g_sum / count) : T(0);
      table.dx(pg, px, pdx, n, c, s, ch, T(a), T(mu), k1, k0);
    });
  });
}

}  // namespace lamina_cpu
