// reduce.cu: reductions over the contiguous last axis (reduce_sum, reduce_max,
// reduce_min, reduce_argmax, reduce_prod), over a middle axis (reduce_sum_axis),
// and the fused row kernels softmax_last, logsumexp_last, layer_norm_last and
// log_softmax_backward_last.
// Dtypes as kernel_dtypes.h lists: the fused kernels take floats; sums,
// products and argmax also int64 (wrapping); max and min every dtype (bool's
// max is any, its min all). The sums (reduce_sum, reduce_sum_axis), max, min
// and the fused kernels take float16 and bfloat16 too: they run their float32
// body on each element widened as it is loaded (ValueOf, widen: common.cuh),
// accumulating exactly as float32 does (sums in double, in the same order),
// and round each stored value (out, mean, rstd) once to the 16-bit type
// (round_to), so they give the float32 fallback's result bit for bit.
//
// a is compact (rows, size). Rows of up to kWarpRowMax elements are reduced by
// one warp each (8 rows per 256-thread block); longer rows by a whole block,
// warps combining with shuffles and then through shared memory. When there
// are too few rows to fill the GPU, each row is split into chunks reduced by
// separate blocks into a scratch buffer of partial results, which a second
// launch combines, so one huge row still runs at full bandwidth. float32 sums
// accumulate in double: cheap for a memory-bound kernel, and the result is
// at least as accurate as numpy's pairwise summation. The fused row kernels
// give each row one warp or one block (they read a row more than once, so it
// stays in cache) and never split it.
#include <cfloat>
#include <cmath>
#include <type_traits>

#include "common.cuh"

namespace lamina_cuda {

namespace {

constexpr int64_t kWarpRowMax = 512;   // rows this long or shorter get one warp
constexpr int64_t kMinChunk = 8192;    // a split row gives each block at least this much

// Sums and products of float32 (and so of the 16-bit floats, computed in
// float32) accumulate in double; other dtypes in themselves.
template <class T> struct AccOf { using type = T; };
template <> struct AccOf<float> { using type = double; };
template <class T> using AccFor = typename AccOf<ValueOf<T>>::type;

// The identities of max and min: -inf/inf, the int64 limits, and false/true.
template <class T>
__device__ __forceinline__ T lowest() {
  if constexpr (std::is_floating_point_v<T>) return -INFINITY;
  else if constexpr (std::is_same_v<T, int64_t>) return INT64_MIN;
  else return false;
}
template <class T>
__device__ __forceinline__ T highest() {
  if constexpr (std::is_floating_point_v<T>) return INFINITY;
  else if constexpr (std::is_same_v<T, int64_t>) return INT64_MAX;
  else return true;
}

template <class T>
struct SumOp {
  using Acc = AccFor<T>;
  using Out = T;
  __device__ static Acc identity() { return Acc(0); }
  __device__ static Acc load(T x, int64_t) { return Acc(widen(x)); }
  __device__ static Acc combine(Acc a, Acc b) { return add_wrap(a, b); }
  __device__ static Out finish(Acc a) { return round_to<T>(a); }
};

template <class T>
struct ProdOp {
  using Acc = typename AccOf<T>::type;
  using Out = T;
  __device__ static Acc identity() { return Acc(1); }
  __device__ static Acc load(T x, int64_t) { return Acc(x); }
  __device__ static Acc combine(Acc a, Acc b) { return mul_wrap(a, b); }
  __device__ static Out finish(Acc a) { return static_cast<T>(a); }
};

// Warp shuffles take no bool: max and min of bool run on int; of a 16-bit
// float, on float.
template <class T> struct ShuffleAs { using type = ValueOf<T>; };
template <> struct ShuffleAs<bool> { using type = int; };

template <class T>
struct MaxOp {  // NaN propagates
  using Acc = typename ShuffleAs<T>::type;
  using Out = T;
  __device__ static Acc identity() { return lowest<ValueOf<T>>(); }
  __device__ static Acc load(T x, int64_t) { return widen(x); }
  __device__ static Acc combine(Acc a, Acc b) { return (a != a || a > b) ? a : b; }
  __device__ static Out finish(Acc a) { return round_to<T>(a); }
};

template <class T>
struct MinOp {
  using Acc = typename ShuffleAs<T>::type;
  using Out = T;
  __device__ static Acc identity() { return highest<ValueOf<T>>(); }
  __device__ static Acc load(T x, int64_t) { return widen(x); }
  __device__ static Acc combine(Acc a, Acc b) { return (a != a || a < b) ? a : b; }
  __device__ static Out finish(Acc a) { return round_to<T>(a); }
};

template <class T>
struct ValIdx {
  T v;
  int64_t i;
};

template <class T>
struct ArgmaxOp {  // the first maximum; a NaN counts as the maximum, like numpy.argmax
  using Acc = ValIdx<T>;
  using Out = int64_t;
  __device__ static Acc identity() { return {lowest<T>(), INT64_MAX}; }
  __device__ static Acc load(T x, int64_t i) { return {x, i}; }
  __device__ static Acc combine(Acc a, Acc b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) return (an && (!bn || a.i < b.i)) ? a : b;
    if (a.v != b.v) return a.v > b.v ? a : b;
    return a.i < b.i ? a : b;
  }
  __device__ static Out finish(Acc a) { return a.i; }
};

// int64_t is long on Linux; CUDA's shuffles are overloaded on long long.
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(v), mask));
  else return __shfl_xor_sync(0xffffffffu, v, mask);
}
template <class T>
__device__ __forceinline__ ValIdx<T> shfl_xor(ValIdx<T> v, int mask) {
  return {shfl_xor(v.v, mask), shfl_xor(v.i, mask)};
}

