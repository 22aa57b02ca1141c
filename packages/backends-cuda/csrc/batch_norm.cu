// batch_norm.cu: the fused batch-norm kernels (interface v2.1, optional;
// float32 and float64): batch_norm_stats, batch_norm_apply and
// batch_norm_backward, in three launches forward-and-backward where the
// composite is ~14.
//
// Layout: x, g, out and dx are compact (N, C, S) from element 0 (S = the
// product of the trailing dims); mean, var, rstd, weight, bias, dweight and
// dbias are (C,). Element e = (i * C + ch) * S + j belongs to channel ch.
// The per-channel reductions (the statistics, the backward's sum(g) and
// sum(g * xhat)) run one block per channel (grid-stride over channels): each
// thread accumulates a strided share in double, then a shared-memory tree
// combines the block's partials in a fixed order. Apply and dx run one thread
// per element. The math is the numpy reference backend's
// (lamina.ndarray._numpy_norm): two-pass statistics, double sums, apply in
// the dtype with scale = rstd * weight rounded first.
#include "common.cuh"

namespace lamina_cuda {

namespace {

// The sum of v over the block (kThreads threads), returned to every thread.
// Every thread of the block calls it (the channel loops are block-uniform).
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double part[kThreads];
  __syncthreads();  // a previous call may still be reading part
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  return part[0];
}

// Calls f(e) for this thread's share of channel ch, the elements e = (i * c + ch) * s + j
// of its values k = i * s + j = threadIdx.x, + kThreads, ...: coalesced along j, with one
// division up front instead of two per element.
template <class F>
__device__ __forceinline__ void for_channel(int64_t n, int64_t c, int64_t s, int64_t ch, F f) {
  if (s == 0) return;
  const int64_t di = kThreads / s, dj = kThreads % s;
  int64_t i = threadIdx.x / s, j = threadIdx.x % s;
  while (i < n) {
    f((i * c + ch) * s + j);
    i += di;
    j += dj;
    if (j >= s) {
      j -= s;
      ++i;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    batch_norm_stats_kernel(const T* __restrict__ x, T* __restrict__ mean, T* __restrict__ var,
                            int64_t n, int64_t c, int64_t s) {
  const int64_t m = n * s;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double sum = 0;
    for_channel(n, c, s, ch, [&](int64_t e) { sum += static_cast<double>(x[e]); });
    const double mu = block_sum(sum) / static_cast<double>(m);
    double sq = 0;
    for_channel(n, c, s, ch, [&](int64_t e) {
      const double d = static_cast<double>(x[e]) - mu;
      sq += d * d;
    });
    sq = block_sum(sq);
    if (threadIdx.x == 0) {
      mean[ch] = static_cast<T>(mu);
      var[ch] = static_cast<T>(sq / static_cast<double>(m));
    }
  }
}

template <class T>
__global__ void batch_norm_apply_kernel(const T* __restrict__ x, const T* __restrict__ mean,
                                        const T* __restrict__ rstd,
                                        const T* __restrict__ weight,
                                        const T* __restrict__ bias, T* __restrict__ out,
                                        int64_t total, int64_t c, int64_t s) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (e / s) % c;
    out[e] = (x[e] - mean[ch]) * (rstd[ch] * weight[ch]) + bias[ch];
  }
}

// dbias = sum(g), dweight = sum(g * xhat) per channel.
template <class T>
__global__ void __launch_bounds__(kThreads)
    batch_norm_backward_sums_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                    const T* __restrict__ mean, const T* __restrict__ rstd,
                                    T* __restrict__ dweight, T* __restrict__ dbias, int64_t n,
                                    int64_t c, int64_t s) {
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const double mu = static_cast<double>(mean[ch]);
    double gs = 0, gxs = 0;
    for_channel(n, c, s, ch, [&](int64_t e) {
      const double gv = static_cast<double>(g[e]);
      gs += gv;
      gxs += gv * (static_cast<double>(x[e]) - mu);
    });
    gs = block_sum(gs);
    gxs = block_sum(gxs);
    if (threadIdx.x == 0) {
      dbias[ch] = static_cast<T>(gs);
      dweight[ch] = static_cast<T>(gxs * static_cast<double>(rstd[ch]));
    }
  }
}

// dx = a (g - dbias / m - xhat dweight / m), a = weight * rstd (training), else a g.
template <class T>
__global__ void batch_norm_backward_dx_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                              const T* __restrict__ mean,
                                              const T* __restrict__ rstd,
                                              const T* __restrict__ weight,
                                              const T* __restrict__ dweight,
                                              const T* __restrict__ dbias, T* __restrict__ dx,
                                              int64_t total, int64_t c, int64_t s,
                                              bool training) {
  const T inv_m = static_cast<T>(1.0 / static_cast<double>(total / c));
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (e / s) % c;
    const T r = rstd[ch], a = weight[ch] * r;
    T gv = g[e];
    if (training) gv = gv - dbias[ch] * inv_m - (x[e] - mean[ch]) * r * (dweight[ch] * inv_m);
    dx[e] = gv * a;
  }
}

