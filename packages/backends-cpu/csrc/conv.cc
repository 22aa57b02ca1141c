// conv.cc: im2col and its adjoint col2im for NCHW convolution.
//   a   (im2col input) is compact (n, c, h, w);
//   out (im2col output) is compact (n, oh, ow, c, kh, kw), zero where a
//       patch reaches into the padding;
//   col2im sums a (n, oh, ow, c, kh, kw) back into out (n, c, h, w), which it
//   overwrites. oh = (h + 2 ph - dh (kh - 1) - 1) / sh + 1, likewise ow.
#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

struct ConvGeom {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

ConvGeom conv_geom(const char* op, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                   int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                   int64_t dw) {
  for (int64_t x : {n, c, h, w, ph, pw})
    if (x < 0) value_error(op, ": n, c, h, w and padding must be >= 0, got (", n, ", ", c, ", ", h,
                           ", ", w, ") and padding (", ph, ", ", pw, ")");
  for (int64_t x : {kh, kw, sh, sw, dh, dw})
    if (x < 1) value_error(op, ": kernel (", kh, ", ", kw, "), stride (", sh, ", ", sw,
                           ") and dilation (", dh, ", ", dw, ") must be >= 1");
  if (h > (int64_t(1) << 40) || w > (int64_t(1) << 40) || kh > (int64_t(1) << 20) ||
      kw > (int64_t(1) << 20) || ph > (int64_t(1) << 40) || pw > (int64_t(1) << 40) ||
      dh > (int64_t(1) << 20) || dw > (int64_t(1) << 20))
    value_error(op, ": layout values are too large");
  const int64_t eh = h + 2 * ph - dh * (kh - 1) - 1, ew = w + 2 * pw - dw * (kw - 1) - 1;
  if (eh < 0 || ew < 0)
    value_error(op, ": kernel (", kh, ", ", kw, ") with dilation (", dh, ", ", dw,
                ") does not fit the padded input (", h + 2 * ph, ", ", w + 2 * pw, ")");
  return {n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, eh / sh + 1, ew / sw + 1};
}

int64_t image_size(const ConvGeom& g, const char* op) {
  return checked_mul(checked_mul(checked_mul(g.n, g.c, op), g.h, op), g.w, op);
}

int64_t cols_size(const ConvGeom& g, const char* op) {
  int64_t s = checked_mul(checked_mul(g.n, g.oh, op), g.ow, op);
  return checked_mul(checked_mul(checked_mul(s, g.c, op), g.kh, op), g.kw, op);
}

}  // namespace

void im2col(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "im2col";
  require_same_dtype(op, {&out, &a});
  const ConvGeom g = conv_geom(op, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw);
  if (a.size() < image_size(g, op) || out.size() < cols_size(g, op))
    value_error(op, ": buffers of ", a.size(), " and ", out.size(),
                " elements are smaller than the layout");
  dispatch(a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    const int64_t patch = g.c * g.kh * g.kw;
    parallel_for(g.n * g.oh, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.ow * patch)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t ni = t / g.oh, oy = t % g.oh;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          T* d = dst + (t * g.ow + ox) * patch;
          const int64_t x0 = ox * g.sw - g.pw;
          const bool x_inside = x0 >= 0 && x0 + (g.kw - 1) * g.dw < g.w;
          for (int64_t ci = 0; ci < g.c; ++ci) {
            const T* plane = src + (ni * g.c + ci) * g.h * g.w;
            for (int64_t ky = 0; ky < g.kh; ++ky, d += g.kw) {
              const int64_t y = oy * g.sh - g.ph + ky * g.dh;
              if (y < 0 || y >= g.h) {
                for (int64_t kx = 0; kx < g.kw; ++kx) d[kx] = T(0);
                continue;
              }
              const int64_t at = y * g.w + x0;  // may be < 0 when x0 is; used only inside
              if (x_inside) {
                for (int64_t kx = 0; kx < g.kw; ++kx) d[kx] = plane[at + kx * g.dw];
              } else {
                for (int64_t kx = 0; kx < g.kw; ++kx) {
                  const int64_t x = x0 + kx * g.dw;
                  d[kx] = (x >= 0 && x < g.w) ? plane[at + kx * g.dw] : T(0);
                }
              }
            }
          }
        }
      }
    }, 1);
  });
}

void col2im(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "col2im";
  require_same_dtype(op, {&out, &a});
  const ConvGeom g = conv_geom(op, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw);
  if (a.size() < cols_size(g, op) || out.size() < image_size(g, op))
    value_error(op, ": buffers of ", a.size(), " and ", out.size(),
                " elements are smaller than the layout");
  dispatch(a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    const int64_t patch = g.c * g.kh * g.kw;
    // Contributions to an output element are added in (oy, ox, ky, kx) order
    // whichever loop nest runs, and each element has one owning thread.
    // Usually a thread owns whole images and reads their columns once, in
    // order; with fewer images than threads it owns (image, channel) planes.
    auto add_patch = [&](T* plane, const T* s, int64_t oy, int64_t ox) {
      const int64_t x0 = ox * g.sw - g.pw;
      const bool x_inside = x0 >= 0 && x0 + (g.kw - 1) * g.dw < g.w;
      for (int64_t ky = 0; ky < g.kh; ++ky, s += g.kw) {
        const int64_t y = oy * g.sh - g.ph + ky * g.dh;
        if (y < 0 || y >= g.h) continue;
        const int64_t at = y * g.w + x0;  // may be < 0 when x0 is; used only inside
        if (x_inside) {
          for (int64_t kx = 0; kx < g.kw; ++kx) plane[at + kx * g.dw] += s[kx];
        } else {
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t x = x0 + kx * g.dw;
            if (x >= 0 && x < g.w) plane[at + kx * g.dw] += s[kx];
          }
        }
      }
    };
    const int64_t hw = g.h * g.w, khw = g.kh * g.kw;
    if (g.n >= num_threads()) {
      const int64_t work = g.oh * g.ow * patch;
      parallel_for(g.n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, work)),
                   [&](int64_t b, int64_t e) {
        for (int64_t ni = b; ni < e; ++ni) {
          T* image = dst + ni * g.c * hw;
          std::fill(image, image + g.c * hw, T(0));
          const T* s = src + ni * g.oh * g.ow * patch;
          for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox, s += patch)
              for (int64_t ci = 0; ci < g.c; ++ci) add_patch(image + ci * hw, s + ci * khw, oy, ox);
        }
      }, 1);
      return;
    }
    const int64_t work = g.oh * g.ow * khw;
    parallel_for(g.n * g.c, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, work)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t ni = t / g.c, ci = t % g.c;
        T* plane = dst + t * hw;
        std::fill(plane, plane + hw, T(0));
        for (int64_t oy = 0; oy < g.oh; ++oy)
          for (int64_t ox = 0; ox < g.ow; ++ox)
            add_patch(plane, src + ((ni * g.oh + oy) * g.ow + ox) * patch + ci * khw, oy, ox);
      }
    }, 1);
  });
}

}  // namespace lamina_cpu