// Reduces v over a group of GROUP threads (32: a warp, or the whole block);
// every thread of the group gets the result. All threads of the block must
// call it equally often, even for GROUP == 32: a GPU needs that only for
// GROUP > 32, but the CPU emulation (HIP-CPU) builds warp shuffles on block
// barriers, so the row loops around it are block-uniform, warps without a row
// taking part with an empty one.
template <int GROUP, class Op, class Acc>
__device__ __forceinline__ Acc group_reduce(Acc v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = Op::combine(v, shfl_xor(v, m));
  if constexpr (GROUP > 32) {
    __shared__ Acc partial[GROUP / 32];
    __syncthreads();  // a previous call may still be reading partial
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = partial[0];
#pragma unroll
    for (int w = 1; w < GROUP / 32; ++w) v = Op::combine(v, partial[w]);
  }
  return v;
}

// An input element, or (second pass over split rows) an already combined partial.
template <class Op, class In>
__device__ __forceinline__ typename Op::Acc to_acc(In x, int64_t i) {
  if constexpr (std::is_same_v<In, typename Op::Acc>) return x;
  else return Op::load(x, i);
}

}  // namespace

// Task t = (row, chunk) reduces in[row, chunk*chunk_len : ...] with a group of
// GROUP threads; FINAL writes Op::finish to out[t], else the partial to out[t].
// In is the element type, or Op::Acc when combining partials.
template <class In, class Op, int GROUP, bool FINAL>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_kernel(const In* __restrict__ in, void* __restrict__ out, int64_t rows,
                       int64_t size, int64_t chunks, int64_t chunk_len) {
  using Acc = typename Op::Acc;
  constexpr int kGroups = kThreads / GROUP;
  const int lane = threadIdx.x % GROUP;
  const int64_t tasks = rows * chunks;
  for (int64_t t0 = blockIdx.x * static_cast<int64_t>(kGroups); t0 < tasks;
       t0 += static_cast<int64_t>(gridDim.x) * kGroups) {  // block-uniform: see group_reduce
    const int64_t t = t0 + (GROUP < kThreads ? threadIdx.x / GROUP : 0);
    const bool active = GROUP == kThreads || t < tasks;  // a whole block's task always is
    const int64_t row = t / chunks;
    const int64_t begin = (t % chunks) * chunk_len;
    const int64_t end = !active ? begin : begin + chunk_len < size ? begin + chunk_len : size;
    const In* p = in + row * size;
    Acc acc = Op::identity();
    for (int64_t k = begin + lane; k < end; k += GROUP) acc = Op::combine(acc, to_acc<Op>(p[k], k));
    acc = group_reduce<GROUP, Op>(acc);
    if (active && lane == 0) {
      if constexpr (FINAL) static_cast<typename Op::Out*>(out)[t] = Op::finish(acc);
      else static_cast<Acc*>(out)[t] = acc;
    }
  }
}

