// reduce.cc: reductions of a compact (rows, size) operand over its last axis
// (reduce_sum/max/min/argmax/prod), the running sums cumsum_last, the
// first-axis style reduce_sum_axis over a
// compact (outer, size, inner) operand, and the fused row-wise softmax_last,
// logsumexp_last and layer_norm_last. The sums, max, min and the row kernels
// take float16 and bfloat16 through float32 scratch (Widened below).
//
// Determinism: a row is always reduced by one thread in a fixed order, and a
// single long row is cut into fixed 64K-element chunks whose partial sums are
// added in chunk order, so results do not depend on the thread count.
#include <cmath>
#include <limits>
#include <vector>

#include "isa_table.h"
#include "kernels.h"
#include "narrow.h"
#include "threading.h"

namespace lamina_cpu {

namespace base {
#include "reduce_columns.h"
#include "rows.h"

template <class T>
void softmax_row_portable(const T* x, T* y, int64_t n) {
  softmax_row(x, y, n, [](T* p, int64_t k) {
    for (int64_t i = 0; i < k; ++i) p[i] = std::exp(p[i]);
  });
}

void fill_reduce(IsaKernels& k) {
  fill_rows(k.f32);
  fill_rows(k.f64);
  fill_rows(k.i64);
  fill_rows(k.b8);
  k.f32.softmax_row = &softmax_row_portable<float>;
  k.f64.softmax_row = &softmax_row_portable<double>;
}
}  // namespace base

namespace {

using base::Acc;
using base::kLanes;
using base::lane_sum;
using base::row_sum;
constexpr int64_t kChunk = 65536;

// The active ISA's copies of rows.h's loops (isa_table.h; vectorised for its
// width, all copies give identical results).
template <class T, bool Max>
T row_extreme(const T* p, int64_t n) {
  const TypeKernels<T>& k = isa_kernels().of<T>();
  return (Max ? k.row_max : k.row_min)(p, n);
}

template <class T>
int64_t row_argmax(const T* p, int64_t n) {
  T best = p[0];
  int64_t at = 0;
  if (best != best) return 0;
  for (int64_t i = 1; i < n; ++i) {
    const T x = p[i];
    if (x != x) return i;  // numpy: the first NaN is the maximum
    if (x > best) {
      best = x;
      at = i;
    }
  }
  return at;
}

// Validates a (rows = out.size, size) reduction; returns rows.
int64_t check_rows(const char* op, const Array& a, const Array& out, int64_t size, bool nonempty) {
  require_nonneg(op, "size", size);
  const int64_t rows = out.size();
  if (nonempty && size < 1 && rows) value_error(op, ": cannot reduce over an empty axis");
  if (a.size() < checked_mul(rows, size, op))
    value_error(op, ": input has ", a.size(), " elements, expected ", rows, "x", size);
  return rows;
}

// Calls f(row) for every row, rows split across threads by total work.
template <class F>
void for_each_row(int64_t rows, int64_t size, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(size, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(r);
  }, 1);
}

template <class T>
void sum_rows(const T* a, T* out, int64_t rows, int64_t size) {
  if (rows < num_threads() && size >= 2 * kChunk) {
    // Few long rows: parallel over fixed chunks, then chunk sums in order.
    const int64_t chunks = (size + kChunk - 1) / kChunk;
    std::vector<Acc<T>> part(static_cast<std::size_t>(rows * chunks));
    parallel_for(rows * chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t r = t / chunks, c = t % chunks;
        const int64_t s = c * kChunk, n = std::min(kChunk, size - s);
        part[t] = static_cast<Acc<T>>(row_sum(a + r * size + s, n));
      }
    }, 1);
    for (int64_t r = 0; r < rows; ++r) {
      Acc<T> total = 0;
      for (int64_t c = 0; c < chunks; ++c) total = wrap_add(total, part[r * chunks + c]);
      out[r] = static_cast<T>(total);
    }
    return;
  }
  if (size < kLanes) {
    // Short rows (a 1x1 or 4x4 image plane): the 16-lane setup and fold of
    // row_sum would cost more than the row. Same order as row_sum's tail.
    for_each_row(rows, size, [&](int64_t r) {
      T total = T(0);
      for (int64_t i = 0; i < size; ++i) total = wrap_add(total, a[r * size + i]);
      out[r] = total;
    });
    return;
  }
  for_each_row(rows, size, [&](int64_t r) { out[r] = row_sum(a + r * size, size); });
}

