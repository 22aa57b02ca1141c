// ewise_strided.cu: ewise_strided_OP(a, b, out, shape, a_strides, a_offset,
// b_strides, b_offset) for each binary op of ewise_ops.h: the ewise_OP of two
// strided views (broadcast, permuted, flipped, sliced) into a compact out,
// reading the operands where they lie instead of compacting them first. Each
// op is its own launcher, its functor fixed at compile time (interface v2.0).
//
// The host drops size-1 dims and merges neighbours that both views step over
// contiguously, so e.g. a (N, C, H, W) sum with a per-channel operand becomes
// 3 dims and a permuted operand keeps only the dims it really permutes. Thread
// i then turns out index i into both positions with one division per dim, in
// 32 bits when out is small enough (several times cheaper than 64). When both
// views reduce to compact runs from element 0, the vectorised binary_loop of
// ewise_binary.cu runs instead. Views with more than kMaxDims dims left are
// compacted into scratch buffers (compact_into, split into several calls when
// one view alone keeps more than kMaxDims dims) and run through binary_loop.
// Ops, dtypes and values are those of ewise_OP: the functors of ewise.cuh, the
// dtype sets of ewise_ops.h, comparisons writing bool or 1/0 in their
// operands' dtype. An int64 power compacts its exponents first to check them.
#include <cstdint>
#include <limits>

#include "ewise.cuh"

namespace lamina_cuda {

namespace {

// Both views after coalescing: out element i, at index (i_0 .. i_{ndim-1}) of
// shape, reads a[a_offset + sum_k i_k * a_strides[k]] and likewise b.
struct PairLayout {
  int ndim;
  int64_t a_offset, b_offset;
  int64_t shape[kMaxDims], a_strides[kMaxDims], b_strides[kMaxDims];
};

// True when both views are compact runs starting at element 0 (binary_loop's packs need that).
bool is_compact_pair(const PairLayout& l) {
  return l.ndim == 1 && l.a_strides[0] == 1 && l.b_strides[0] == 1 && l.a_offset == 0 &&
         l.b_offset == 0;
}

// The loop runs in 64 bits; I is the type of the divisions (int32_t when n fits).
template <class T, class TOut, class Op, class I>
__global__ void ewise_strided_kernel(const T* a, const T* b, TOut* out, int64_t n, PairLayout l) {
  const OpFor<Op, T> op{};
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t pa = l.a_offset, pb = l.b_offset;
    I rest = static_cast<I>(i);
    for (int k = l.ndim - 1; k >= 0; --k) {  // innermost dim first: row-major out
      const I dim = static_cast<I>(l.shape[k]);
      const I q = rest / dim;
      const int64_t idx = rest - q * dim;
      pa += idx * l.a_strides[k];
      pb += idx * l.b_strides[k];
      rest = q;
    }
    out[i] = out_as<TOut>(op(a[pa], b[pb]));
  }
}

template <class T, class TOut, class Op>
__global__ void ewise_strided_compact_kernel(const T* a, const T* b, TOut* out, int64_t n) {
  binary_loop<T, TOut, OpFor<Op, T>, kEwise>(a, b, ValueOf<T>{}, out, n);
}

// Queues out[i] = Op(a at i, b at i) for i < n on ctx's stream; a and b hold
// dt, out out_dt (dt, or bool for a comparison); Set is the op's dtype set.
template <class Op, DTypes Set>
void launch_op(const char* name, DType dt, DType out_dt, const void* a, const void* b,
               void* out, int64_t n, const PairLayout& l, const Launch& ctx) {
  dispatch_binary<Set, kComparison<Op>>(name, dt, out_dt, [&](auto t, auto to) {
    using T = decltype(t);
    using TOut = decltype(to);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    TOut* po = static_cast<TOut*>(out);
    if (is_compact_pair(l)) {
      launch_kernel(&ewise_strided_compact_kernel<T, TOut, Op>,
                    ewise_grid(n, pack_width<T, T, TOut>(), ctx.device), kThreads, 0, ctx.stream,
                    pa, pb, po, n);
      check_launch("ewise_strided_compact_kernel", ctx.stream);
      return;
    }
    const unsigned grid = grid_for(n, ctx.device);
    if (n <= std::numeric_limits<int32_t>::max())
      launch_kernel(&ewise_strided_kernel<T, TOut, Op, int32_t>, grid, kThreads, 0, ctx.stream, pa,
                    pb, po, n, l);
    else
      launch_kernel(&ewise_strided_kernel<T, TOut, Op, int64_t>, grid, kThreads, 0, ctx.stream, pa,
                    pb, po, n, l);
    check_launch("ewise_strided_kernel", ctx.stream);
  });
}

// Drops size-1 dims and merges dim k into the one before it when every view
// steps over it contiguously (stride[k-1] == stride[k] * shape[k]); out is
// compact, so it always allows the merge.
void coalesce(Shape& shape, std::initializer_list<Shape*> strides) {
  std::size_t kept = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    bool merge = kept > 0;
    for (const Shape* s : strides) merge = merge && (*s)[kept - 1] == step_over((*s)[k], shape[k]);
    if (merge) {
      shape[kept - 1] *= shape[k];
      for (Shape* s : strides) (*s)[kept - 1] = (*s)[k];
    } else {
      shape[kept] = shape[k];
      for (Shape* s : strides) (*s)[kept] = (*s)[k];
      ++kept;
    }
  }
  shape.resize(kept);
  for (Shape* s : strides) s->resize(kept);
}

