// pool.cu: 2-D max pooling with indices, forward and backward (max_pool2d,
// max_pool2d_backward; float32 and float64, indices int64).
//
// Layout (lamina/pool_checks.h): `planes` compact (H, W) input planes, the
// N*C planes of an NCHW tensor, pooled into compact (OH, OW) planes; indices
// (planes, OH, OW) hold the chosen element's offset y*W + x in its plane.
// The rule is PyTorch CPU's (and the cpu backend's): scan the window's
// in-image taps in row-major order and take a tap when it is greater than the
// maximum so far or NaN; padding is never a candidate (-1 where a window
// reads only padding).
//
// Forward: one thread per output element. Backward: one thread per input
// element, which visits the windows that contain it in output order and sums
// the gradients of those that chose it: a gather, so no atomics and the same
// sums, in the same order, as the cpu backend's scatter (deterministic).
#include <cmath>

#include "common.cuh"
#include "lamina/pool_checks.h"

namespace lamina_cuda {

namespace {

using checks::PoolGeometry;

#define LAMINA_POOL_ITEMS(e, total)                                                          \
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total; \
       e += static_cast<int64_t>(blockDim.x) * gridDim.x)

// The first tap index >= 0 of a window starting at `start` with dilation d that is inside.
__device__ __forceinline__ int64_t first_tap(int64_t start, int64_t d) {
  return start < 0 ? (-start + d - 1) / d : 0;
}

template <class T>
__global__ void max_pool2d_kernel(const T* __restrict__ x, T* __restrict__ out,
                                  int64_t* __restrict__ indices, PoolGeometry g) {
  const int64_t ohw = g.oh * g.ow, total = g.planes * ohw;
  LAMINA_POOL_ITEMS(e, total) {
    const int64_t p = e / ohw, r = e - p * ohw, oy = r / g.ow, ox = r - oy * g.ow;
    const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    const T* plane = x + p * g.h * g.w;
    T best = -INFINITY;
    int64_t at = -1;
    for (int64_t i = first_tap(y0, g.dh); i < g.kh; ++i) {
      const int64_t y = y0 + i * g.dh;
      if (y >= g.h) break;
      for (int64_t j = first_tap(x0, g.dw); j < g.kw; ++j) {
        const int64_t xx = x0 + j * g.dw;
        if (xx >= g.w) break;
        const T v = plane[y * g.w + xx];
        if (at < 0 || v > best || v != v) {  // v != v: a NaN wins
          best = v;
          at = y * g.w + xx;
        }
      }
    }
    out[e] = best;
    indices[e] = at;
  }
}

// The output position o < count whose window reads `pos` at tap t
// (o*s - pad + t*d == pos), or -1 where there is none.
__device__ __forceinline__ int64_t window_at(int64_t pos, int64_t t, int64_t pad, int64_t s,
                                             int64_t d, int64_t count) {
  const int64_t q = pos + pad - t * d;
  if (q < 0 || q % s != 0) return -1;
  return q / s < count ? q / s : -1;
}

template <class T>
__global__ void max_pool2d_backward_kernel(const T* __restrict__ grad_out,
                                           const int64_t* __restrict__ indices,
                                           T* __restrict__ grad_in, PoolGeometry g) {
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow, total = g.planes * hw;
  LAMINA_POOL_ITEMS(e, total) {
    const int64_t p = e / hw, k = e - p * hw, y = k / g.w, xx = k - y * g.w;
    const T* gp = grad_out + p * ohw;
    const int64_t* ip = indices + p * ohw;
    T sum = T(0);
    // Taps from last to first visit the windows in ascending output order.
    for (int64_t i = g.kh - 1; i >= 0; --i) {
      const int64_t oy = window_at(y, i, g.ph, g.sh, g.dh, g.oh);
      if (oy < 0) continue;
      for (int64_t j = g.kw - 1; j >= 0; --j) {
        const int64_t ox = window_at(xx, j, g.pw, g.sw, g.dw, g.ow);
        if (ox >= 0 && ip[oy * g.ow + ox] == k) sum += gp[oy * g.ow + ox];
      }
    }
    grad_in[e] = sum;
  }
}

#undef LAMINA_POOL_ITEMS

}  // namespace

void max_pool2d(const Array& x, Array& out, Array& indices, int64_t planes, int64_t h,
                int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "max_pool2d";
  const PoolGeometry g{planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw};
  checks::check_max_pool2d(op, g, x.size(), out.size(), x.dtype_str(), out.dtype_str(),
                           indices.dtype_str(), indices.size());
  const Launch ctx = launch_on(op, {&x, &out, &indices});
  dispatch<kernel_dtypes::max_pool2d>(op, x.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = planes * oh * ow;
    if (total == 0) return;
    launch_kernel(&max_pool2d_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  x.data<T>(), out.data<T>(), indices.data<int64_t>(), g);
    check_launch("max_pool2d_kernel", ctx.stream);
  });
}

void max_pool2d_backward(const Array& grad_out, const Array& indices, Array& grad_in,
                         int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                         int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         int64_t dh, int64_t dw) {
  const char* op = "max_pool2d_backward";
  const PoolGeometry g{planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw};
  checks::check_max_pool2d(op, g, grad_in.size(), grad_out.size(), grad_in.dtype_str(),
                           grad_out.dtype_str(), indices.dtype_str(), indices.size());
  const Launch ctx = launch_on(op, {&grad_out, &indices, &grad_in});
  dispatch<kernel_dtypes::max_pool2d_backward>(op, grad_out.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = planes * h * w;
    if (total == 0) return;
    launch_kernel(&max_pool2d_backward_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, grad_out.data<T>(), indices.data<int64_t>(), grad_in.data<T>(), g);
    check_launch("max_pool2d_backward_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