// Blocks for a one-block-per-channel reduction over c channels.
unsigned channel_blocks(int64_t c) {
  return static_cast<unsigned>(c < 65535 ? (c < 1 ? 1 : c) : 65535);
}

}  // namespace

void batch_norm_stats(const Array& x, Array& mean, Array& var, int64_t n, int64_t c, int64_t s) {
  const char* op = "batch_norm_stats";
  require_same_dtype(op, {&x, &mean, &var});
  checks::check_batch_norm(op, n, c, s,
                           {{"x", x.size(), true}, {"mean", mean.size(), false},
                            {"var", var.size(), false}});
  if (c > 0 && (n == 0 || s == 0))
    value_error(op, ": no values per channel in (", n, ", ", c, ", ", s,
                "); a mean needs n * s >= 1");
  const Launch ctx = launch_on(op, {&x, &mean, &var});
  dispatch<kernel_dtypes::batch_norm_stats>(op, x.dtype(), [&](auto t) {
    using T = decltype(t);
    if (c == 0) return;
    launch_kernel(&batch_norm_stats_kernel<T>, channel_blocks(c), kThreads, 0, ctx.stream,
                  x.data<T>(), mean.data<T>(), var.data<T>(), n, c, s);
    check_launch("batch_norm_stats_kernel", ctx.stream);
  });
}

void batch_norm_apply(const Array& x, const Array& mean, const Array& rstd, const Array& weight,
                      const Array& bias, Array& out, int64_t n, int64_t c, int64_t s) {
  const char* op = "batch_norm_apply";
  require_same_dtype(op, {&x, &mean, &rstd, &weight, &bias, &out});
  const int64_t total = checks::check_batch_norm(
      op, n, c, s,
      {{"x", x.size(), true}, {"out", out.size(), true}, {"mean", mean.size(), false},
       {"rstd", rstd.size(), false}, {"weight", weight.size(), false},
       {"bias", bias.size(), false}});
  const Launch ctx = launch_on(op, {&x, &mean, &rstd, &weight, &bias, &out});
  dispatch<kernel_dtypes::batch_norm_apply>(op, x.dtype(), [&](auto t) {
    using T = decltype(t);
    if (total == 0) return;
    launch_kernel(&batch_norm_apply_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, x.data<T>(), mean.data<T>(), rstd.data<T>(), weight.data<T>(),
                  bias.data<T>(), out.data<T>(), total, c, s);
    check_launch("batch_norm_apply_kernel", ctx.stream);
  });
}

void batch_norm_backward(const Array& g, const Array& x, const Array& mean, const Array& rstd,
                         const Array& weight, Array& dx, Array& dweight, Array& dbias, int64_t n,
                         int64_t c, int64_t s, bool training) {
  const char* op = "batch_norm_backward";
  require_same_dtype(op, {&g, &x, &mean, &rstd, &weight, &dx, &dweight, &dbias});
  const int64_t total = checks::check_batch_norm(
      op, n, c, s,
      {{"g", g.size(), true}, {"x", x.size(), true}, {"dx", dx.size(), true},
       {"mean", mean.size(), false}, {"rstd", rstd.size(), false},
       {"weight", weight.size(), false}, {"dweight", dweight.size(), false},
       {"dbias", dbias.size(), false}});
  const Launch ctx = launch_on(op, {&g, &x, &mean, &rstd, &weight, &dx, &dweight, &dbias});
  dispatch<kernel_dtypes::batch_norm_backward>(op, x.dtype(), [&](auto t) {
    using T = decltype(t);
    if (c == 0) return;
    launch_kernel(&batch_norm_backward_sums_kernel<T>, channel_blocks(c), kThreads, 0,
                  ctx.stream, g.data<T>(), x.data<T>(), mean.data<T>(), rstd.data<T>(),
                  dweight.data<T>(), dbias.data<T>(), n, c, s);
    check_launch("batch_norm_backward_sums_kernel", ctx.stream);
    if (total == 0) return;
    launch_kernel(&batch_norm_backward_dx_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, g.data<T>(), x.data<T>(), mean.data<T>(), rstd.data<T>(),
                  weight.data<T>(), dweight.data<T>(), dbias.data<T>(), dx.data<T>(), total, c,
                  s, training);
    check_launch("batch_norm_backward_dx_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
