// strided.cc: strided access: compact (gather a view into a compact buffer),
// ewise_setitem / scalar_setitem (scatter into a view) and the validation of
// a (shape, strides, offset) view against its buffer.
//
// Every view is first checked (the lowest and highest reachable element must
// lie inside the buffer) and then coalesced: size-1 dims are dropped and
// adjacent dims that walk memory like one dim are merged. The copy then takes
// the fastest path that fits: one memcpy, memcpy per contiguous row, a
// blocked 2-D transpose (stride 1 on the second-to-last dim), a fill per row
// (broadcast, stride 0), or a strided loop per row.
#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "threading.h"
#include "transpose4.h"

namespace lamina_cpu {
namespace {

struct View {
  Shape shape, strides;
  int64_t offset = 0, size = 0;
};

View check_view(const char* op, int64_t buffer_size, const Shape& shape, const Shape& strides,
                int64_t offset) {
  if (shape.size() != strides.size())
    value_error(op, ": shape ", shape_str(shape), " and strides ", shape_str(strides),
                " differ in length");
  View v;
  v.size = checked_prod(shape, op);
  v.offset = offset;
  if (v.size == 0) return v;
  int64_t lo = offset, hi = offset;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    int64_t reach = checked_mul(strides[k], shape[k] - 1, op);
    (reach < 0 ? lo : hi) = checked_add(reach < 0 ? lo : hi, reach, op);
  }
  if (lo < 0 || hi >= buffer_size)
    value_error(op, ": view (shape ", shape_str(shape), ", strides ", shape_str(strides),
                ", offset ", offset, ") reaches elements ", lo, "..", hi, " of a buffer of ",
                buffer_size);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!v.shape.empty() && v.strides.back() == strides[k] * shape[k]) {
      v.shape.back() *= shape[k];
      v.strides.back() = strides[k];
    } else {
      v.shape.push_back(shape[k]);
      v.strides.push_back(strides[k]);
    }
  }
  if (v.shape.empty()) {
    v.shape.push_back(1);
    v.strides.push_back(1);
  }
  return v;
}

// Calls f(row, pos) for rows [rb, re) of the view's leading dims (all but the
// last), where pos is the buffer position of the row's first element.
template <class F>
void for_rows(const View& v, int64_t rb, int64_t re, F&& f) {
  const int lead = static_cast<int>(v.shape.size()) - 1;
  int64_t idx[64] = {0};
  int64_t pos = v.offset, rem = rb;
  for (int k = lead - 1; k >= 0; --k) {
    idx[k] = rem % v.shape[k];
    rem /= v.shape[k];
    pos += idx[k] * v.strides[k];
  }
  for (int64_t r = rb; r < re; ++r) {
    f(r, pos);
    for (int k = lead - 1; k >= 0; --k) {
      pos += v.strides[k];
      if (++idx[k] < v.shape[k]) break;
      pos -= v.strides[k] * v.shape[k];
      idx[k] = 0;
    }
  }
}

constexpr int64_t kTile = 32;

// One 8x8 block of a transposed copy through a register-sized buffer: eight
// contiguous runs are read and eight are written, so large power-of-two
// strides touch 8 cache lines per side instead of thrashing one cache set.
template <class T, bool Gather>
inline void transpose8(T* buf, T* flat, int64_t r0, int64_t c0, int64_t C, int64_t s) {
#if defined(LAMINA_HAS_TRANSPOSE4)
  if constexpr (sizeof(T) == 4) {
    // Four 4x4 register transposes (three times the speed of the copy below).
    for (int i = 0; i < 8; i += 4)
      for (int j = 0; j < 8; j += 4) {
        T* b = buf + r0 + i + (c0 + j) * s;  // buf(c, r): row c, stride s
        T* f = flat + (r0 + i) * C + c0 + j;  // flat(r, c): row r, stride C
        if constexpr (Gather) transpose4x4(b, s, f, C);
        else transpose4x4(f, C, b, s);
      }
    return;
  }
#endif
  T tmp[8][8];
  if constexpr (Gather) {
    for (int c = 0; c < 8; ++c)
      for (int r = 0; r < 8; ++r) tmp[r][c] = buf[r0 + r + (c0 + c) * s];
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) flat[(r0 + r) * C + c0 + c] = tmp[r][c];
  } else {
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) tmp[c][r] = flat[(r0 + r) * C + c0 + c];
    for (int c = 0; c < 8; ++c)
      for (int r = 0; r < 8; ++r) buf[r0 + r + (c0 + c) * s] = tmp[c][r];
  }
}