namespace {

// Rows of a (rows, size) operand for a kernel writing one value per row.
int64_t reduce_rows(const char* op, const Array& a, const Array& out, int64_t size,
                    bool nonempty) {
  require_nonneg(op, "size", size);
  const int64_t rows = out.size();
  if (nonempty && size < 1 && rows > 0) value_error(op, ": cannot reduce over an empty axis");
  if (a.size() < checked_mul(rows, size, op))
    value_error(op, ": input has ", a.size(), " elements, expected ", rows, "x", size);
  return rows;
}

template <class Op, class T>
void launch_reduce(const char* kernel, const T* a, void* out, int64_t rows, int64_t size,
                   const Launch& ctx) {
  using Acc = typename Op::Acc;
  if (size <= kWarpRowMax) {
    const unsigned grid = grid_for((rows + kThreads / 32 - 1) / (kThreads / 32), ctx.device, 1);
    launch_kernel(&reduce_rows_kernel<T, Op, 32, true>, grid, kThreads, 0, ctx.stream, a, out, rows,
                  size, 1, size);
    check_launch(kernel, ctx.stream);
    return;
  }
  const int64_t want = 4 * static_cast<int64_t>(sm_count(ctx.device));
  int64_t chunks = rows >= want ? 1 : (want + rows - 1) / rows;
  const int64_t most = (size + kMinChunk - 1) / kMinChunk;
  if (chunks > most) chunks = most;
  if (chunks > kWarpRowMax) chunks = kWarpRowMax;
  if (chunks <= 1) {
    const unsigned grid = grid_for(rows, ctx.device, 1);
    launch_kernel(&reduce_rows_kernel<T, Op, kThreads, true>, grid, kThreads, 0, ctx.stream, a, out,
                  rows, size, 1, size);
    check_launch(kernel, ctx.stream);
    return;
  }
  const int64_t chunk_len = (size + chunks - 1) / chunks;
  Scratch partial(ctx.device, static_cast<std::size_t>(rows * chunks) * sizeof(Acc));
  launch_kernel(&reduce_rows_kernel<T, Op, kThreads, false>, grid_for(rows * chunks, ctx.device, 1),
                kThreads, 0, ctx.stream, a, partial.as<void>(), rows, size, chunks, chunk_len);
  check_launch(kernel, ctx.stream);
  const unsigned grid = grid_for((rows + kThreads / 32 - 1) / (kThreads / 32), ctx.device, 1);
  launch_kernel(&reduce_rows_kernel<Acc, Op, 32, true>, grid, kThreads, 0, ctx.stream,
                partial.as<Acc>(), out, rows, chunks, 1, chunks);
  check_launch(kernel, ctx.stream);
}

// A last-axis reduction `op` with the row op OP<T> for T in Set; with nonempty,
// rows of size 0 are an error (else each is OP's identity). out has OP::Out.
template <template <class> class OP, DTypes Set>
void reduce_last(const char* op, const char* kernel, const Array& a, Array& out, int64_t size,
                 bool nonempty) {
  require_dtype(op, a.dtype(), Set);
  const int64_t rows = reduce_rows(op, a, out, size, nonempty);
  const Launch ctx = launch_on(op, {&a, &out});
  if (rows == 0) return;
  dispatch<Set>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_reduce<OP<T>>(kernel, a.data<T>(), out.raw(), rows, size, ctx);
  });
}

}  // namespace