// reduce_sum_axis on T: out (outer, inner) = a (outer, size, inner) summed over size.
template <class T>
void sum_axis(const T* pa, T* po, int64_t outer, int64_t size, int64_t inner) {
  if (inner == 1) {
    sum_rows<T>(pa, po, outer, size);
    return;
  }
  // Column sums: the output row accumulates input rows in order, as numpy
  // does, four rows per pass so the output is loaded and stored once per
  // four rows. Threads split (outer, column block); with few outer rows a
  // block is a thread's share of the full width, so input rows stream.
  const int nt = threads_for(outer * size * inner, kCopyGrain);
  const int64_t per = (outer >= nt) ? inner : (inner + nt - 1) / nt;
  const int64_t cols = std::max<int64_t>(64, (per + 63) / 64 * 64);
  const int64_t cblocks = (inner + cols - 1) / cols;
  const auto sum_columns = isa_kernels().of<T>().sum_columns;
  parallel_for(outer * cblocks, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(1, size * std::min(inner, cols))),
               [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / cblocks, c0 = t % cblocks * cols, c1 = std::min(inner, c0 + cols);
      sum_columns(pa + o * size * inner + c0, po + o * inner + c0, size, inner, c1 - c0);
    }
  }, 1);
}

// Float32 stand-ins for a 16-bit kernel's buffers (at most six), in the
// calling thread's scratch: in() widens an input, out() gives room for an
// output that round_into() rounds back. The kernel's float32 body then gives
// the float32 fallback's values bit for bit (interface v2.2: computed in
// float32, rounded once), without its allocations and copies through Python.
// Scratch up to kKept floats is kept between calls; a larger one is freed.
class Widened {
 public:
  template <class N>
  const float* in(const N* x, int64_t n) {
    float* f = slot(n);
    parallel_for(n, kCopyGrain, [&](int64_t b, int64_t e) { to_float32(x + b, f + b, e - b); });
    return f;
  }
  float* out(int64_t n) { return slot(n); }
  template <class N>
  static void round_into(const float* f, N* o, int64_t n) {
    parallel_for(n, kCopyGrain, [&](int64_t b, int64_t e) { from_float32(f + b, o + b, e - b); });
  }

 private:
  static constexpr int64_t kKept = int64_t(1) << 20;  // 4 MiB a slot
  float* slot(int64_t n) {
    thread_local std::vector<float> kept[6];
    std::vector<float>& v = n <= kKept ? kept[used_] : owned_[used_];
    ++used_;
    if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
    return v.data();
  }
  std::vector<float> owned_[6];
  int used_ = 0;
};

}  // namespace

void reduce_sum(const Array& a, Array& out, int64_t size) {
  require_same_dtype("reduce_sum", {&out, &a});
  const int64_t rows = check_rows("reduce_sum", a, out, size, false);
  dispatch_in<kReduceSumDtypes>("reduce_sum", a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(rows);
      sum_rows<float>(w.in(a.data<T>(), rows * size), o, rows, size);
      w.round_into(o, out.data<T>(), rows);
    } else {
      sum_rows<T>(a.data<T>(), out.data<T>(), rows, size);
    }
  });
}

