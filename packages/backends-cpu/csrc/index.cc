// index.cc: gather along an axis, its adjoint scatter-add and the copy into
// selected rows (item assignment), with int64
// index buffers. `a` is viewed as compact (outer, axis_size, inner); indices
// are range-checked (IndexError naming the index and the axis size) before
// any element moves.
#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

void check_indices(const char* op, const Array& buf, const Array& idx, int64_t outer,
                   int64_t axis_size, int64_t inner) {
  checks::check_index_layout(op, buf.size(), idx.dtype_str(), outer, axis_size, inner);
  const int64_t n = idx.size();
  checked_mul(outer, n, op);  // the (outer, n) loop of both kernels, even when inner == 0
  if (n == 0) return;
  const int64_t* p = idx.data<int64_t>();
  int64_t lo = p[0], hi = p[0];
  for (int64_t j = 1; j < n; ++j) {
    lo = std::min(lo, p[j]);
    hi = std::max(hi, p[j]);
  }
  if (lo < 0 || hi >= axis_size)
    throw IndexError(cat(op, ": index ", lo < 0 ? lo : hi, " is out of range for an axis of size ",
                         axis_size));
}

// Checks of a scatter (index_scatter_add, index_copy): a (outer, n, inner)
// into out (outer, axis_size, inner) at the n entries of idx; returns n.
int64_t check_scatter(const char* op, const Array& a, const Array& idx, const Array& out,
                      int64_t outer, int64_t axis_size, int64_t inner) {
  require_same_dtype(op, {&out, &a});
  check_indices(op, out, idx, outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t need = checked_mul(checked_mul(outer, n, op), inner, op);
  if (a.size() < need) value_error(op, ": source has ", a.size(), " elements, expected ", need);
  return n;
}

}  // namespace

void index_gather(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                  int64_t inner) {
  const char* op = "index_gather";
  require_same_dtype(op, {&out, &a});
  check_indices(op, a, idx, outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t need = checked_mul(checked_mul(outer, n, op), inner, op);
  if (out.size() != need) value_error(op, ": out has ", out.size(), " elements, expected ", need);
  dispatch_in<kAllDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = a.data<T>();
    const int64_t* ix = idx.data<int64_t>();
    T* dst = out.data<T>();
    parallel_for(outer * n, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / n, j = t % n;
        const T* s = src + (o * axis_size + ix[j]) * inner;
        T* d = dst + t * inner;
        if (inner == 1) *d = *s;
        else std::memcpy(d, s, sizeof(T) * inner);
      }
    }, 1);
  });
}

void index_scatter_add(const Array& a, const Array& idx, Array& out, int64_t outer,
                       int64_t axis_size, int64_t inner) {
  const int64_t n = check_scatter("index_scatter_add", a, idx, out, outer, axis_size, inner);
  dispatch_in<kAllDtypes>("index_scatter_add", a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = a.data<T>();
    const int64_t* ix = idx.data<int64_t>();
    T* dst = out.data<T>();
    // Repeated indices collide across j, so threads split outer (or, with one
    // outer row, column blocks of inner); each output element has one owner
    // and sums its contributions in j order.
    const int64_t cb = inner >= 256 ? 256 : inner;
    const int64_t cblocks = cb ? (inner + cb - 1) / cb : 0;
    parallel_for(outer * cblocks, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n * cb)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / cblocks, c0 = t % cblocks * cb, c1 = std::min(inner, c0 + cb);
        for (int64_t j = 0; j < n; ++j) {
          const T* __restrict__ s = src + (o * n + j) * inner;
          T* __restrict__ d = dst + (o * axis_size + ix[j]) * inner;
          for (int64_t i = c0; i < c1; ++i) d[i] = wrap_add(d[i], s[i]);  // bool: or
        }
      }
    }, 1);
  });
}

void index_copy(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                int64_t inner) {
  const int64_t n = check_scatter("index_copy", a, idx, out, outer, axis_size, inner);
  dispatch_in<kAllDtypes>("index_copy", a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = a.data<T>();
    const int64_t* ix = idx.data<int64_t>();
    T* dst = out.data<T>();
    // The gather's loop with source and destination swapped; with repeated
    // indices the value that lands is unspecified (the interface allows it).
    parallel_for(outer * n, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / n, j = t % n;
        const T* s = src + t * inner;
        T* d = dst + (o * axis_size + ix[j]) * inner;
        if (inner == 1) *d = *s;
        else std::memcpy(d, s, sizeof(T) * inner);
      }
    }, 1);
  });
}

}  // namespace lamina_cpu