void reduce_sum(const Array& a, Array& out, int64_t size) {
  require_same_dtype("reduce_sum", {&a, &out});
  reduce_last<SumOp, kernel_dtypes::reduce_sum>("reduce_sum", "reduce_sum_kernel", a, out, size,
                                                false);
}

void reduce_prod(const Array& a, Array& out, int64_t size) {
  require_same_dtype("reduce_prod", {&a, &out});
  reduce_last<ProdOp, kernel_dtypes::reduce_prod>("reduce_prod", "reduce_prod_kernel", a, out,
                                                  size, false);
}

void reduce_max(const Array& a, Array& out, int64_t size) {
  require_same_dtype("reduce_max", {&a, &out});
  reduce_last<MaxOp, kernel_dtypes::reduce_max>("reduce_max", "reduce_max_kernel", a, out, size,
                                                true);
}

void reduce_min(const Array& a, Array& out, int64_t size) {
  require_same_dtype("reduce_min", {&a, &out});
  reduce_last<MinOp, kernel_dtypes::reduce_min>("reduce_min", "reduce_min_kernel", a, out, size,
                                                true);
}

void reduce_argmax(const Array& a, Array& out, int64_t size) {
  if (out.dtype() != DType::Int64)
    throw TypeError(cat("reduce_argmax: out must be int64, got ", out.dtype_str()));
  reduce_last<ArgmaxOp, kernel_dtypes::reduce_argmax>("reduce_argmax", "reduce_argmax_kernel", a,
                                                      out, size, true);
}

// out[o, i] = sum_k a[o, k, i]: a 32-wide column strip per block, 8 rows of
// threads splitting k, combined through shared memory. Reads are coalesced
// along inner.
template <class T>
__global__ void __launch_bounds__(kThreads)
    reduce_sum_axis_kernel(const T* __restrict__ a, T* __restrict__ out, int64_t outer,
                           int64_t size, int64_t inner, int64_t strips) {
  using Acc = AccFor<T>;
  __shared__ Acc part[8][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  for (int64_t s = blockIdx.x; s < outer * strips; s += gridDim.x) {  // block-uniform loop
    const int64_t o = s / strips, i = (s % strips) * 32 + tx;
    Acc acc = 0;
    if (i < inner)
      for (int64_t k = ty; k < size; k += 8)
        acc = add_wrap<Acc>(acc, widen(a[(o * size + k) * inner + i]));
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && i < inner) {
      for (int r = 1; r < 8; ++r) acc = add_wrap(acc, part[r][tx]);
      out[o * inner + i] = round_to<T>(acc);
    }
    __syncthreads();
  }
}

void reduce_sum_axis(const Array& a, Array& out, int64_t outer, int64_t size, int64_t inner) {
  require_same_dtype("reduce_sum_axis", {&a, &out});
  require_dtype("reduce_sum_axis", a.dtype(), kernel_dtypes::reduce_sum_axis);
  require_nonneg("reduce_sum_axis", "outer", outer);
  require_nonneg("reduce_sum_axis", "size", size);
  require_nonneg("reduce_sum_axis", "inner", inner);
  const int64_t need = checked_mul(checked_mul(outer, size, "reduce_sum_axis"), inner,
                                   "reduce_sum_axis");
  if (a.size() < need || out.size() != checked_mul(outer, inner, "reduce_sum_axis"))
    value_error("reduce_sum_axis: buffers of ", a.size(), " and ", out.size(),
                " do not fit (", outer, ", ", size, ", ", inner, ")");
  if (inner == 1) return reduce_sum(a, out, size);
  const Launch ctx = launch_on("reduce_sum_axis", {&a, &out});
  if (out.size() == 0) return;
  dispatch<kernel_dtypes::reduce_sum_axis>("reduce_sum_axis", a.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t strips = (inner + 31) / 32;
    launch_kernel(&reduce_sum_axis_kernel<T>, grid_for(outer * strips, ctx.device, 1), kThreads, 0,
                  ctx.stream, a.data<T>(), out.data<T>(), outer, size, inner, strips);
    check_launch("reduce_sum_axis_kernel", ctx.stream);
  });
}

