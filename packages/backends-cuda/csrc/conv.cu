// conv.cu: im2col and its adjoint col2im for convolutions (float32/float64).
//
// im2col(a, out, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw): patches of a
// compact NCHW a into compact out (n, oh, ow, c, kh, kw), zero outside the
// input; one thread per out element, so writes are coalesced.
// col2im(a, out, ...): sums a (n, oh, ow, c, kh, kw) into out (n, c, h, w),
// overwriting it. Written as a gather (one thread per out element collecting
// the patch entries that cover it) rather than a scatter, so it needs no
// atomics and its result is deterministic.
#include "common.cuh"

namespace lamina_cuda {

struct ConvShape {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

template <class T>
__global__ void im2col_kernel(const T* __restrict__ a, T* __restrict__ out, ConvShape s,
                              int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t t = e;
    const int64_t j = t % s.kw; t /= s.kw;
    const int64_t i = t % s.kh; t /= s.kh;
    const int64_t ch = t % s.c; t /= s.c;
    const int64_t x = t % s.ow; t /= s.ow;
    const int64_t y = t % s.oh;
    const int64_t b = t / s.oh;
    const int64_t iy = y * s.sh - s.ph + i * s.dh, ix = x * s.sw - s.pw + j * s.dw;
    out[e] = (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) ? a[((b * s.c + ch) * s.h + iy) * s.w + ix]
                                                          : T(0);
  }
}

template <class T>
__global__ void col2im_kernel(const T* __restrict__ a, T* __restrict__ out, ConvShape s,
                              int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t xx = e % s.w, yy = e / s.w % s.h, ch = e / (s.w * s.h) % s.c;
    const int64_t b = e / (s.w * s.h * s.c);
    T sum = T(0);
    for (int64_t i = 0; i < s.kh; ++i) {
      const int64_t ty = yy + s.ph - i * s.dh;
      if (ty < 0 || ty % s.sh != 0 || ty / s.sh >= s.oh) continue;
      const int64_t y = ty / s.sh;
      for (int64_t j = 0; j < s.kw; ++j) {
        const int64_t tx = xx + s.pw - j * s.dw;
        if (tx < 0 || tx % s.sw != 0 || tx / s.sw >= s.ow) continue;
        const int64_t x = tx / s.sw;
        sum += a[((((b * s.oh + y) * s.ow + x) * s.c + ch) * s.kh + i) * s.kw + j];
      }
    }
    out[e] = sum;
  }
}

namespace {

ConvShape conv_shape(const char* op, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                     int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                     int64_t dw) {
  for (int64_t v : {n, c, h, w, ph, pw})
    if (v < 0) value_error(op, ": sizes and padding must be >= 0, got n=", n, ", c=", c, ", h=", h,
                           ", w=", w, ", ph=", ph, ", pw=", pw);
  for (int64_t v : {kh, kw, sh, sw, dh, dw})
    if (v < 1) value_error(op, ": kernel (", kh, ", ", kw, "), stride (", sh, ", ", sw,
                           ") and dilation (", dh, ", ", dw, ") must be >= 1");
  // Output size (in + 2 pad - dil (k - 1) - 1) / stride + 1, in checked arithmetic:
  // huge padding or dilation must be a ValueError, not a wrapped size.
  const auto out_size = [op](int64_t in, int64_t pad, int64_t dil, int64_t k, int64_t stride,
                             const char* axis) {
    int64_t padded = 0, span = 0, room = 0;
    if (__builtin_mul_overflow(pad, int64_t{2}, &padded) ||
        __builtin_add_overflow(in, padded, &padded) || __builtin_mul_overflow(dil, k - 1, &span) ||
        __builtin_add_overflow(span, int64_t{1}, &span))
      value_error(op, ": padding ", pad, ", dilation ", dil, " and kernel ", k, " along ", axis,
                  " overflow int64");
    room = padded - span;  // both >= 0: cannot overflow
    if (room < 0)
      value_error(op, ": kernel ", k, " with dilation ", dil, " does not fit the padded input (",
                  padded, ") along ", axis);
    return room / stride + 1;
  };
  const int64_t oh = out_size(h, ph, dh, kh, sh, "height");
  const int64_t ow = out_size(w, pw, dw, kw, sw, "width");
  return ConvShape{n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow};
}

int64_t cols_size(const ConvShape& s, const char* op) {
  int64_t v = 1;
  for (int64_t d : {s.n, s.oh, s.ow, s.c, s.kh, s.kw}) v = checked_mul(v, d, op);
  return v;
}

int64_t image_size(const ConvShape& s, const char* op) {
  return checked_mul(checked_mul(checked_mul(s.n, s.c, op), s.h, op), s.w, op);
}

}  // namespace

void im2col(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  require_same_dtype("im2col", {&a, &out});
  const ConvShape s = conv_shape("im2col", n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw);
  const int64_t total = cols_size(s, "im2col");
  if (a.size() < image_size(s, "im2col") || out.size() < total)
    value_error("im2col: buffers of ", a.size(), " and ", out.size(),
                " elements are smaller than the layout needs (", image_size(s, "im2col"), " and ",
                total, ")");
  const Launch ctx = launch_on("im2col", {&a, &out});
  dispatch<kernel_dtypes::im2col>("im2col", a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (total == 0) return;
    launch_kernel(&im2col_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  a.data<T>(), out.data<T>(), s, total);
    check_launch("im2col_kernel", ctx.stream);
  });
}

void col2im(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  require_same_dtype("col2im", {&a, &out});
  const ConvShape s = conv_shape("col2im", n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw);
  const int64_t total = image_size(s, "col2im");
  if (a.size() < cols_size(s, "col2im") || out.size() < total)
    value_error("col2im: buffers of ", a.size(), " and ", out.size(),
                " elements are smaller than the layout needs (", cols_size(s, "col2im"), " and ",
                total, ")");
  const Launch ctx = launch_on("col2im", {&a, &out});
  dispatch<kernel_dtypes::col2im>("col2im", a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (total == 0) return;
    launch_kernel(&col2im_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  a.data<T>(), out.data<T>(), s, total);
    check_launch("col2im_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
