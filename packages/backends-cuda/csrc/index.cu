// index.cu: indexing with int64 index buffers: index_gather (any dtype) and
// its adjoint index_scatter_add (float32/float64, atomicAdd).
//
// a is viewed as compact (outer, axis_size, inner), idx holds n entries.
// Indices are validated on the device before anything is written: a check
// kernel records the first entry outside [0, axis_size) and the host reads it
// back (8 bytes), so each call is one synchronisation point. That is the price
// of raising IndexError from the call that got the bad index instead of
// corrupting out or faulting later. Repeated indices accumulate through
// atomicAdd, so scatter_add's float rounding order is not deterministic.
#include <cstdint>

#include "common.cuh"

namespace lamina_cuda {

// first_bad = min j with idx[j] outside [0, axis_size) (stays ~0 when all are fine).
__global__ void index_check_kernel(const int64_t* __restrict__ idx, int64_t n, int64_t axis_size,
                                   unsigned long long* first_bad) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t v = idx[j];
    if (v < 0 || v >= axis_size) atomicMin(first_bad, static_cast<unsigned long long>(j));
  }
}

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

// out[o, idx[j], i] += a[o, j, i]; thread e handles a element e.
template <class T>
__global__ void index_scatter_add_kernel(const T* __restrict__ a, const int64_t* __restrict__ idx,
                                         T* __restrict__ out, int64_t total, int64_t n,
                                         int64_t axis_size, int64_t inner) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = e % inner, oj = e / inner;
    const int64_t j = oj % n, o = oj / n;
    atomicAdd(&out[(o * axis_size + idx[j]) * inner + i], a[e]);
  }
}

namespace {

// Common checks; returns outer * axis_size * inner.
int64_t check_index_layout(const char* op, const Array& buf, const Array& idx, int64_t outer,
                           int64_t axis_size, int64_t inner) {
  if (idx.dtype() != DType::Int64)
    throw TypeError(cat(op, ": indices must be int64, got ", idx.dtype_str()));
  require_nonneg(op, "outer", outer);
  require_nonneg(op, "axis_size", axis_size);
  require_nonneg(op, "inner", inner);
  const int64_t need = checked_mul(checked_mul(outer, axis_size, op), inner, op);
  if (buf.size() < need)
    value_error(op, ": buffer has ", buf.size(), " elements, layout needs ", need);
  return need;
}

// Raises IndexError naming the first out-of-range entry of idx (synchronises).
void check_indices(const char* op, const Array& idx, int64_t axis_size, const Launch& ctx) {
  const int64_t n = idx.size();
  if (n == 0) return;
  Scratch flag(ctx.device, sizeof(unsigned long long));
  LAMINA_CUDA_CHECK(cudaMemsetAsync(flag.as<void>(), 0xff, sizeof(unsigned long long), ctx.stream),
                    op);
  launch_kernel(&index_check_kernel, grid_for(n, ctx.device), kThreads, 0, ctx.stream,
                idx.data<int64_t>(), n, axis_size, flag.as<unsigned long long>());
  check_launch("index_check_kernel", ctx.stream);
  unsigned long long bad = 0;
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(&bad, flag.as<void>(), sizeof bad, cudaMemcpyDeviceToHost,
                                    ctx.stream),
                    op);
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), op);
  if (bad == ~0ull) return;
  int64_t value = 0;
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(&value, idx.data<int64_t>() + bad, sizeof value,
                                    cudaMemcpyDeviceToHost, ctx.stream),
                    op);
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), op);
  throw IndexError(cat(op, ": index ", value, " (entry ", bad, " of idx) is out of range for an "
                       "axis of size ", axis_size));
}

}  // namespace

void index_gather(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                  int64_t inner) {
  require_same_dtype("index_gather", {&a, &out});
  check_index_layout("index_gather", a, idx, outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t total = checked_mul(checked_mul(outer, n, "index_gather"), inner, "index_gather");
  if (out.size() != total)
    value_error("index_gather: out has ", out.size(), " elements, expected ", total);
  const Launch ctx = launch_on("index_gather", {&a, &idx, &out});
  check_indices("index_gather", idx, axis_size, ctx);
  if (total == 0) return;
  dispatch_all(a.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_kernel(&index_gather_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  a.data<T>(), idx.data<int64_t>(), out.data<T>(), total, n, axis_size, inner);
    check_launch("index_gather_kernel", ctx.stream);
  });
}

void index_scatter_add(const Array& a, const Array& idx, Array& out, int64_t outer,
                       int64_t axis_size, int64_t inner) {
  require_same_dtype("index_scatter_add", {&a, &out});
  check_index_layout("index_scatter_add", out, idx, outer, axis_size, inner);
  const int64_t n = idx.size();
  const int64_t total =
      checked_mul(checked_mul(outer, n, "index_scatter_add"), inner, "index_scatter_add");
  if (a.size() < total)
    value_error("index_scatter_add: source has ", a.size(), " elements, expected ", total);
  const Launch ctx = launch_on("index_scatter_add", {&a, &idx, &out});
  dispatch_float("index_scatter_add", a.dtype(), [&](auto t) {
    using T = decltype(t);
    check_indices("index_scatter_add", idx, axis_size, ctx);
    if (total == 0) return;
    launch_kernel(&index_scatter_add_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, a.data<T>(), idx.data<int64_t>(), out.data<T>(), total, n, axis_size,
                  inner);
    check_launch("index_scatter_add_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
