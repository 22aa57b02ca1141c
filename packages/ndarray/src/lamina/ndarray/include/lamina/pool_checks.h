// lamina/pool_checks.h: the geometry of the max-pool kernels (max_pool2d,
// max_pool2d_backward) and the argument checks every compiled backend makes
// before they touch memory; header-only C++17 beside kernel_checks.h, so it
// compiles under g++, nvcc (host code) and the HIP-CPU emulated build.
//
// Layout: `planes` compact (H, W) images (the N*C planes of an NCHW tensor),
// pooled into compact (OH, OW) planes; output (oy, ox) reads input rows
// oy*sh - ph + i*dh for i < kh and columns ox*sw - pw + j*dw for j < kw,
// those outside the image being padding (never chosen). indices hold the
// chosen element's flat offset y*W + x within its plane (PyTorch's
// return_indices), -1 for a window that reads only padding.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "lamina/kernel_checks.h"

namespace lamina::checks {

struct PoolGeometry {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;

  int64_t in_plane() const { return h * w; }
  int64_t out_plane() const { return oh * ow; }
};

// ValueError naming op unless sizes and padding are >= 0, kernel, stride and
// dilation >= 1, and x (planes*H*W), out and indices (planes*OH*OW) are large
// enough; TypeError unless indices are int64 (idx_dtype) and x and out share a
// dtype (the backend checks which floats it takes).
inline void check_max_pool2d(const char* op, const PoolGeometry& g, int64_t x_size,
                             int64_t out_size, const std::string& x_dtype,
                             const std::string& out_dtype, const std::string& idx_dtype,
                             int64_t idx_size) {
  if (idx_dtype != "int64") throw TypeError(cat(op, ": indices must be int64, got ", idx_dtype));
  if (x_dtype != out_dtype)
    throw TypeError(cat(op, ": input and output must have one dtype, got ", x_dtype, " and ",
                        out_dtype));
  using Named = std::initializer_list<std::pair<const char*, int64_t>>;
  for (auto [what, v] : Named{{"planes", g.planes}, {"h", g.h}, {"w", g.w}, {"oh", g.oh},
                              {"ow", g.ow}, {"ph", g.ph}, {"pw", g.pw}})
    require_nonneg(op, what, v);
  for (auto [what, v] : Named{{"kh", g.kh}, {"kw", g.kw}, {"sh", g.sh}, {"sw", g.sw},
                              {"dh", g.dh}, {"dw", g.dw}})
    if (v < 1) value_error(op, ": ", what, " must be >= 1, got ", v);
  const int64_t in_need = checked_mul(g.planes, checked_mul(g.h, g.w, op), op);
  const int64_t out_need = checked_mul(g.planes, checked_mul(g.oh, g.ow, op), op);
  const char* names[] = {"input", "output", "indices"};
  const int64_t sizes[] = {x_size, out_size, idx_size};
  const int64_t needs[] = {in_need, out_need, out_need};
  for (int k = 0; k < 3; ++k)
    if (sizes[k] < needs[k])
      value_error(op, ": ", names[k], " has ", sizes[k], " elements, ", g.planes, " planes of ",
                  k ? g.oh : g.h, "x", k ? g.ow : g.w, " need ", needs[k]);
}

}  // namespace lamina::checks