// ---------------------------------------------------------------- fused row kernels
namespace {

// Calls body(r, size, lane, active) for every row r of a (rows, row_size)
// array, GROUP threads (lanes) to a row, kThreads / GROUP rows per block and
// pass. The loop is block-uniform, as group_reduce needs: a group past the last
// row takes part with an empty row (size 0, active false). A whole block's row
// (GROUP == kThreads) always is active.
template <int GROUP, class Body>
__device__ __forceinline__ void for_each_row(int64_t rows, int64_t row_size, Body body) {
  constexpr int kGroups = kThreads / GROUP;
  const int lane = threadIdx.x % GROUP;
  for (int64_t r0 = blockIdx.x * static_cast<int64_t>(kGroups); r0 < rows;
       r0 += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t r = r0 + (GROUP < kThreads ? threadIdx.x / GROUP : 0);
    const bool active = GROUP == kThreads || r < rows;
    body(r, active ? row_size : 0, lane, active);
  }
}

// Row max (NaN propagating) then sum of exp(x - shift) over one row, by a
// group, in T's compute type C (float for the 16-bit floats).
template <int GROUP, class T, class C = ValueOf<T>>
__device__ __forceinline__ void row_stats(const T* p, int64_t size, int lane, bool finite_shift,
                                          C* shift, AccFor<T>* total) {
  C m = lowest<C>();
  for (int64_t k = lane; k < size; k += GROUP) m = MaxOp<C>::combine(m, widen(p[k]));
  m = group_reduce<GROUP, MaxOp<C>>(m);
  *shift = (finite_shift && !isfinite(m)) ? C(0) : m;
  AccFor<T> s = 0;
  for (int64_t k = lane; k < size; k += GROUP) s += exp(widen(p[k]) - *shift);
  *total = group_reduce<GROUP, SumOp<C>>(s);
}

}  // namespace

// out[r, k] = exp(a[r, k] - max_r) / sum_k exp(a[r, k] - max_r).
template <class T, int GROUP>
__global__ void __launch_bounds__(kThreads)
    softmax_last_kernel(const T* __restrict__ a, T* __restrict__ out, int64_t rows,
                        int64_t row_size) {
  for_each_row<GROUP>(rows, row_size, [&](int64_t r, int64_t size, int lane, bool /*active*/) {
    const T* p = a + r * size;
    using C = ValueOf<T>;
    C shift;
    AccFor<T> total;
    row_stats<GROUP>(p, size, lane, false, &shift, &total);
    const C inv = static_cast<C>(1.0 / total);
    for (int64_t k = lane; k < size; k += GROUP)
      out[r * size + k] = round_to<T>(exp(widen(p[k]) - shift) * inv);
  });
}

// out[r] = log(sum_k exp(a[r, k] - s)) + s with s the row max, or 0 if it is not finite.
template <class T, int GROUP>
__global__ void __launch_bounds__(kThreads)
    logsumexp_last_kernel(const T* __restrict__ a, T* __restrict__ out, int64_t rows,
                          int64_t row_size) {
  for_each_row<GROUP>(rows, row_size, [&](int64_t r, int64_t size, int lane, bool active) {
    using C = ValueOf<T>;
    C shift;
    AccFor<T> total;
    row_stats<GROUP>(a + r * size, size, lane, true, &shift, &total);
    if (active && lane == 0) out[r] = round_to<T>(static_cast<C>(log(total)) + shift);
  });
}

