// conv_gemm.cc: NCHW convolution (groups 1) as one GEMM per image, forward
// and both backward products, without a batch-sized column matrix:
//   conv2d                  out (n, o, oh, ow) = W (o, T) @ rows(x_i) (T, P)
//   conv2d_backward_input   dx_i = col2im(W^T (T, o) @ g_i (o, P))
//   conv2d_backward_weight  dW (o, T) = sum_i g_i (o, P) @ rows(x_i)^T
// with T = c * kh * kw taps and P = oh * ow pixels; x, g, W and the outputs
// compact, W laid out (o, c, kh, kw), outputs overwritten.
//
// rows(x_i) is one image's taps as rows: row (ci, ky, kx) holds the input
// pixel that tap reads for every output pixel, in output order (0 in the
// padding). Built per image, it stays in the core's L2 between its GEMM and
// the patch copy (or sum) beside it; the im2col path writes every image's
// columns out, 9x the activation for 3x3 filters, and reads them back. Each
// row is a shifted copy of input rows, so stride 1 copies and sums contiguous
// runs. MNIST's 32 -> 64 channel 3x3 convolution on 26 x 26, batch 64, fwd +
// bwd: see the GEMM guide (docs/guides/gemm.md) for the figures.
//
// Images run in parallel (whole images per thread); the weight gradient
// splits the input channels instead (each thread owns its taps' rows of dW
// and sums over every image in order), so no thread's partial sums are added
// to another's and dW is the same at any thread count.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "conv_geom.h"
#include "gemm.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

// The output positions p with 0 <= p * s - pad + off < size, as [lo, hi).
struct Span {
  int64_t lo, hi;
};

Span inside(int64_t size, int64_t out, int64_t s, int64_t pad, int64_t off) {
  const int64_t shift = pad - off, top = size - 1 + shift;  // p * s >= shift, p * s <= top
  const int64_t hi = top < 0 ? 0 : std::min(out, top / s + 1);
  const int64_t lo = shift > 0 ? (shift + s - 1) / s : 0;
  return {std::min(lo, hi), hi};
}

// A thread's scratch buffer `slot` (0: an image's rows, 1: dW's partial sums),
// grown on demand and kept; apart from the GEMM's own (gemm.h scratch_bytes).
template <class T>
T* conv_scratch(int slot, int64_t n) {
  thread_local std::vector<T> buf[2];
  if (buf[slot].size() < static_cast<std::size_t>(n)) buf[slot].resize(static_cast<std::size_t>(n));
  return buf[slot].data();
}

// rows (channels [c0, c1) of one image) = its taps as rows of P pixels.
template <class T>
void image_rows(const ConvGeom& g, const T* image, int64_t c0, int64_t c1, T* rows) {
  const int64_t ow = g.ow, p = g.oh * g.ow;
  for (int64_t ci = c0; ci < c1; ++ci)
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const Span ys = inside(g.h, g.oh, g.sh, g.ph, ky * g.dh);
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        T* r = rows + (((ci - c0) * g.kh + ky) * g.kw + kx) * p;
        const Span xs = inside(g.w, ow, g.sw, g.pw, kx * g.dw);
        const int64_t x0 = kx * g.dw - g.pw;  // the input column of output column 0
        std::fill(r, r + ys.lo * ow, T(0));
        for (int64_t oy = ys.lo; oy < ys.hi; ++oy) {
          T* d = r + oy * ow;
          const T* src = image + (ci * g.h + oy * g.sh - g.ph + ky * g.dh) * g.w;
          std::fill(d, d + xs.lo, T(0));
          if (g.sw == 1) {
            std::memcpy(d + xs.lo, src + xs.lo + x0, sizeof(T) * (xs.hi - xs.lo));
          } else {
            for (int64_t ox = xs.lo; ox < xs.hi; ++ox) d[ox] = src[ox * g.sw + x0];
          }
          std::fill(d + xs.hi, d + ow, T(0));
        }
        std::fill(r + ys.hi * ow, r + p, T(0));
      }
    }
}