// Transposed layout: dims (..., R, C) with strides (..., 1, s). Gather means
// flat[r*C + c] = buf[r + c*s]; scatter is the reverse. Tiles of 32x32 keep
// both sides in cache.
template <class T, bool Gather>
void copy_transposed(T* buf, T* flat, const View& v) {
  const int d = static_cast<int>(v.shape.size());
  const int64_t R = v.shape[d - 2], C = v.shape[d - 1], s = v.strides[d - 1];
  View outer;
  outer.shape.assign(v.shape.begin(), v.shape.end() - 2);
  outer.strides.assign(v.strides.begin(), v.strides.end() - 2);
  outer.shape.push_back(1);
  outer.strides.push_back(1);
  outer.offset = v.offset;
  const int64_t batches = checked_prod(outer.shape, "compact");
  const int64_t rt = (R + kTile - 1) / kTile, ct = (C + kTile - 1) / kTile;
  const int64_t tiles = batches * rt * ct;
  parallel_for(tiles, std::max<int64_t>(1, kCopyGrain / (kTile * kTile)), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      int64_t bi = t / (rt * ct), r0 = (t / ct) % rt * kTile, c0 = t % ct * kTile;
      int64_t base = 0;
      for_rows(outer, bi, bi + 1, [&](int64_t, int64_t pos) { base = pos; });
      T* f = flat + bi * R * C;
      const int64_t r1 = std::min(R, r0 + kTile), c1 = std::min(C, c0 + kTile);
      // 8x8 blocks cover the tile but for its last r1 % 8 rows and c1 % 8 columns
      // (a 16-channel NCHW <-> NHWC transpose has 32x16 tiles: all blocks).
      const int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = c0 + (c1 - c0) / 8 * 8;
      for (int64_t rb = r0; rb < r8; rb += 8)
        for (int64_t cb = c0; cb < c8; cb += 8) transpose8<T, Gather>(buf + base, f, rb, cb, C, s);
      auto one = [&](int64_t r, int64_t c) {
        if constexpr (Gather) f[r * C + c] = buf[base + r + c * s];
        else buf[base + r + c * s] = f[r * C + c];
      };
      for (int64_t r = r0; r < r8; ++r)
        for (int64_t c = c8; c < c1; ++c) one(r, c);
      for (int64_t r = r8; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) one(r, c);
    }
  }, 1);
}

template <class T, bool Gather>
void strided_copy(T* buf, T* flat, const View& v) {
  if (v.size == 0) return;
  const int d = static_cast<int>(v.shape.size());
  const int64_t L = v.shape[d - 1], sL = v.strides[d - 1];
  if (d == 1 && sL == 1) {
    T* src = Gather ? buf + v.offset : flat;
    T* dst = Gather ? flat : buf + v.offset;
    parallel_for(L, 1 << 18, [&](int64_t b, int64_t e) {
      std::memcpy(dst + b, src + b, sizeof(T) * (e - b));
    });
    return;
  }
  if (d >= 2 && sL != 1 && v.strides[d - 2] == 1 && v.shape[d - 2] >= 4 && L >= 4) {
    copy_transposed<T, Gather>(buf, flat, v);
    return;
  }
  const int64_t rows = v.size / L;
  const int64_t grain = std::max<int64_t>(1, kCopyGrain / L);
  parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    for_rows(v, rb, re, [&](int64_t r, int64_t pos) {
      T* f = flat + r * L;
      T* p = buf + pos;
      if (sL == 1) {
        if constexpr (Gather) std::memcpy(f, p, sizeof(T) * L);
        else std::memcpy(p, f, sizeof(T) * L);
      } else if (Gather && sL == 0) {
        const T x = *p;
        for (int64_t i = 0; i < L; ++i) f[i] = x;
      } else {
        for (int64_t i = 0; i < L; ++i) {
          if constexpr (Gather) f[i] = p[i * sL];
          else p[i * sL] = f[i];
        }
      }
    });
  }, 1);
}