template <bool Max>
static void reduce_extreme(const char* op, const Array& a, Array& out, int64_t size) {
  require_same_dtype(op, {&out, &a});
  const int64_t rows = check_rows(op, a, out, size, true);
  dispatch_in<kReduceExtremeDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    auto run = [&](const auto* pa, auto* po) {
      using U = std::remove_pointer_t<decltype(po)>;
      const TypeKernels<U>& k = isa_kernels().of<U>();
      const auto extreme = Max ? k.row_max : k.row_min;
      for_each_row(rows, size, [&](int64_t r) { po[r] = extreme(pa + r * size, size); });
    };
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(rows);
      run(w.in(a.data<T>(), rows * size), o);
      w.round_into(o, out.data<T>(), rows);
    } else {
      run(a.data<T>(), out.data<T>());
    }
  });
}

void reduce_max(const Array& a, Array& out, int64_t size) { reduce_extreme<true>("reduce_max", a, out, size); }
void reduce_min(const Array& a, Array& out, int64_t size) { reduce_extreme<false>("reduce_min", a, out, size); }

void reduce_argmax(const Array& a, Array& out, int64_t size) {
  if (out.dtype() != DType::Int64)
    throw TypeError(cat("reduce_argmax: out must be int64, got ", out.dtype_str()));
  const int64_t rows = check_rows("reduce_argmax", a, out, size, true);
  dispatch_in<kReduceArgmaxDtypes>("reduce_argmax", a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    int64_t* po = out.data<int64_t>();
    for_each_row(rows, size, [&](int64_t r) { po[r] = row_argmax<T>(pa + r * size, size); });
  });
}

void reduce_sum_axis(const Array& a, Array& out, int64_t outer, int64_t size, int64_t inner) {
  const char* op = "reduce_sum_axis";
  require_same_dtype(op, {&out, &a});
  require_nonneg(op, "outer", outer);
  require_nonneg(op, "size", size);
  require_nonneg(op, "inner", inner);
  const int64_t need = checked_mul(checked_mul(outer, size, op), inner, op);
  if (a.size() < need || out.size() != checked_mul(outer, inner, op))
    value_error(op, ": buffers of ", a.size(), " and ", out.size(), " do not fit (", outer, ", ",
                size, ", ", inner, ")");
  dispatch_in<kReduceSumDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(outer * inner);
      sum_axis<float>(w.in(a.data<T>(), need), o, outer, size, inner);
      w.round_into(o, out.data<T>(), outer * inner);
    } else {
      sum_axis<T>(a.data<T>(), out.data<T>(), outer, size, inner);
    }
  });
}

void reduce_prod(const Array& a, Array& out, int64_t size) {
  const char* op = "reduce_prod";
  require_same_dtype(op, {&out, &a});
  const int64_t rows = check_rows(op, a, out, size, false);
  dispatch_in<kReduceProdDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    // 8 lanes (vectorised for floats; int64 wraps as numpy's), float32 in
    // double: an empty row gives 1.
    for_each_row(rows, size, [&](int64_t r) {
      const T* x = pa + r * size;
      Acc<T> acc[8] = {1, 1, 1, 1, 1, 1, 1, 1};
      int64_t i = 0;
      for (; i + 8 <= size; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] = wrap_mul<Acc<T>>(acc[j], x[i + j]);
      for (; i < size; ++i) acc[0] = wrap_mul<Acc<T>>(acc[0], x[i]);
      for (int j = 1; j < 8; ++j) acc[0] = wrap_mul(acc[0], acc[j]);
      po[r] = static_cast<T>(acc[0]);
    });
  });
}

void cumsum_last(const Array& a, Array& out, int64_t size) {
  const char* op = "cumsum_last";
  require_same_dtype(op, {&out, &a});
  require_nonneg(op, "size", size);
  if ((size && out.size() % size) || (!size && out.size()))
    value_error(op, ": out has ", out.size(), " elements, not a multiple of size ", size);
  if (a.size() < out.size()) value_error(op, ": input has ", a.size(), " elements, out has ", out.size());
  const int64_t rows = size ? out.size() / size : 0;
  dispatch_in<kCumsumDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    // In the dtype, left to right (a carried dependence: one row per thread).
    for_each_row(rows, size, [&](int64_t r) {
      const T* x = pa + r * size;
      T* y = po + r * size;
      T total = T(0);
      for (int64_t i = 0; i < size; ++i) y[i] = total = wrap_add(total, x[i]);
    });
  });
}

