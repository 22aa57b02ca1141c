// conv_geom.h: the checked geometry of an NCHW convolution, shared by the
// patch kernels (conv.cc) and the per-image GEMM convolution (conv_gemm.cc).
#pragma once

#include <cstdint>

#include "kernels.h"

namespace lamina_cpu {

struct ConvGeom {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

inline ConvGeom conv_geom(const char* op, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                          int64_t dh, int64_t dw) {
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
  // The staged paths hold one zero-padded image: its size must be a valid
  // int64 (a huge padding with a huge stride passes every other check).
  checked_mul(checked_mul(c, h + 2 * ph, op), w + 2 * pw, op);
  return {n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, eh / sh + 1, ew / sw + 1};
}

inline int64_t image_size(const ConvGeom& g, const char* op) {
  return checked_mul(checked_mul(checked_mul(g.n, g.c, op), g.h, op), g.w, op);
}

inline int64_t cols_size(const ConvGeom& g, const char* op) {
  int64_t s = checked_mul(checked_mul(g.n, g.oh, op), g.ow, op);
  return checked_mul(checked_mul(checked_mul(s, g.c, op), g.kh, op), g.kw, op);
}

}  // namespace lamina_cpu
