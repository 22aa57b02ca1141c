// strided.cu: strided access and buffer writes: compact, ewise_setitem,
// scalar_setitem and fill.
//
// A view arrives as a StridedLayout by value (at most kMaxDims dims after
// size-1 dims are dropped and contiguous neighbours merged, so most views
// have one to three). Thread i handles logical element i: the compact side is
// read or written at i, so that side is always coalesced; the strided side
// is coalesced whenever the innermost stride is 1. The index arithmetic runs
// in 32 bits when the view is small enough, which halves the cost of the
// divisions that turn i into a position.
#include <algorithm>
#include <limits>
#include <string>

#include "common.cuh"

namespace lamina_cuda {

void require_view_inside(const char* op, const char* what, const Shape& shape, const Shape& strides,
                         int64_t offset, int64_t buffer_size) {
  int64_t lo = offset, hi = offset;
  bool overflow = false;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    int64_t reach = 0;
    overflow |= __builtin_mul_overflow(strides[k], shape[k] - 1, &reach);
    int64_t& end = reach < 0 ? lo : hi;
    overflow |= __builtin_add_overflow(end, reach, &end);
  }
  if (overflow || lo < 0 || hi >= buffer_size)
    value_error(op, ": ", what, " (shape ", shape_str(shape), ", strides ", shape_str(strides),
                ", offset ", offset, ") reaches ",
                overflow ? std::string("past int64") : cat("elements ", lo, "..", hi),
                ", outside its buffer of ", buffer_size, " elements");
}

int64_t step_over(int64_t stride, int64_t n) {
  int64_t span = 0;
  return __builtin_mul_overflow(stride, n, &span) ? INT64_MIN : span;
}

StridedLayout make_layout(const char* op, const Shape& shape, const Shape& strides,
                          int64_t offset, int64_t buffer_size) {
  if (shape.size() != strides.size())
    value_error(op, ": shape ", shape_str(shape), " and strides ", shape_str(strides),
                " differ in length");
  int64_t size = 1;
  for (int64_t n : shape) {
    if (n < 0) value_error(op, ": negative dimension in shape ", shape_str(shape));
    size = checked_mul(size, n, op);
  }
  StridedLayout l{};
  l.size = size;
  l.offset = offset;
  l.ndim = 0;
  if (size == 0) return l;
  require_view_inside(op, "view", shape, strides, offset, buffer_size);
  // Drop size-1 dims, merge dim k into k-1 when k-1 steps exactly over k.
  Shape dims, steps;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!dims.empty() && steps.back() == step_over(strides[k], shape[k])) {
      dims.back() *= shape[k];
      steps.back() = strides[k];
    } else {
      dims.push_back(shape[k]);
      steps.push_back(strides[k]);
    }
  }
  if (dims.size() > static_cast<std::size_t>(kMaxDims))
    value_error(op, ": view of shape ", shape_str(shape), " and strides ", shape_str(strides),
                " has ", dims.size(), " dims after merging contiguous ones; the cuda backend "
                "handles at most ", kMaxDims, "; compact it in steps");
  l.ndim = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), l.shape);
  std::copy(steps.begin(), steps.end(), l.strides);
  return l;
}

namespace {

// 32-bit division is several times cheaper than 64-bit; i + grid stride must fit too.
bool fits_int32(const StridedLayout& l) {
  return l.size < (std::numeric_limits<int32_t>::max() / 2);
}

}  // namespace

template <class T, class I>
__global__ void compact_kernel(const T* __restrict__ a, T* __restrict__ out, StridedLayout l) {
  const I n = static_cast<I>(l.size);
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = a[view_position(l, i)];
}

template <class T, class I>
__global__ void ewise_setitem_kernel(const T* __restrict__ a, T* __restrict__ out,
                                     StridedLayout l) {
  const I n = static_cast<I>(l.size);
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[view_position(l, i)] = a[i];
}