namespace {

// out = exp(a), a and out may be one buffer: the active ISA's float32
// polynomial (ewise_exp's loop).
template <class T>
void exp_into(const T* a, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    return isa_kernels().f32.unary[ops::kOpId<ops::Exp>](a, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(a[i]);
}

template <class T>
void exp_inplace(T* p, int64_t n) {
  exp_into(p, p, n);
}

// log_softmax_backward_last's rows: a row of g is summed (in double, four
// accumulators), its out row's exp written into dx, then dx = g - exp * sum
// reads g again from cache: three passes over memory where the composite
// (sum, exp, multiply, subtract) made seven.
template <class T>
void log_softmax_backward_rows(const T* pg, const T* py, T* pd, int64_t rows, int64_t size) {
  for_each_row(rows, size * 8, [&](int64_t r) {
    const T* g = pg + r * size;
    T* d = pd + r * size;
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= size; i += 4)
      for (int k = 0; k < 4; ++k) acc[k] += double(g[i + k]);
    for (; i < size; ++i) acc[0] += double(g[i]);
    const T s = T((acc[0] + acc[1]) + (acc[2] + acc[3]));
    exp_into(py + r * size, d, size);
    for (int64_t j = 0; j < size; ++j) d[j] = g[j] - d[j] * s;
  });
}

}  // namespace