// dst[y * ldd + x] += src[y * lds + x] for y < rows, x < cols. Out of line:
// inlined into rows_to_image, which parallel_for's body inlines in turn, the
// loop spilled to the stack, and differently on the serial path and on the
// path of parts (a 64-image backward beside a busy core ran 12% slower as two
// parts one after the other than as one part).
template <class T>
[[gnu::noinline]] void add_block(T* __restrict dst, int64_t ldd, const T* __restrict src,
                                 int64_t lds, int64_t rows, int64_t cols) {
  for (int64_t y = 0; y < rows; ++y, dst += ldd, src += lds)
    for (int64_t x = 0; x < cols; ++x) dst[x] += src[x];
}

// The adjoint of image_rows over every channel: image (zeroed here) = the sum
// of each row's pixels at the input pixels they were read from, taps in
// (ci, ky, kx) order.
template <class T>
void rows_to_image(const ConvGeom& g, const T* rows, T* __restrict image) {
  const int64_t ow = g.ow, p = g.oh * g.ow;
  std::fill(image, image + g.c * g.h * g.w, T(0));
  for (int64_t ci = 0; ci < g.c; ++ci)
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const Span ys = inside(g.h, g.oh, g.sh, g.ph, ky * g.dh);
      if (ys.lo >= ys.hi) continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const T* r = rows + ((ci * g.kh + ky) * g.kw + kx) * p;
        const Span xs = inside(g.w, ow, g.sw, g.pw, kx * g.dw);
        if (xs.lo >= xs.hi) continue;
        const int64_t x0 = kx * g.dw - g.pw;
        T* dst = image + (ci * g.h + ys.lo * g.sh - g.ph + ky * g.dh) * g.w;
        if (g.sw == 1) {
          add_block(dst + xs.lo + x0, g.sh * g.w, r + ys.lo * ow + xs.lo, ow, ys.hi - ys.lo,
                    xs.hi - xs.lo);
          continue;
        }
        for (int64_t oy = ys.lo; oy < ys.hi; ++oy, dst += g.sh * g.w) {
          const T* s = r + oy * ow;
          for (int64_t ox = xs.lo; ox < xs.hi; ++ox) dst[ox * g.sw + x0] += s[ox];
        }
      }
    }
}

// The checked geometry and sizes shared by the three kernels: x (or dx) holds
// the images, w the filters, y (out or g) the output images.
struct ConvGemm {
  ConvGeom g;
  int64_t o, taps, pixels;
};

ConvGemm conv_gemm_geom(const char* op, const Array& x, const Array& w, const Array& y,
                        int64_t n, int64_t c, int64_t h, int64_t wd, int64_t o, int64_t kh,
                        int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                        int64_t dw) {
  require_same_dtype(op, {&x, &w, &y});
  const ConvGeom g = conv_geom(op, n, c, h, wd, kh, kw, sh, sw, ph, pw, dh, dw);
  if (o < 0) value_error(op, ": o (output channels) must be >= 0, got ", o);
  const int64_t taps = checked_mul(checked_mul(c, kh, op), kw, op);
  const int64_t pixels = checked_mul(g.oh, g.ow, op);
  if (x.size() < image_size(g, op) || w.size() < checked_mul(o, taps, op) ||
      y.size() < checked_mul(checked_mul(n, o, op), pixels, op))
    value_error(op, ": buffers of ", x.size(), ", ", w.size(), " and ", y.size(),
                " elements are smaller than the layout");
  // One image's rows must be a valid size (a huge channel count passes the rest).
  checked_mul(taps, pixels, op);
  return {g, o, taps, pixels};
}

// Images per part: whole images, enough work per part to wake a worker.
int64_t image_grain(const ConvGemm& k) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, k.o * k.taps * k.pixels));
}

}  // namespace

void conv2d(const Array& x, const Array& w, Array& out, int64_t n, int64_t c, int64_t h,
            int64_t wd, int64_t o, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
            int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "conv2d";
  const ConvGemm k = conv_gemm_geom(op, x, w, out, n, c, h, wd, o, kh, kw, sh, sw, ph, pw, dh, dw);
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const ConvGeom& g = k.g;
    const T* src = x.data<T>();
    const T* wt = w.data<T>();
    T* dst = out.data<T>();
    if (k.taps == 0) return std::fill(dst, dst + n * k.o * k.pixels, T(0));
    if (k.o == 0) return;
    parallel_for(n, image_grain(k), [&](int64_t b, int64_t e) {
      T* rows = conv_scratch<T>(0, k.taps * k.pixels);
      for (int64_t ni = b; ni < e; ++ni) {
        image_rows(g, src + ni * g.c * g.h * g.w, 0, g.c, rows);
        gemm_on_thread<T>(wt, k.taps, 1, rows, k.pixels, 1, dst + ni * k.o * k.pixels, k.o,
                          k.taps, k.pixels, false);
      }
    }, 1);
  });
}

