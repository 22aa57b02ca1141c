// pool.cc: 2-D max pooling with indices, forward and backward (max_pool2d,
// max_pool2d_backward; float32 and float64, indices int64).
//
// Layout (lamina/pool_checks.h): `planes` compact (H, W) input planes, the
// N*C planes of an NCHW tensor, pooled into compact (OH, OW) planes; indices
// (planes, OH, OW) hold the chosen element's offset y*W + x in its plane.
// The rule is PyTorch CPU's: scan the window's in-image taps in row-major
// order and take a tap when it is greater than the maximum so far or NaN (so
// ties keep the first maximum, a NaN wins and the last NaN stays); padding is
// never a candidate. The backward zeroes each grad_in plane, then adds every
// output gradient at its index in output order (overlapping windows add up),
// the same order as the cuda backend's gather.
//
// Planes run in parallel (threading.h). The common 2x2 stride-2 window has
// its own loop with every tap inside and branch-free selects; GCC does not
// vectorise it (stride-2 loads, int64 index selects), and scalar it already
// beats the composite about 5x and PyTorch CPU about 2x (fwd + bwd, 1 thread).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.h"
#include "lamina/pool_checks.h"
#include "threading.h"

namespace lamina_cpu {

namespace {

using checks::PoolGeometry;

template <class T>
inline bool takes(T v, T best) {
  return v > best || v != v;  // v != v: NaN
}

// The taps [first, last) of a window starting at `start` (stride `d`) that lie in [0, size).
inline void taps_inside(int64_t start, int64_t k, int64_t d, int64_t size, int64_t& first,
                        int64_t& last) {
  first = start < 0 ? (-start + d - 1) / d : 0;
  last = start >= size ? 0 : std::min<int64_t>(k, (size - start + d - 1) / d);
}

template <class T>
void pool_plane(const T* __restrict__ x, T* __restrict__ out, int64_t* __restrict__ idx,
                const PoolGeometry& g) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const int64_t y0 = oy * g.sh - g.ph;
    int64_t i0, i1;
    taps_inside(y0, g.kh, g.dh, g.h, i0, i1);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t x0 = ox * g.sw - g.pw;
      int64_t j0, j1;
      taps_inside(x0, g.kw, g.dw, g.w, j0, j1);
      T best = -std::numeric_limits<T>::infinity();
      int64_t at = -1;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t row = (y0 + i * g.dh) * g.w;
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t k = row + x0 + j * g.dw;
          if (at < 0 || takes(x[k], best)) {
            best = x[k];
            at = k;
          }
        }
      }
      out[oy * g.ow + ox] = best;
      idx[oy * g.ow + ox] = at;
    }
  }
}

// The 2x2 window with stride 2, no padding and no dilation (every tap inside).
template <class T>
void pool_plane_2x2(const T* __restrict__ x, T* __restrict__ out, int64_t* __restrict__ idx,
                    const PoolGeometry& g) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const T* r0 = x + 2 * oy * g.w;
    const T* r1 = r0 + g.w;
    T* o = out + oy * g.ow;
    int64_t* id = idx + oy * g.ow;
    const int64_t base = 2 * oy * g.w;
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      T best = r0[2 * ox];
      int64_t at = base + 2 * ox;
      const T b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
      const bool tb = takes(b, best);
      best = tb ? b : best;
      at = tb ? base + 2 * ox + 1 : at;
      const bool tc = takes(c, best);
      best = tc ? c : best;
      at = tc ? base + g.w + 2 * ox : at;
      const bool td = takes(d, best);
      best = td ? d : best;
      at = td ? base + g.w + 2 * ox + 1 : at;
      o[ox] = best;
      id[ox] = at;
    }
  }
}

PoolGeometry geometry(int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                      int64_t dw) {
  return PoolGeometry{planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw};
}

// Planes per thread chunk: enough window taps per chunk to pay for the threads.
int64_t plane_grain(const PoolGeometry& g) {
  const int64_t work = std::max<int64_t>(1, g.out_plane() * g.kh * g.kw + g.in_plane());
  return std::max<int64_t>(1, kParallelGrain / work);
}

}  // namespace

void max_pool2d(const Array& x, Array& out, Array& indices, int64_t planes, int64_t h,
                int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const char* op = "max_pool2d";
  const PoolGeometry g = geometry(planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw);
  checks::check_max_pool2d(op, g, x.size(), out.size(), x.dtype_str(), out.dtype_str(),
                           indices.dtype_str(), indices.size());
  const bool two_by_two = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 &&
                          dh == 1 && dw == 1 && 2 * oh <= h && 2 * ow <= w;
  dispatch_in<kPoolDtypes>(op, x.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    int64_t* pi = indices.data<int64_t>();
    parallel_for(planes, plane_grain(g), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = px + p * g.in_plane();
        const int64_t at = p * g.out_plane();
        if (two_by_two) pool_plane_2x2(xp, po + at, pi + at, g);
        else pool_plane(xp, po + at, pi + at, g);
      }
    }, 1);
  });
}

void max_pool2d_backward(const Array& grad_out, const Array& indices, Array& grad_in,
                         int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                         int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         int64_t dh, int64_t dw) {
  const char* op = "max_pool2d_backward";
  const PoolGeometry g = geometry(planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw);
  checks::check_max_pool2d(op, g, grad_in.size(), grad_out.size(), grad_in.dtype_str(),
                           grad_out.dtype_str(), indices.dtype_str(), indices.size());
  dispatch_in<kPoolDtypes>(op, grad_out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pg = grad_out.data<T>();
    const int64_t* pi = indices.data<int64_t>();
    T* pd = grad_in.data<T>();
    const int64_t hw = g.in_plane(), ohw = g.out_plane();
    parallel_for(planes, plane_grain(g), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        T* d = pd + p * hw;
        std::fill(d, d + hw, T(0));
        const T* gp = pg + p * ohw;
        const int64_t* ip = pi + p * ohw;
        for (int64_t k = 0; k < ohw; ++k)
          if (ip[k] >= 0 && ip[k] < hw) d[ip[k]] += gp[k];  // -1: a window of padding only
      }
    }, 1);
  });
}

}  // namespace lamina_cpu
