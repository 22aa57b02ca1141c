// buffers.cc: copies between numpy and device buffers: from_numpy and to_numpy.
//
// from_numpy queues a host-to-device copy and returns: for pageable memory
// the runtime stages the source before the call returns, so the numpy array
// may be freed at once; from page-locked memory (a pinned PyTorch tensor's
// numpy view, a buffer an MPI library registered) the copy would run later,
// while the caller may already be writing or freeing the array, so there the
// call waits for it, as a PyTorch copy without non_blocking does. to_numpy is where the host waits: it compacts a
// strided view on the device when needed, copies it into a new C-contiguous
// numpy array and synchronises the stream with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "kernels.h"

namespace py = pybind11;

namespace lamina_cuda {

void from_numpy(const py::array& src, Array& out) {
  if (src.size() != out.size())
    value_error("from_numpy: source has ", src.size(), " elements, out has ", out.size());
  const Launch ctx = launch_on("from_numpy", {&out});
  dispatch<kernel_dtypes::from_numpy>("from_numpy", out.dtype(), [&](auto t) {
    using T = decltype(t);
    auto host = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(src);
    if (!host) {
      PyErr_Clear();
      throw TypeError(cat("from_numpy: cannot convert a numpy array of dtype ",
                          std::string(py::str(src.dtype())), " to ", out.dtype_str()));
    }
    if (out.size() == 0) return;
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(out.raw(), host.data(), out.nbytes(), cudaMemcpyHostToDevice,
                                      ctx.stream),
                      "from_numpy");
    if (page_locked(host.data())) {
      py::gil_scoped_release nogil;
      LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), "from_numpy");
    }
  });
}

py::array to_numpy(const Array& a, const Shape& shape, const Shape& strides, int64_t offset) {
  const StridedLayout l = make_layout("to_numpy", shape, strides, offset, a.size());
  py::array result(py::dtype(a.dtype_str()), std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (l.size == 0) return result;
  const Launch ctx = launch_on("to_numpy", {&a});
  const std::size_t bytes = static_cast<std::size_t>(l.size) * dtype_itemsize(a.dtype());
  void* host = result.mutable_data();
  if (is_contiguous(l)) {
    const char* src = static_cast<const char*>(a.raw()) + l.offset * dtype_itemsize(a.dtype());
    py::gil_scoped_release nogil;
    LAMINA_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, ctx.stream),
                      "to_numpy");
    LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), "to_numpy");
    return result;
  }
  Scratch staged(ctx.device, bytes);
  compact_into(a, staged.as<void>(), l, ctx);
  py::gil_scoped_release nogil;
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(host, staged.as<void>(), bytes, cudaMemcpyDeviceToHost,
                                    ctx.stream),
                    "to_numpy");
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream), "to_numpy");
  return result;
}

}  // namespace lamina_cuda
