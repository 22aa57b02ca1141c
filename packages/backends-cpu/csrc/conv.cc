// conv.cc: im2col and its adjoint col2im for NCHW convolution.
//   a   (im2col input) is compact (n, c, h, w);
//   out (im2col output) is compact (n, oh, ow, c, kh, kw), zero where a
//       patch reaches into the padding;
//   col2im sums a (n, oh, ow, c, kh, kw) back into out (n, c, h, w), which it
//   overwrites. oh = (h + 2 ph - dh (kh - 1) - 1) / sh + 1, likewise ow.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "conv_geom.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

// A thread's scratch: one zero-padded image (c, h + 2 ph, w + 2 pw).
template <class T>
T* padded_scratch(std::size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// f(ni, staged) for every image ni, whole images per thread, where staged is
// the thread's (C, H + 2ph, W + 2pw) buffer for a zero-padded copy (nullptr
// without padding): the staged paths of im2col and col2im.
template <class T, class F>
void for_images_staged(const ConvGeom& g, F&& f) {
  const int64_t work = g.oh * g.ow * g.c * g.kh * g.kw;
  const auto staged_size = static_cast<std::size_t>(g.c * (g.h + 2 * g.ph) * (g.w + 2 * g.pw));
  parallel_for(g.n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, work)),
               [&](int64_t b, int64_t e) {
    T* staged = g.ph || g.pw ? padded_scratch<T>(staged_size) : nullptr;
    for (int64_t ni = b; ni < e; ++ni) f(ni, staged);
  }, 1);
}

// Calls body(std::integral_constant<int, KW>) with KW = kw when the kernel is
// 1, 3, 5 or 7 wide without dilation (the inner row loops then unroll), else
// KW = 0 (kw and dw read at run time).
template <class F>
void with_kernel_width(const ConvGeom& g, F&& body) {
  if (g.dw == 1 && g.kw == 3) return body(std::integral_constant<int, 3>{});
  if (g.dw == 1 && g.kw == 1) return body(std::integral_constant<int, 1>{});
  if (g.dw == 1 && g.kw == 5) return body(std::integral_constant<int, 5>{});
  if (g.dw == 1 && g.kw == 7) return body(std::integral_constant<int, 7>{});
  body(std::integral_constant<int, 0>{});
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
  dispatch_float(op, a.dtype(), [&](auto tag) { with_kernel_width(g, [&](auto kw_tag) {
    using T = elem_t<decltype(tag)>;
    constexpr int KW = decltype(kw_tag)::value;
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    const int64_t patch = g.c * g.kh * g.kw;
    if (g.n >= num_threads() && KW > 0) {
      // Whole images per thread, each staged into a zero-padded copy (9x
      // smaller than its columns for 3x3), so every patch row lies inside
      // it: no bounds checks, KW-wide copies.
      const int64_t W = g.w + 2 * g.pw, HW = (g.h + 2 * g.ph) * W;
      for_images_staged<T>(g, [&](int64_t ni, T* staged) {
        const bool pad = staged != nullptr;
        const T* image = src + ni * g.c * g.h * g.w;
        if (pad) {
          std::fill(staged, staged + g.c * HW, T(0));
          for (int64_t ci = 0; ci < g.c; ++ci)
            for (int64_t y = 0; y < g.h; ++y)
              std::memcpy(staged + ci * HW + (y + g.ph) * W + g.pw,
                          image + (ci * g.h + y) * g.w, sizeof(T) * g.w);
          image = staged;
        }
        T* d = dst + ni * g.oh * g.ow * patch;
        // A piece of KW elements moves as kWide, KW rounded up to 16 bytes (3
        // floats: one 16-byte move, not three scalar ones); with the locals
        // below, 3 channels on 32 x 32 (batch 32) went from 0.48 to 0.26 ms on
        // Zen 3, 1 channel on 28 x 28 (batch 64) from 0.27 to 0.12 ms. The extra
        // elements land where the next piece goes, which is written right
        // after; a row's last column copies exactly, so nothing past this
        // image's columns is written, and kWide - KW <= stride keeps every
        // read inside the input row.
        constexpr int kWide = int((KW * sizeof(T) + 15) / 16 * 16 / sizeof(T));
        // Locals, not g's fields: the moves store through char pointers, which
        // may alias g, so its fields would be reloaded at every piece.
        const int64_t oh = g.oh, ow = g.ow, c = g.c, kh = g.kh, sy = g.sh * W, sx = g.sw;
        const int64_t ky_step = g.dh * W;
        const bool wide_ok = kWide - KW <= sx;
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            const T* col = image + oy * sy + ox * sx;
            if (wide_ok && ox + 1 < ow) {
              for (int64_t ci = 0; ci < c; ++ci, col += HW) {
                const T* row = col;
                for (int64_t ky = 0; ky < kh; ++ky, row += ky_step, d += KW)
                  std::memcpy(d, row, kWide * sizeof(T));
              }
              continue;
            }
            for (int64_t ci = 0; ci < c; ++ci, col += HW) {
              const T* row = col;
              for (int64_t ky = 0; ky < kh; ++ky, row += ky_step, d += KW)
                for (int kx = 0; kx < KW; ++kx) d[kx] = row[kx];
            }
          }
      });
      return;
    }
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
              if (KW > 0 && x_inside) {
                for (int kx = 0; kx < KW; ++kx) d[kx] = plane[at + kx];
              } else if (x_inside) {
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
  }); });
}