template <class T>
void strided_fill(T* buf, T value, const View& v) {
  if (v.size == 0) return;
  const int d = static_cast<int>(v.shape.size());
  const int64_t L = v.shape[d - 1], sL = v.strides[d - 1];
  const int64_t rows = v.size / L;
  parallel_for(rows, std::max<int64_t>(1, kCopyGrain / L), [&](int64_t rb, int64_t re) {
    for_rows(v, rb, re, [&](int64_t, int64_t pos) {
      T* p = buf + pos;
      if (sL == 1) {
        for (int64_t i = 0; i < L; ++i) p[i] = value;
      } else {
        for (int64_t i = 0; i < L; ++i) p[i * sL] = value;
      }
    });
  }, 1);
}

void check_rank(const char* op, const Shape& shape) {
  if (shape.size() > 60) value_error(op, ": at most 60 dimensions are supported, got ", shape.size());
}

}  // namespace

int64_t check_view_bounds(const char* op, int64_t buffer_size, const Shape& shape,
                          const Shape& strides, int64_t offset) {
  check_rank(op, shape);
  return check_view(op, buffer_size, shape, strides, offset).size;
}

void gather_view(const Array& a, void* dst, const Shape& shape, const Shape& strides,
                 int64_t offset, const char* op) {
  check_rank(op, shape);
  View v = check_view(op, a.size(), shape, strides, offset);
  dispatch(a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    strided_copy<T, true>(const_cast<T*>(a.data<T>()), static_cast<T*>(dst), v);
  });
}

void compact(const Array& a, Array& out, const Shape& shape, const Shape& strides, int64_t offset) {
  check_rank("compact", shape);
  require_same_dtype("compact", {&out, &a});
  View v = check_view("compact", a.size(), shape, strides, offset);
  if (out.size() < v.size)
    value_error("compact: out has ", out.size(), " elements, view has ", v.size);
  dispatch(a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    strided_copy<T, true>(const_cast<T*>(a.data<T>()), out.data<T>(), v);
  });
}

void ewise_setitem(const Array& a, Array& out, const Shape& shape, const Shape& strides,
                   int64_t offset) {
  check_rank("ewise_setitem", shape);
  require_same_dtype("ewise_setitem", {&out, &a});
  View v = check_view("ewise_setitem", out.size(), shape, strides, offset);
  if (a.size() < v.size)
    value_error("ewise_setitem: source has ", a.size(), " elements, view has ", v.size);
  dispatch(a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    strided_copy<T, false>(out.data<T>(), const_cast<T*>(a.data<T>()), v);
  });
}

void scalar_setitem(int64_t size, py::handle value, Array& out, const Shape& shape,
                    const Shape& strides, int64_t offset) {
  check_rank("scalar_setitem", shape);
  View v = check_view("scalar_setitem", out.size(), shape, strides, offset);
  if (v.size != size)
    value_error("scalar_setitem: size ", size, " != prod(shape ", shape_str(shape), ")");
  dispatch_in<kAllDtypes>("scalar_setitem", out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    strided_fill<T>(out.data<T>(), scalar_as<T>(value, "scalar_setitem"), v);
  });
}

}  // namespace lamina_cpu
