// index.cu: indexing with int64 index buffers: index_gather, its adjoint
// index_scatter_add, index_copy (item assignment) (every dtype: atomicAdd for numbers, a plain store of true
// for bool, whose sum is a logical or), and find_outside, the value check that
// the index kernels and integer powers run before they write.
//
// a is viewed as compact (outer, axis_size, inner), idx holds n entries.
// Indices are validated on the device before anything is written: a check
// kernel records the first entry outside [0, axis_size) and the host reads it
// back (8 bytes), so each call is one synchronisation point. That is the price
// of raising IndexError from the call that got the bad index instead of
// corrupting out or faulting later. Repeated indices accumulate through
// atomicAdd, so scatter_add's float rounding order is not deterministic.
#include <cstdint>
#include <type_traits>

#include "common.cuh"

namespace lamina_cuda {

// first_bad = min j with x[j] outside [lo, hi] (stays ~0 when all are inside).
__global__ void find_outside_kernel(const int64_t* __restrict__ x, int64_t n, int64_t lo,
                                    int64_t hi, unsigned long long* first_bad) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t v = x[j];
    if (v < lo || v > hi) atomicMin(first_bad, static_cast<unsigned long long>(j));
  }
}

int64_t find_outside(const char* op, const int64_t* x, int64_t n, int64_t lo, int64_t hi,
                     const Launch& ctx, int64_t* value) {
  if (n == 0) return -1;
  Scratch flag(ctx.device, sizeof(unsigned long long));
  LAMINA_CUDA_CHECK(cudaMemsetAsync(flag.as<void>(), 0xff, sizeof(unsigned long long), ctx.stream),
                    op);
  launch_kernel(&find_outside_kernel, grid_for(n, ctx.device), kThreads, 0, ctx.stream, x, n, lo,
                hi, flag.as<unsigned long long>());
  check_launch("find_outside_kernel", ctx.stream);
  unsigned long long bad = 0;
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.as<void>(), sizeof bad, cudaMemcpyDeviceToHost,
                                    ctx.stream),
                    op);
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), op);
  if (bad == ~0ull) return -1;
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(value, x + bad, sizeof *value, cudaMemcpyDeviceToHost,
                                    ctx.stream),
                    op);
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), op);
  return static_cast<int64_t>(bad);
}

namespace {

// *p += v for concurrent writers: atomicAdd for floats, on the unsigned type for
// int64 (wrapping, as numpy's add.at); bool's sum is or, and every writer of a
// true stores the same byte, so a plain store is enough (there is no 1-byte atomic).
template <class T>
__device__ __forceinline__ void scatter_add_at(T* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v) *p = true;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);
  }
}

}  // namespace

// out[o, j, i] = a[o, idx[j], i]; thread e handles out element e (coalesced writes).
template <class T>
__global__ void index_gather_kernel(const T* __restrict__ a, const int64_t* __restrict__ idx,
                                    T* __restrict__ out, int64_t total, int64_t n,
                                    int64_t axis_size, int64_t inner) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = e % inner, oj = e / inner;
    const int64_t j = oj % n, o = oj / n;
    out[e] = a[(o * axis_size + idx[j]) * inner + i];
  }
}

// out[o, idx[j], i] += a[o, j, i] (Add: index_scatter_add) or = a[o, j, i]
// (index_copy); thread e handles a element e. Without Add, the value that
// lands for a repeated index is unspecified (the interface allows it).
template <class T, bool Add>
__global__ void index_scatter_kernel(const T* __restrict__ a, const int64_t* __restrict__ idx,
                                     T* __restrict__ out, int64_t total, int64_t n,
                                     int64_t axis_size, int64_t inner) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = e % inner, oj = e / inner;
    const int64_t j = oj % n, o = oj / n;
    T* d = &out[(o * axis_size + idx[j]) * inner + i];
    if constexpr (Add) scatter_add_at(d, a[e]);
    else *d = a[e];
  }
}

namespace {

// Raises IndexError naming the first out-of-range entry of idx (synchronises).
void check_indices(const char* op, const Array& idx, int64_t axis_size, const Launch& ctx) {
  int64_t value = 0;
  const int64_t bad = find_outside(op, idx.data<int64_t>(), idx.size(), 0, axis_size - 1, ctx,
                                   &value);
  if (bad >= 0)
    throw IndexError(cat(op, ": index ", value, " (entry ", bad, " of idx) is out of range for "
                         "an axis of size ", axis_size));
}

}  // namespace

void index_gather(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                  int64_t inner) {
  require_same_dtype("index_gather", {&a, &out});
  checks::check_index_layout("index_gather", a.size(), idx.dtype_str(), outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t total = checked_mul(checked_mul(outer, n, "index_gather"), inner, "index_gather");
  if (out.size() != total)
    value_error("index_gather: out has ", out.size(), " elements, expected ", total);
  const Launch ctx = launch_on("index_gather", {&a, &idx, &out});
  check_indices("index_gather", idx, axis_size, ctx);
  if (total == 0) return;
  dispatch<kernel_dtypes::index_gather>("index_gather", a.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_kernel(&index_gather_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  a.data<T>(), idx.data<int64_t>(), out.data<T>(), total, n, axis_size, inner);
    check_launch("index_gather_kernel", ctx.stream);
  });
}

namespace {

// index_scatter_add (Add) and index_copy: a (outer, n, inner) into out
// (outer, axis_size, inner) at the n entries of idx, checked alike.
template <DTypes Allowed, bool Add>
void index_scatter(const char* op, const Array& a, const Array& idx, Array& out, int64_t outer,
                   int64_t axis_size, int64_t inner) {
  require_same_dtype(op, {&a, &out});
  checks::check_index_layout(op, out.size(), idx.dtype_str(), outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t total = checked_mul(checked_mul(outer, n, op), inner, op);
  if (a.size() < total) value_error(op, ": source has ", a.size(), " elements, expected ", total);
  const Launch ctx = launch_on(op, {&a, &idx, &out});
  dispatch<Allowed>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    check_indices(op, idx, axis_size, ctx);
    if (total == 0) return;
    launch_kernel(&index_scatter_kernel<T, Add>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, a.data<T>(), idx.data<int64_t>(), out.data<T>(), total, n, axis_size,
                  inner);
    check_launch("index_scatter_kernel", ctx.stream);
  });
}

}  // namespace

void index_scatter_add(const Array& a, const Array& idx, Array& out, int64_t outer,
                       int64_t axis_size, int64_t inner) {
  index_scatter<kernel_dtypes::index_scatter_add, true>("index_scatter_add", a, idx, out, outer,
                                                        axis_size, inner);
}

void index_copy(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                int64_t inner) {
  index_scatter<kernel_dtypes::index_copy, false>("index_copy", a, idx, out, outer, axis_size,
                                                  inner);
}

}  // namespace lamina_cuda