namespace {

// The row kernels on T (float, double, or float for a widened 16-bit operand).
template <class T>
void softmax_rows(const T* pa, T* po, int64_t rows, int64_t size) {
  const auto softmax_row = isa_kernels().of<T>().softmax_row;
  for_each_row(rows, size * 8, [&](int64_t r) { softmax_row(pa + r * size, po + r * size, size); });
}

template <class T>
void logsumexp_rows(const T* pa, T* po, int64_t rows, int64_t size) {
  if (size < 64) {
    // Short rows (a loss over 10 classes): one exp call over a block of rows,
    // not one per row, whose set-up and padded tail cost about 100 ns a row.
    // The exp of an element does not depend on its place in the call, so
    // every row's value is the same bit for bit.
    const int64_t per = std::max<int64_t>(1, 1024 / size), blocks = (rows + per - 1) / per;
    for_each_row(blocks, per * size * 8, [&](int64_t blk) {
      const int64_t r0 = blk * per, r1 = std::min(rows, r0 + per);
      T buf[1024 + 64], peak[1024];
      for (int64_t r = r0; r < r1; ++r) {
        const T* x = pa + r * size;
        T p = row_extreme<T, true>(x, size);
        if (!std::isfinite(p)) p = T(0);
        peak[r - r0] = p;
        for (int64_t i = 0; i < size; ++i) buf[(r - r0) * size + i] = x[i] - p;
      }
      exp_inplace(buf, (r1 - r0) * size);
      for (int64_t r = r0; r < r1; ++r) {
        Acc<T> total = 0;
        total += lane_sum(buf + (r - r0) * size, size);
        po[r] = static_cast<T>(std::log(static_cast<T>(total))) + peak[r - r0];
      }
    });
    return;
  }
  for_each_row(rows, size * 8, [&](int64_t r) {
    const T* x = pa + r * size;
    T peak = row_extreme<T, true>(x, size);
    if (!std::isfinite(peak)) peak = T(0);
    Acc<T> total = 0;
    T buf[256];
    for (int64_t s = 0; s < size; s += 256) {
      const int64_t n = std::min<int64_t>(256, size - s);
      for (int64_t i = 0; i < n; ++i) buf[i] = x[s + i] - peak;
      exp_inplace(buf, n);
      total += lane_sum(buf, n);
    }
    po[r] = static_cast<T>(std::log(static_cast<T>(total))) + peak;
  });
}

template <class T>
void layer_norm_rows(const T* pa, const T* pw, const T* pb, T* po, T* pm, T* pr, int64_t rows,
                     int64_t size, double eps) {
  const auto layer_norm_row = isa_kernels().of<T>().layer_norm_row;
  for_each_row(rows, size * 4, [&](int64_t r) {
    layer_norm_row(pa + r * size, pw, pb, po + r * size, size, eps, pm + r, pr + r);
  });
}

// LayerNorm's backward over rows of `size`: per row, with xhat = (x - mean) *
// rstd and gw = g * w, dx = (gw - mean(gw) - xhat * mean(gw * xhat)) * rstd;
// per column, dw = sum(g * xhat) and db = sum(g) over the rows. One pass over
// g and x, where the composite took a dozen: blocks of 64 rows (split across
// threads) each add their rows into their own column sums while the row is in
// L1, and the blocks' sums are added in block order, so the result does not
// depend on the thread count. Within a block (64 terms) and a row's 16 lanes
// the sums run in T, which vectorises; across blocks and lanes in Acc<T>.
template <class T>
void layer_norm_backward_rows(const T* pg, const T* px, const T* pw, const T* pm, const T* pr,
                              T* pdx, T* pdw, T* pdb, int64_t rows, int64_t size) {
  using A = Acc<T>;
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (rows + kBlock - 1) / kBlock;
  std::vector<A> part(static_cast<std::size_t>(std::max<int64_t>(blocks, 1) * 2 * size), A(0));
  const auto row = isa_kernels().of<T>().layer_norm_backward_row;
  parallel_for(blocks, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(1, kBlock * size)),
               [&](int64_t b, int64_t e) {
    std::vector<T> sums(static_cast<std::size_t>(2 * size));
    for (int64_t blk = b; blk < e; ++blk) {
      std::fill(sums.begin(), sums.end(), T(0));
      for (int64_t r = blk * kBlock; r < std::min(rows, (blk + 1) * kBlock); ++r)
        row(pg + r * size, px + r * size, pw, pm[r], pr[r], pdx + r * size,
                                   sums.data(), sums.data() + size, size);
      A* out = part.data() + blk * 2 * size;
      for (int64_t k = 0; k < 2 * size; ++k) out[k] = A(sums[k]);
    }
  }, 1);
  for (int64_t k = 0; k < size; ++k) {
    A w = 0, b = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      w += part[blk * 2 * size + k];
      b += part[blk * 2 * size + size + k];
    }
    pdw[k] = static_cast<T>(w);
    pdb[k] = static_cast<T>(b);
  }
}

}  // namespace

void softmax_last(const Array& a, Array& out, int64_t size) {
  const char* op = "softmax_last";
  require_same_dtype(op, {&out, &a});
  require_dtype_in(op, out.dtype(), kRowDtypes);
  require_nonneg(op, "size", size);
  const int64_t rows = size ? out.size() / size : 0;
  if ((size && out.size() % size) || (!size && out.size()))
    value_error(op, ": out has ", out.size(), " elements, not a multiple of size ", size);
  if (a.size() < rows * size) value_error(op, ": input has ", a.size(), " elements, expected ", rows, "x", size);
  dispatch_in<kRowDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(rows * size);
      softmax_rows<float>(w.in(a.data<T>(), rows * size), o, rows, size);
      w.round_into(o, out.data<T>(), rows * size);
    } else {
      softmax_rows<T>(a.data<T>(), out.data<T>(), rows, size);
    }
  });
}

void logsumexp_last(const Array& a, Array& out, int64_t size) {
  const char* op = "logsumexp_last";
  require_same_dtype(op, {&out, &a});
  require_dtype_in(op, out.dtype(), kRowDtypes);
  const int64_t rows = check_rows(op, a, out, size, true);
  dispatch_in<kRowDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(rows);
      logsumexp_rows<float>(w.in(a.data<T>(), rows * size), o, rows, size);
      w.round_into(o, out.data<T>(), rows);
    } else {
      logsumexp_rows<T>(a.data<T>(), out.data<T>(), rows, size);
    }
  });
}