// out[r, k] = (a[r, k] - mean[r]) * rstd[r] * weight[k] + bias[k] with the row's
// mean and rstd = 1/sqrt(var + eps), var the biased variance taken in a second
// pass over the centred row (E[x^2] - E[x]^2 cancels when |mean| >> std).
template <class T, int GROUP>
__global__ void __launch_bounds__(kThreads)
    layer_norm_last_kernel(const T* __restrict__ a, const T* __restrict__ weight,
                           const T* __restrict__ bias, T* __restrict__ out, T* __restrict__ mean,
                           T* __restrict__ rstd, int64_t rows, int64_t row_size, double eps) {
  using C = ValueOf<T>;
  using Acc = AccFor<T>;
  for_each_row<GROUP>(rows, row_size, [&](int64_t r, int64_t size, int lane, bool active) {
    const T* p = a + r * size;
    Acc s = 0;
    for (int64_t k = lane; k < size; k += GROUP) s += widen(p[k]);
    // Statistics and centring stay in Acc: a float32 mean rounded before use
    // shifts every centred element of a row whose |mean| >> std.
    const Acc mu = group_reduce<GROUP, SumOp<C>>(s) / size;
    Acc sq = 0;
    for (int64_t k = lane; k < size; k += GROUP) {
      const Acc d = widen(p[k]) - mu;
      sq += d * d;
    }
    const Acc inv = 1 / sqrt(group_reduce<GROUP, SumOp<C>>(sq) / size + eps);
    for (int64_t k = lane; k < size; k += GROUP)
      out[r * size + k] =
          round_to<T>((widen(p[k]) - mu) * inv * widen(weight[k]) + widen(bias[k]));
    if (active && lane == 0) {
      mean[r] = round_to<T>(mu);
      rstd[r] = round_to<T>(inv);
    }
  });
}

// grad_a[r, k] = g[r, k] - exp(out[r, k]) * sum_k g[r, k]: the backward of a
// row-wise log-softmax whose output is out. One read of g for the sum (AccFor:
// double for float32, as the cpu backend's), then g again and out for the result.
template <class T, int GROUP>
__global__ void __launch_bounds__(kThreads)
    log_softmax_backward_last_kernel(const T* __restrict__ g, const T* __restrict__ out,
                                     T* __restrict__ grad_a, int64_t rows, int64_t row_size) {
  using C = ValueOf<T>;
  for_each_row<GROUP>(rows, row_size, [&](int64_t r, int64_t size, int lane, bool /*active*/) {
    const T* pg = g + r * size;
    AccFor<T> s = 0;
    for (int64_t k = lane; k < size; k += GROUP) s += widen(pg[k]);
    const C total = static_cast<C>(group_reduce<GROUP, SumOp<C>>(s));
    for (int64_t k = lane; k < size; k += GROUP)
      grad_a[r * size + k] = round_to<T>(widen(pg[k]) - exp(widen(out[r * size + k])) * total);
  });
}

void softmax_last(const Array& a, Array& out, int64_t size) {
  require_same_dtype("softmax_last", {&a, &out});
  require_nonneg("softmax_last", "size", size);
  if (size == 0) return;
  if (out.size() % size != 0)
    value_error("softmax_last: out has ", out.size(), " elements, not a multiple of size ", size);
  const int64_t rows = out.size() / size;
  if (a.size() < out.size())
    value_error("softmax_last: input has ", a.size(), " elements, expected ", rows, "x", size);
  const Launch ctx = launch_on("softmax_last", {&a, &out});
  if (rows == 0) return;
  dispatch<kernel_dtypes::softmax_last>("softmax_last", a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (size <= kWarpRowMax)
      launch_kernel(&softmax_last_kernel<T, 32>, grid_for((rows + 7) / 8, ctx.device, 1), kThreads,
                    0, ctx.stream, a.data<T>(), out.data<T>(), rows, size);
    else
      launch_kernel(&softmax_last_kernel<T, kThreads>, grid_for(rows, ctx.device, 1), kThreads, 0,
                    ctx.stream, a.data<T>(), out.data<T>(), rows, size);
    check_launch("softmax_last_kernel", ctx.stream);
  });
}