template <class T, class I>
__global__ void scalar_setitem_kernel(T value, T* __restrict__ out, StridedLayout l) {
  const I n = static_cast<I>(l.size);
  for (I i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[view_position(l, i)] = value;
}

template <class T>
__global__ void fill_kernel(T value, T* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = value;
}

void compact_into(const Array& a, void* out, const StridedLayout& l, const Launch& ctx) {
  if (l.size == 0) return;
  const std::size_t item = dtype_itemsize(a.dtype());
  if (is_contiguous(l)) {
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(out, static_cast<char*>(a.raw()) + l.offset * item,
                                      l.size * item, cudaMemcpyDeviceToDevice, ctx.stream),
                      "compact");
    return;
  }
  dispatch<kernel_dtypes::compact>("compact", a.dtype(), [&](auto t) {
    using T = decltype(t);
    const unsigned grid = grid_for(l.size, ctx.device);
    T* dst = static_cast<T*>(out);
    if (fits_int32(l))
      launch_kernel(&compact_kernel<T, int32_t>, grid, kThreads, 0, ctx.stream, a.data<T>(), dst,
                    l);
    else
      launch_kernel(&compact_kernel<T, int64_t>, grid, kThreads, 0, ctx.stream, a.data<T>(), dst,
                    l);
    check_launch("compact_kernel", ctx.stream);
  });
}

void compact(const Array& a, Array& out, const Shape& shape, const Shape& strides,
             int64_t offset) {
  require_same_dtype("compact", {&a, &out});
  const StridedLayout l = make_layout("compact", shape, strides, offset, a.size());
  if (out.size() < l.size)
    value_error("compact: out has ", out.size(), " elements, view has ", l.size);
  const Launch ctx = launch_on("compact", {&a, &out});
  compact_into(a, out.raw(), l, ctx);
}

void ewise_setitem(const Array& a, Array& out, const Shape& shape, const Shape& strides,
                   int64_t offset) {
  require_same_dtype("ewise_setitem", {&a, &out});
  const StridedLayout l = make_layout("ewise_setitem", shape, strides, offset, out.size());
  if (a.size() < l.size)
    value_error("ewise_setitem: source has ", a.size(), " elements, view has ", l.size);
  const Launch ctx = launch_on("ewise_setitem", {&a, &out});
  if (l.size == 0) return;
  const std::size_t item = dtype_itemsize(a.dtype());
  if (is_contiguous(l)) {
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(out.raw()) + l.offset * item, a.raw(),
                                      l.size * item, cudaMemcpyDeviceToDevice, ctx.stream),
                      "ewise_setitem");
    return;
  }
  dispatch<kernel_dtypes::ewise_setitem>("ewise_setitem", a.dtype(), [&](auto t) {
    using T = decltype(t);
    const unsigned grid = grid_for(l.size, ctx.device);
    if (fits_int32(l))
      launch_kernel(&ewise_setitem_kernel<T, int32_t>, grid, kThreads, 0, ctx.stream, a.data<T>(),
                    out.data<T>(), l);
    else
      launch_kernel(&ewise_setitem_kernel<T, int64_t>, grid, kThreads, 0, ctx.stream, a.data<T>(),
                    out.data<T>(), l);
    check_launch("ewise_setitem_kernel", ctx.stream);
  });
}

void scalar_setitem(int64_t size, const Scalar& value, Array& out, const Shape& shape,
                    const Shape& strides, int64_t offset) {
  const StridedLayout l = make_layout("scalar_setitem", shape, strides, offset, out.size());
  if (size != l.size)
    value_error("scalar_setitem: size ", size, " != prod(shape ", shape_str(shape), ") = ", l.size);
  const Launch ctx = launch_on("scalar_setitem", {&out});
  if (l.size == 0) return;
  dispatch<kernel_dtypes::scalar_setitem>("scalar_setitem", out.dtype(), [&](auto t) {
    using T = decltype(t);
    const unsigned grid = grid_for(l.size, ctx.device);
    if (fits_int32(l))
      launch_kernel(&scalar_setitem_kernel<T, int32_t>, grid, kThreads, 0, ctx.stream,
                    value.as<T>(), out.data<T>(), l);
    else
      launch_kernel(&scalar_setitem_kernel<T, int64_t>, grid, kThreads, 0, ctx.stream,
                    value.as<T>(), out.data<T>(), l);
    check_launch("scalar_setitem_kernel", ctx.stream);
  });
}

void fill(Array& out, const Scalar& value) {
  const Launch ctx = launch_on("fill", {&out});
  if (out.size() == 0) return;
  dispatch<kernel_dtypes::fill>("fill", out.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_kernel(&fill_kernel<T>, grid_for(out.size(), ctx.device), kThreads, 0, ctx.stream,
                  value.as<T>(), out.data<T>(), out.size());
    check_launch("fill_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