void log_softmax_backward_last(const Array& g, const Array& out, Array& grad_a, int64_t size) {
  const char* op = "log_softmax_backward_last";
  require_same_dtype(op, {&g, &out, &grad_a});
  require_dtype_in(op, grad_a.dtype(), kLogSoftmaxBackwardDtypes);
  const int64_t rows =
      checks::check_log_softmax_backward(op, g.size(), out.size(), grad_a.size(), size);
  dispatch_in<kLogSoftmaxBackwardDtypes>(op, grad_a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    log_softmax_backward_rows<T>(g.data<T>(), out.data<T>(), grad_a.data<T>(), rows, size);
  });
}

void layer_norm_backward_last(const Array& g, const Array& a, const Array& weight,
                              const Array& mean, const Array& rstd, Array& grad_a,
                              Array& grad_weight, Array& grad_bias, int64_t size) {
  const char* op = "layer_norm_backward_last";
  require_same_dtype(op, {&g, &a, &weight, &mean, &rstd, &grad_a, &grad_weight, &grad_bias});
  require_dtype_in(op, a.dtype(), kLayerNormBackwardDtypes);
  const int64_t rows = check_rows(op, a, mean, size, true);
  const int64_t n = checked_mul(rows, size, op);
  if (rstd.size() != rows)
    value_error(op, ": rstd has ", rstd.size(), " elements, mean has ", rows);
  if (g.size() < n || grad_a.size() < n)
    value_error(op, ": g and grad_a have ", g.size(), " and ", grad_a.size(),
                " elements, expected ", rows, "x", size);
  if (weight.size() < size || grad_weight.size() < size || grad_bias.size() < size)
    value_error(op, ": weight, grad_weight and grad_bias have ", weight.size(), ", ",
                grad_weight.size(), " and ", grad_bias.size(), " elements, expected ", size);
  dispatch_in<kLayerNormBackwardDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    layer_norm_backward_rows<T>(g.data<T>(), a.data<T>(), weight.data<T>(), mean.data<T>(),
                                rstd.data<T>(), grad_a.data<T>(), grad_weight.data<T>(),
                                grad_bias.data<T>(), rows, size);
  });
}

void layer_norm_last(const Array& a, const Array& weight, const Array& bias, Array& out,
                     Array& mean, Array& rstd, int64_t size, double eps) {
  const char* op = "layer_norm_last";
  require_same_dtype(op, {&out, &a, &weight, &bias, &mean, &rstd});
  require_dtype_in(op, out.dtype(), kRowDtypes);
  const int64_t rows = check_rows(op, a, mean, size, true);
  if (rstd.size() != rows)
    value_error(op, ": rstd has ", rstd.size(), " elements, mean has ", rows);
  if (out.size() < checked_mul(rows, size, op))
    value_error(op, ": out has ", out.size(), " elements, expected ", rows, "x", size);
  if (rows && (weight.size() < size || bias.size() < size))
    value_error(op, ": weight and bias have ", weight.size(), " and ", bias.size(),
                " elements, expected ", size);
  dispatch_in<kRowDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (::lamina::is_narrow_v<T>) {
      Widened w;
      float* o = w.out(rows * size);
      float* m = w.out(rows);
      float* r = w.out(rows);
      layer_norm_rows<float>(w.in(a.data<T>(), rows * size), w.in(weight.data<T>(), size),
                             w.in(bias.data<T>(), size), o, m, r, rows, size, eps);
      w.round_into(o, out.data<T>(), rows * size);
      w.round_into(m, mean.data<T>(), rows);
      w.round_into(r, rstd.data<T>(), rows);
    } else {
      layer_norm_rows<T>(a.data<T>(), weight.data<T>(), bias.data<T>(), out.data<T>(),
                         mean.data<T>(), rstd.data<T>(), rows, size, eps);
    }
  });
}

}  // namespace lamina_cpu