void col2im(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "col2im";
  require_same_dtype(op, {&out, &a});
  const ConvGeom g = conv_geom(op, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw);
  if (a.size() < cols_size(g, op) || out.size() < image_size(g, op))
    value_error(op, ": buffers of ", a.size(), " and ", out.size(),
                " elements are smaller than the layout");
  dispatch_float(op, a.dtype(), [&](auto tag) { with_kernel_width(g, [&](auto kw_tag) {
    using T = elem_t<decltype(tag)>;
    constexpr int KW = decltype(kw_tag)::value;
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
        if (KW > 0 && x_inside) {
          for (int kx = 0; kx < KW; ++kx) plane[at + kx] += s[kx];
        } else if (x_inside) {
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
    if (g.n >= num_threads() && KW > 0) {
      // im2col's staging in reverse: patches are summed into a zero-padded
      // image, in the same (oy, ox, ky, kx) order, and its interior copied out.
      const int64_t W = g.w + 2 * g.pw, HW = (g.h + 2 * g.ph) * W;
      for_images_staged<T>(g, [&](int64_t ni, T* staged) {
        const bool pad = staged != nullptr;
        T* image = pad ? staged : dst + ni * g.c * hw;
        std::fill(image, image + g.c * HW, T(0));
        const T* s = src + ni * g.oh * g.ow * patch;
        const int64_t oh = g.oh, ow = g.ow, c = g.c, kh = g.kh, sy = g.sh * W, sx = g.sw;
        const int64_t ky_step = g.dh * W;  // locals, as in im2col
        // The 4-lane adds below load 16 bytes that the same ky's piece of the
        // previous column stored 4 bytes lower: with fewer than 8 pieces
        // between them that load waits for the store to retire (a failed
        // store forward), and 1 channel ran slower than the scalar adds.
        // 3 channels on 32 x 32 (9 pieces), batch 32: 0.50 -> 0.35 ms on Zen 3.
        [[maybe_unused]] const bool wide = c * kh >= 8;
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            if constexpr (std::is_same_v<T, float> && KW == 3) {
              if (wide && ox + 1 < ow) {
                // A 3-float piece as one 4-lane add, the 4th lane adding +0: a
                // partial sum started from +0 is never -0, so that lane keeps
                // its bits. Not the last column: the 4th value read is the
                // next piece's and the 4th element the padded row's next.
                using V4 = float __attribute__((vector_size(16)));
                using M4 = int32_t __attribute__((vector_size(16)));
                const M4 keep3 = {-1, -1, -1, 0};  // a mask, not a product: inf * 0 is NaN
                for (int64_t ci = 0; ci < c; ++ci) {
                  T* row = image + ci * HW + oy * sy + ox * sx;
                  for (int64_t ky = 0; ky < kh; ++ky, row += ky_step, s += KW) {
                    V4 r, v;
                    std::memcpy(&r, row, sizeof r);
                    std::memcpy(&v, s, sizeof v);
                    r += reinterpret_cast<V4>(reinterpret_cast<M4>(v) & keep3);
                    std::memcpy(row, &r, sizeof r);
                  }
                }
                continue;
              }
            }
            for (int64_t ci = 0; ci < c; ++ci) {
              T* row = image + ci * HW + oy * sy + ox * sx;
              for (int64_t ky = 0; ky < kh; ++ky, row += ky_step, s += KW)
                for (int kx = 0; kx < KW; ++kx) row[kx] += s[kx];
            }
          }
        if (pad)
          for (int64_t ci = 0; ci < g.c; ++ci)
            for (int64_t y = 0; y < g.h; ++y)
              std::memcpy(dst + (ni * g.c + ci) * hw + y * g.w,
                          staged + ci * HW + (y + g.ph) * W + g.pw, sizeof(T) * g.w);
      });
      return;
    }
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
  }); });
}

}  // namespace lamina_cpu