// Queues the compaction of a view of x (inside x, prod(shape) > 0) into dst.
// compact_into takes at most kMaxDims dims after merging, so a view that keeps
// more is done one index of its outermost dim at a time.
void compact_in_steps(const char* name, const Array& x, char* dst, Shape shape, Shape strides,
                      int64_t offset, const Launch& ctx) {
  coalesce(shape, {&strides});
  if (shape.size() <= static_cast<std::size_t>(kMaxDims)) {
    compact_into(x, dst, make_layout(name, shape, strides, offset, x.size()), ctx);
    return;
  }
  const Shape inner(shape.begin() + 1, shape.end());
  const Shape inner_strides(strides.begin() + 1, strides.end());
  int64_t inner_size = 1;
  for (int64_t d : inner) inner_size *= d;
  const std::size_t step = static_cast<std::size_t>(inner_size) * dtype_itemsize(x.dtype());
  for (int64_t i = 0; i < shape[0]; ++i)
    compact_in_steps(name, x, dst + i * step, inner, inner_strides, offset + i * strides[0], ctx);
}

// The body of ewise_strided_OP (named name): Op is the op's functor, Set its dtypes.
template <class Op, DTypes Set>
void strided_binary(const char* name, const Array& a, const Array& b, Array& out,
                    const Shape& shape, const Shape& a_strides, int64_t a_offset,
                    const Shape& b_strides, int64_t b_offset) {
  // Everything is validated before any memory is allocated or work queued.
  require_same_dtype(name, {&a, &b});
  require_binary_out(name, kComparison<Op>, a, out);
  require_dtype(name, a.dtype(), Set);
  if (a_strides.size() != shape.size() || b_strides.size() != shape.size())
    value_error(name, ": shape ", shape_str(shape), ", a_strides ", shape_str(a_strides),
                " and b_strides ", shape_str(b_strides), " differ in length");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) value_error(name, ": negative dimension in shape ", shape_str(shape));
    n = checked_mul(n, d, name);
  }
  if (out.size() < n)
    value_error(name, ": out has ", out.size(), " elements, shape ", shape_str(shape), " needs ",
                n);
  if (n > 0) {
    require_view_inside(name, "a view", shape, a_strides, a_offset, a.size());
    require_view_inside(name, "b view", shape, b_strides, b_offset, b.size());
  }
  const Launch ctx = launch_on(name, {&a, &b, &out});
  if (n == 0) return;

  // An integer power checks its exponents, which it reads compacted (below).
  const bool check_exponents = std::is_same_v<Op, Power> && a.dtype() == DType::Int64;
  Shape dims = shape, sa = a_strides, sb = b_strides;
  coalesce(dims, {&sa, &sb});
  if (dims.size() <= static_cast<std::size_t>(kMaxDims) && !check_exponents) {
    PairLayout l{};
    l.ndim = static_cast<int>(dims.size());
    l.a_offset = a_offset;
    l.b_offset = b_offset;
    for (int k = 0; k < l.ndim; ++k) {
      l.shape[k] = dims[k];
      l.a_strides[k] = sa[k];
      l.b_strides[k] = sb[k];
    }
    launch_op<Op, Set>(name, a.dtype(), out.dtype(), a.raw(), b.raw(), out.raw(), n, l, ctx);
    return;
  }
  // Too many dims for PairLayout (or exponents to check): compact both views,
  // then the compact path.
  // The scratch blocks go back to the cache on return, which is safe: later
  // work that reuses them is queued on the same stream, after this kernel.
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_itemsize(a.dtype());
  Scratch ca(ctx.device, bytes), cb(ctx.device, bytes);
  compact_in_steps(name, a, ca.as<char>(), shape, a_strides, a_offset, ctx);
  compact_in_steps(name, b, cb.as<char>(), shape, b_strides, b_offset, ctx);
  if (check_exponents) {
    int64_t value = 0;
    const int64_t bad = find_outside(name, cb.as<int64_t>(), n, 0, INT64_MAX, ctx, &value);
    if (bad >= 0)
      value_error(name, ": integers to negative integer powers are not allowed (exponent ",
                  value, " at element ", bad, " of the b view); convert to a float dtype first");
  }
  PairLayout flat{};
  flat.ndim = 1;
  flat.shape[0] = n;
  flat.a_strides[0] = flat.b_strides[0] = 1;
  launch_op<Op, Set>(name, a.dtype(), out.dtype(), ca.as<void>(), cb.as<void>(), out.raw(), n,
                     flat, ctx);
}

}  // namespace

#define LAMINA_STRIDED_BINARY(NAME, OP, SET, FORMS, DOC)                                      \
  void ewise_strided_##NAME(const Array& a, const Array& b, Array& out, const Shape& shape,   \
                            const Shape& a_strides, int64_t a_offset, const Shape& b_strides, \
                            int64_t b_offset) {                                               \
    strided_binary<OP, kernel_dtypes::ewise_strided_##NAME>(                                  \
        "ewise_strided_" #NAME, a, b, out, shape, a_strides, a_offset, b_strides, b_offset);  \
  }

LAMINA_BINARY_OPS(LAMINA_STRIDED_BINARY)

}  // namespace lamina_cuda