void logsumexp_last(const Array& a, Array& out, int64_t size) {
  require_same_dtype("logsumexp_last", {&a, &out});
  const int64_t rows = reduce_rows("logsumexp_last", a, out, size, true);
  const Launch ctx = launch_on("logsumexp_last", {&a, &out});
  if (rows == 0) return;
  dispatch<kernel_dtypes::logsumexp_last>("logsumexp_last", a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (size <= kWarpRowMax)
      launch_kernel(&logsumexp_last_kernel<T, 32>, grid_for((rows + 7) / 8, ctx.device, 1),
                    kThreads, 0, ctx.stream, a.data<T>(), out.data<T>(), rows, size);
    else
      launch_kernel(&logsumexp_last_kernel<T, kThreads>, grid_for(rows, ctx.device, 1), kThreads, 0,
                    ctx.stream, a.data<T>(), out.data<T>(), rows, size);
    check_launch("logsumexp_last_kernel", ctx.stream);
  });
}

void layer_norm_last(const Array& a, const Array& weight, const Array& bias, Array& out,
                     Array& mean, Array& rstd, int64_t size, double eps) {
  const char* op = "layer_norm_last";
  require_same_dtype(op, {&a, &weight, &bias, &out, &mean, &rstd});
  require_dtype(op, a.dtype(), kernel_dtypes::layer_norm_last);
  const int64_t rows = reduce_rows(op, a, mean, size, true);
  if (rstd.size() != rows)
    value_error(op, ": rstd has ", rstd.size(), " elements, mean has ", rows);
  if (out.size() < rows * size)
    value_error(op, ": out has ", out.size(), " elements, expected ", rows, "x", size);
  if (rows > 0 && (weight.size() < size || bias.size() < size))
    value_error(op, ": weight and bias have ", weight.size(), " and ", bias.size(),
                " elements, expected ", size);
  const Launch ctx = launch_on(op, {&a, &weight, &bias, &out, &mean, &rstd});
  if (rows == 0) return;
  dispatch<kernel_dtypes::layer_norm_last>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    const bool warp = size <= kWarpRowMax;
    const auto kernel = warp ? &layer_norm_last_kernel<T, 32> : &layer_norm_last_kernel<T, kThreads>;
    launch_kernel(kernel, grid_for(warp ? (rows + 7) / 8 : rows, ctx.device, 1), kThreads, 0,
                  ctx.stream, a.data<T>(), weight.data<T>(), bias.data<T>(), out.data<T>(),
                  mean.data<T>(), rstd.data<T>(), rows, size, eps);
    check_launch("layer_norm_last_kernel", ctx.stream);
  });
}


void log_softmax_backward_last(const Array& g, const Array& out, Array& grad_a, int64_t size) {
  const char* op = "log_softmax_backward_last";
  require_same_dtype(op, {&g, &out, &grad_a});
  require_dtype(op, grad_a.dtype(), kernel_dtypes::log_softmax_backward_last);
  const int64_t rows =
      checks::check_log_softmax_backward(op, g.size(), out.size(), grad_a.size(), size);
  const Launch ctx = launch_on(op, {&g, &out, &grad_a});
  if (rows == 0) return;
  dispatch<kernel_dtypes::log_softmax_backward_last>(op, grad_a.dtype(), [&](auto t) {
    using T = decltype(t);
    const bool warp = size <= kWarpRowMax;
    const auto kernel = warp ? &log_softmax_backward_last_kernel<T, 32>
                             : &log_softmax_backward_last_kernel<T, kThreads>;
    launch_kernel(kernel, grid_for(warp ? (rows + 7) / 8 : rows, ctx.device, 1), kThreads, 0,
                  ctx.stream, g.data<T>(), out.data<T>(), grad_a.data<T>(), rows, size);
    check_launch("log_softmax_backward_last_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