void conv2d_backward_input(const Array& grad, const Array& w, Array& dx, int64_t n, int64_t c,
                           int64_t h, int64_t wd, int64_t o, int64_t kh, int64_t kw, int64_t sh,
                           int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "conv2d_backward_input";
  const ConvGemm k = conv_gemm_geom(op, dx, w, grad, n, c, h, wd, o, kh, kw, sh, sw, ph, pw, dh,
                                    dw);
  dispatch_float(op, dx.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const ConvGeom& g = k.g;
    const T* gy = grad.data<T>();
    const T* wt = w.data<T>();
    T* dst = dx.data<T>();
    const int64_t image = g.c * g.h * g.w;
    if (k.o == 0 || k.taps == 0) return std::fill(dst, dst + n * image, T(0));
    parallel_for(n, image_grain(k), [&](int64_t b, int64_t e) {
      T* rows = conv_scratch<T>(0, k.taps * k.pixels);
      for (int64_t ni = b; ni < e; ++ni) {
        // rows (taps, P) = W^T (taps, o) @ g_i (o, P)
        gemm_on_thread<T>(wt, 1, k.taps, gy + ni * k.o * k.pixels, k.pixels, 1, rows, k.taps, k.o,
                          k.pixels, false);
        rows_to_image(g, rows, dst + ni * image);
      }
    }, 1);
  });
}

void conv2d_backward_weight(const Array& x, const Array& grad, Array& dw_out, int64_t n,
                            int64_t c, int64_t h, int64_t wd, int64_t o, int64_t kh, int64_t kw,
                            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                            int64_t dw) {
  const char* op = "conv2d_backward_weight";
  const ConvGemm k = conv_gemm_geom(op, x, dw_out, grad, n, c, h, wd, o, kh, kw, sh, sw, ph, pw,
                                    dh, dw);
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const ConvGeom& g = k.g;
    const T* src = x.data<T>();
    const T* gy = grad.data<T>();
    T* dst = dw_out.data<T>();
    const int64_t khw = g.kh * g.kw, image = g.c * g.h * g.w;
    if (k.o == 0 || k.taps == 0) return;
    if (n == 0 || k.pixels == 0) return std::fill(dst, dst + k.o * k.taps, T(0));
    const int64_t per_channel = n * khw * k.pixels * k.o;
    // Each part packs every image's gradient again: split for the free cores only.
    parallel_for_free(g.c, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_channel)),
                      [&](int64_t c0, int64_t c1) {
      const int64_t t0 = c0 * khw, tt = (c1 - c0) * khw;
      T* rows = conv_scratch<T>(0, tt * k.pixels);
      T* acc = conv_scratch<T>(1, tt * k.o);  // dW^T's rows [t0, t0 + tt): (tt, o)
      // Every image adds into a zeroed acc: the GEMM's accumulating path sums a
      // row the same way at any row count tt, where its overwriting paths for a
      // first image differ with tt (and so would dW with the thread count).
      std::fill(acc, acc + tt * k.o, T(0));
      for (int64_t ni = 0; ni < n; ++ni) {
        image_rows(g, src + ni * image, c0, c1, rows);
        // acc (tt, o) += rows (tt, P) @ g_i^T (P, o)
        gemm_on_thread<T>(rows, k.pixels, 1, gy + ni * k.o * k.pixels, 1, k.pixels, acc, tt,
                          k.pixels, k.o, true);
      }
      for (int64_t oi = 0; oi < k.o; ++oi)
        for (int64_t t = 0; t < tt; ++t) dst[oi * k.taps + t0 + t] = acc[t * k.o + oi];
    }, 1);
  });
}

}  // namespace lamina_cpu
