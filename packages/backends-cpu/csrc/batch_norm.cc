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
#include <vector>

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

// Runs f(c0, c1) over contiguous ranges of the channels, in parallel when the
// channels hold enough values: the row loops' way for short blocks
// (batch_norm_loops.h). Split for the free cores only: a range reads a slice of
// every row, so beside a busy core two ranges one after the other read the
// tensor twice in strides (a (128, 64, 2, 2) backward took 1.15x as long).
template <class F>
void for_channel_ranges(int64_t c, int64_t per_channel, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_channel));
  parallel_for_free(c, grain, [&](int64_t b, int64_t e) { f(b, e); }, 1);
}

// Runs f(ch) for every channel, split as for_channel_ranges splits them.
template <class F>
void for_channels(int64_t c, int64_t per_channel, F&& f) {
  for_channel_ranges(c, per_channel, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) f(ch);
  });
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
    const BatchNormLoops<T> table = loops<T>();
    const T* px = x.data<T>();
    T* pm = mean.data<T>();
    T* pv = var.data<T>();
    if (s < kShortBlock) {
      for_channel_ranges(c, n * s, [&](int64_t c0, int64_t c1) {
        table.stats_rows(px, n, c, s, c0, c1, pm, pv);
      });
      return;
    }
    for_channels(c, n * s, [&](int64_t ch) { table.stats(px, n, c, s, ch, pm, pv); });
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
    const BatchNormLoops<T> table = loops<T>();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T* pm = mean.data<T>();
    const T* pr = rstd.data<T>();
    const T* pw = weight.data<T>();
    const T* pb = bias.data<T>();
    if (s < kShortBlock) {
      for_channel_ranges(c, n * s, [&](int64_t c0, int64_t c1) {
        std::vector<T> scale(static_cast<std::size_t>(c1 - c0));
        for (int64_t ch = c0; ch < c1; ++ch) scale[ch - c0] = pr[ch] * pw[ch];
        table.apply_rows(px, po, n, c, s, c0, c1, pm + c0, scale.data(), pb + c0);
      });
      return;
    }
    for_channels(c, n * s, [&](int64_t ch) {
      table.apply(px, po, n, c, s, ch, pm[ch], pr[ch] * pw[ch], pb[ch]);
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
    // Channel ch's sums in, its dbias and dweight out, and its dx coefficients:
    // dx = a (g - g_sum / m - xhat gx_sum / m) = a g + k1 (x - mean) + k0.
    struct Coefficients {
      T a, mu, k1, k0;
    };
    auto finish = [&](int64_t ch, double mu, double g_sum, double gx_sum) {
      const double r = rstd.data<T>()[ch];
      gx_sum *= r;  // sum(g * xhat)
      dbias.data<T>()[ch] = T(g_sum);
      dweight.data<T>()[ch] = T(gx_sum);
      const double a = double(weight.data<T>()[ch]) * r;
      const T k1 = training && count ? T(-a * r * gx_sum / count) : T(0);
      const T k0 = training && count ? T(-a * g_sum / count) : T(0);
      return Coefficients{T(a), T(mu), k1, k0};
    };
    if (s < kShortBlock) {
      for_channel_ranges(c, 2 * n * s, [&](int64_t c0, int64_t c1) {
        const auto w = static_cast<std::size_t>(c1 - c0);
        std::vector<double> mu(w), g_sum(w), gx_sum(w);
        std::vector<T> a(w), mu_t(w), k1(w), k0(w);
        for (int64_t ch = c0; ch < c1; ++ch) mu[ch - c0] = mean.data<T>()[ch];
        table.grad_sums_rows(pg, px, n, c, s, c0, c1, mu.data(), g_sum.data(), gx_sum.data());
        for (std::size_t k = 0; k < w; ++k) {
          const Coefficients f = finish(c0 + int64_t(k), mu[k], g_sum[k], gx_sum[k]);
          a[k] = f.a, mu_t[k] = f.mu, k1[k] = f.k1, k0[k] = f.k0;
        }
        if (count)
          table.dx_rows(pg, px, pdx, n, c, s, c0, c1, a.data(), mu_t.data(), k1.data(), k0.data());
      });
      return;
    }
    for_channels(c, 2 * n * s, [&](int64_t ch) {
      const double mu = mean.data<T>()[ch];
      double g_sum = 0, gx_sum = 0;
      table.grad_sums(pg, px, n, c, s, ch, mu, &g_sum, &gx_sum);
      const Coefficients f = finish(ch, mu, g_sum, gx_sum);
      if (count) table.dx(pg, px, pdx, n, c, s, ch, f.a, f.mu, f.k1, f.k0);
    });
  });
}

}  // namespace lamina_cpu
