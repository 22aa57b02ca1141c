// bindings.cc: the extension module lamina_backend_cuda._core. Every export of
// the backend is listed here, each bound under the name of its C++ launcher
// (LAMINA_DEF stringifies the one spelling), with the argument names of
// docs/backend-interface.md. Maps the backend's error types onto Python's:
// TypeError, IndexError, ValueError (std::invalid_argument) and RuntimeError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "kernels.h"

namespace py = pybind11;
using namespace pybind11::literals;

// Python int (exact), float, bool or numpy scalar -> lamina_cuda::Scalar.
namespace pybind11::detail {
template <>
struct type_caster<lamina_cuda::Scalar> {
  PYBIND11_TYPE_CASTER(lamina_cuda::Scalar, const_name("float"));
  bool load(handle src, bool) {
    PyObject* o = src.ptr();
    if (!PyFloat_Check(o) && PyIndex_Check(o)) {
      object index = reinterpret_steal<object>(PyNumber_Index(o));
      if (!index) {
        PyErr_Clear();
        return false;
      }
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
      if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
        value.is_int = true;
        value.i = v;
        value.f = static_cast<double>(v);
        return true;
      }
      PyErr_Clear();
      value.is_int = false;
      value.f = PyLong_AsDouble(index.ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      return true;
    }
    const double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.is_int = false;
    value.f = d;
    return true;
  }
};
}  // namespace pybind11::detail

#define LAMINA_DEF(NAME, ...) m.def(#NAME, &lamina_cuda::NAME, __VA_ARGS__)
// The kernels of one op of ewise_ops.h, their docs built from its DOC.
#define LAMINA_DEF_BINARY(NAME, OP, SET, FORMS, DOC)                                           \
  LAMINA_DEF(ewise_##NAME, "a"_a, "b"_a, "out"_a, "out[i] = f(a[i], b[i]), f(x, y) = " DOC);   \
  LAMINA_DEF(ewise_strided_##NAME, "a"_a, "b"_a, "out"_a, "shape"_a, "a_strides"_a,            \
             "a_offset"_a, "b_strides"_a, "b_offset"_a,                                        \
             "out[i] = f(a[a_offset + i . a_strides], b[b_offset + i . b_strides]) for every " \
             "index tuple i of shape, out compact; f(x, y) = " DOC);                           \
  LAMINA_IF_SCALAR(FORMS, LAMINA_DEF(scalar_##NAME, "a"_a, "value"_a, "out"_a,                 \
                                     "out[i] = f(a[i], value), f(x, y) = " DOC);)              \
  LAMINA_IF_REVERSED(FORMS, LAMINA_DEF(scalar_r##NAME, "a"_a, "value"_a, "out"_a,              \
                                       "out[i] = f(value, a[i]), f(x, y) = " DOC);)
#define LAMINA_DEF_UNARY(NAME, OP, SET, DOC)                                 \
  LAMINA_DEF(ewise_##NAME, "a"_a, "out"_a, "out[i] = f(a[i]), f(x) = " DOC);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Lamina's cuda backend (interface v2.0): device buffers and CUDA kernels";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lamina_cuda::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const lamina_cuda::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    }
  });

  using lamina_cuda::Array;
  py::class_<Array>(m, "Array", "A flat device buffer of `size` elements of `dtype` on cuda:`device`.")
      .def(py::init<int64_t, const std::string&, int>(), "size"_a, "dtype"_a, "device"_a = 0)
      .def_property_readonly("size", &Array::size)
      .def_property_readonly("dtype", &Array::dtype_str)
      .def_property_readonly("device", &Array::device)
      .def_property_readonly("nbytes", &Array::nbytes)
      .def("__repr__", [](const Array& a) {
        return lamina_cuda::cat("cuda.Array(size=", a.size(), ", dtype=", a.dtype_str(),
                                ", device=", a.device(), ")");
      });

  // metadata, devices and memory
  LAMINA_DEF(is_available, "Whether a CUDA device and driver are usable.");
  LAMINA_DEF(unavailable_reason, "Why not (the CUDA error text), or ''.");
  LAMINA_DEF(device_count, "Number of CUDA devices (0 when unavailable).");
  m.def("emulated", [] { return lamina_cuda::kEmulated; },
        "True in the CPU emulation build (HIP-CPU, LAMINA_CUDA_EMULATE): not a GPU.");
  LAMINA_DEF(synchronize, "Wait until all queued work of every device is done.");
  LAMINA_DEF(empty_cache, "Return cached device blocks to the driver.");
  LAMINA_DEF(memory_stats, "device"_a = 0, "Allocator statistics of one device (bytes, counts).");
  m.def(
      "kernel_dtypes",
      [] {
        // The kernels that take fewer dtypes than the backend lists (kernel_dtypes.h).
        py::dict table;
        auto add = [&](const char* name, lamina_cuda::DTypes set) {
          // every one but the 16-bit floats: what a kernel not named takes (interface
          // v2.2; the storage kernels take those unnamed too)
          if (set == lamina_cuda::kAllDTypes) return;
          py::list names;
          for (auto dt : {lamina_cuda::DType::Float32, lamina_cuda::DType::Float64,
                          lamina_cuda::DType::Int64, lamina_cuda::DType::Bool,
                          lamina_cuda::DType::Float16, lamina_cuda::DType::BFloat16})
            if (set & lamina_cuda::dtype_bit(dt)) names.append(lamina_cuda::dtype_name(dt));
          table[name] = py::tuple(names);
        };
#define LAMINA_KERNEL_DTYPE_ENTRY(NAME, SET) add(#NAME, lamina_cuda::kernel_dtypes::NAME);
        LAMINA_KERNEL_DTYPES(LAMINA_KERNEL_DTYPE_ENTRY)
#undef LAMINA_KERNEL_DTYPE_ENTRY
        return table;
      },
      "Interface v2.0: the dtypes of each kernel that takes fewer than every listed dtype.");

  // buffers
  LAMINA_DEF(from_numpy, "src"_a, "out"_a, "Copy a numpy array of out.size elements into out.");
  LAMINA_DEF(to_numpy, "a"_a, "shape"_a, "strides"_a, "offset"_a,
             "A new C-contiguous numpy array holding the strided view of a (waits).");
  LAMINA_DEF(fill, "out"_a, "value"_a, "Set every element of out to value.");

  // strided access
  LAMINA_DEF(compact, "a"_a, "out"_a, "shape"_a, "strides"_a, "offset"_a,
             "out[i] = a[view position of i]");
  LAMINA_DEF(ewise_setitem, "a"_a, "out"_a, "shape"_a, "strides"_a, "offset"_a,
             "out[view position of i] = a[i]");
  LAMINA_DEF(scalar_setitem, "size"_a, "value"_a, "out"_a, "shape"_a, "strides"_a, "offset"_a,
             "out[view position of i] = value");

  // elementwise
  LAMINA_BINARY_OPS(LAMINA_DEF_BINARY)
  LAMINA_UNARY_OPS(LAMINA_DEF_UNARY)
  LAMINA_DEF(ewise_where, "cond"_a, "a"_a, "b"_a, "out"_a, "out[i] = a[i] if cond[i] != 0 else b[i]");
  LAMINA_DEF(relu_backward, "x"_a, "g"_a, "out"_a, "out[i] = 0 if x[i] <= 0 else g[i]");
  LAMINA_DEF(ewise_cast, "a"_a, "out"_a, "out[i] = a[i] converted to out.dtype");
  LAMINA_DEF(ewise_program, "bufs"_a, "code"_a, "scalars"_a, "n"_a,
             "a chain of elementwise instructions (op, dst, a, b) over the first n elements "
             "of bufs, as one kernel (v2.1)");

  // reductions over the last axis, and fused row kernels
  LAMINA_DEF(reduce_sum, "a"_a, "out"_a, "size"_a, "out[j] = sum(a[j*size:(j+1)*size])");
  LAMINA_DEF(reduce_max, "a"_a, "out"_a, "size"_a, "out[j] = max(a[j*size:(j+1)*size])");
  LAMINA_DEF(reduce_min, "a"_a, "out"_a, "size"_a, "out[j] = min(a[j*size:(j+1)*size])");
  LAMINA_DEF(reduce_argmax, "a"_a, "out"_a, "size"_a, "out[j] = first argmax of row j (int64)");
  LAMINA_DEF(reduce_prod, "a"_a, "out"_a, "size"_a, "out[j] = prod(a[j*size:(j+1)*size])");
  LAMINA_DEF(cumsum_last, "a"_a, "out"_a, "size"_a,
             "out[j*size + k] = sum(a[j*size : j*size + k + 1]), running sums along rows");
  LAMINA_DEF(sort_last, "a"_a, "values_out"_a, "indices_out"_a, "size"_a, "k"_a, "descending"_a,
             "the first k of each row's stable sort (NaN largest): values and int64 indices");
  LAMINA_DEF(multinomial_last, "probs"_a, "uniforms"_a, "out"_a, "size"_a, "samples"_a,
             "out[r, j] = the category of row r whose running-sum interval holds "
             "uniforms[r, j] * total");
  LAMINA_DEF(reduce_sum_axis, "a"_a, "out"_a, "outer"_a, "size"_a, "inner"_a,
             "out[o, i] = sum_k a[o, k, i]");
  LAMINA_DEF(softmax_last, "a"_a, "out"_a, "size"_a, "row-wise softmax of (rows, size)");
  LAMINA_DEF(log_softmax_backward_last, "g"_a, "out"_a, "grad_a"_a, "size"_a,
             "grad_a = g - exp(out) * rowsum(g): a row-wise log-softmax's backward, out its output");
  LAMINA_DEF(logsumexp_last, "a"_a, "out"_a, "size"_a, "row-wise stable log(sum(exp(a)))");
  LAMINA_DEF(layer_norm_last, "a"_a, "weight"_a, "bias"_a, "out"_a, "mean"_a, "rstd"_a, "size"_a,
             "eps"_a, "row-wise LayerNorm of (rows, size); mean and rstd (rows,) for the backward");

  // indexing
  LAMINA_DEF(index_gather, "a"_a, "idx"_a, "out"_a, "outer"_a, "axis_size"_a, "inner"_a,
             "out[o, j, i] = a[o, idx[j], i] (validates idx: waits)");
  LAMINA_DEF(index_scatter_add, "a"_a, "idx"_a, "out"_a, "outer"_a, "axis_size"_a, "inner"_a,
             "out[o, idx[j], i] += a[o, j, i] (validates idx: waits)");
  LAMINA_DEF(index_copy, "a"_a, "idx"_a, "out"_a, "outer"_a, "axis_size"_a, "inner"_a,
             "out[o, idx[j], i] = a[o, j, i] (validates idx: waits)");

  // matrix multiplication
  LAMINA_DEF(matmul, "a"_a, "b"_a, "out"_a, "m"_a, "n"_a, "p"_a, "out (m, p) = a (m, n) @ b (n, p)");
  LAMINA_DEF(matmul_batched, "a"_a, "b"_a, "out"_a, "batch"_a, "m"_a, "n"_a, "p"_a,
             "out[k] = a[k] @ b[k] for k < batch");
  LAMINA_DEF(matmul_strided, "a"_a, "b"_a, "out"_a, "m"_a, "n"_a, "p"_a, "a_offset"_a, "a_rs"_a,
             "a_cs"_a, "b_offset"_a, "b_rs"_a, "b_cs"_a,
             "out (m, p) = A @ B, A[i, k] = a[a_offset + i*a_rs + k*a_cs], "
             "B[k, j] = b[b_offset + k*b_rs + j*b_cs]");
  LAMINA_DEF(matmul_batched_strided, "a"_a, "b"_a, "out"_a, "batch"_a, "m"_a, "n"_a, "p"_a,
             "a_offset"_a, "a_strides"_a, "b_offset"_a, "b_strides"_a,
             "out[i] = A[i] @ B[i] for every index i of the batch shape, A and B strided views");

  // convolution helpers
  LAMINA_DEF(im2col, "a"_a, "out"_a, "n"_a, "c"_a, "h"_a, "w"_a, "kh"_a, "kw"_a, "sh"_a, "sw"_a,
             "ph"_a, "pw"_a, "dh"_a, "dw"_a, "NCHW patches into (n, oh, ow, c, kh, kw)");
  LAMINA_DEF(col2im, "a"_a, "out"_a, "n"_a, "c"_a, "h"_a, "w"_a, "kh"_a, "kw"_a, "sh"_a, "sw"_a,
             "ph"_a, "pw"_a, "dh"_a, "dw"_a, "adjoint of im2col; overwrites out");

  // recurrent cells (rnn.cu): one LSTM or GRU time step, forward and backward
  LAMINA_DEF(lstm_cell, "xp"_a, "hh"_a, "state"_a, "acts"_a, "tanh_c"_a, "step"_a, "batch"_a,
             "hidden"_a,
             "state[step+1] = [h_t | c_t], acts[step], tanh_c[step] from xp[step] + hh");
  LAMINA_DEF(lstm_cell_backward, "g"_a, "dh_mm"_a, "acts"_a, "state"_a, "tanh_c"_a, "dc"_a,
             "d_gates"_a, "step"_a, "batch"_a, "hidden"_a,
             "d_gates[step] from g[step] and dh_mm; dc carries dc_{t+1} f_{t+1} in, dc_t f_t out");
  LAMINA_DEF(gru_cell, "xp"_a, "hh"_a, "b_hh"_a, "state"_a, "gates"_a, "step"_a, "batch"_a,
             "hidden"_a, "state[step+1] = h_t and gates[step] = [r, z, n, hn]");
  LAMINA_DEF(gru_cell_backward, "g"_a, "dh_mm"_a, "gates"_a, "state"_a, "dh"_a, "d_hh"_a,
             "d_xp"_a, "step"_a, "batch"_a, "hidden"_a,
             "d_hh[step], d_xp[step] from g[step] and dh_mm; dh carries dh_{t+1} z_{t+1} in");

  // batch normalisation (batch_norm.cu), per channel of (n, c, s)
  LAMINA_DEF(batch_norm_stats, "x"_a, "mean"_a, "var"_a, "n"_a, "c"_a, "s"_a,
             "mean and biased variance (c,) of each channel");
  LAMINA_DEF(batch_norm_apply, "x"_a, "mean"_a, "rstd"_a, "weight"_a, "bias"_a, "out"_a, "n"_a,
             "c"_a, "s"_a, "out = (x - mean) * (rstd * weight) + bias per channel");
  LAMINA_DEF(batch_norm_backward, "g"_a, "x"_a, "mean"_a, "rstd"_a, "weight"_a, "dx"_a,
             "dweight"_a, "dbias"_a, "n"_a, "c"_a, "s"_a, "training"_a,
             "dbias = sum(g), dweight = sum(g * xhat) and dx per channel");

  // max pooling with indices (pool.cu)
  LAMINA_DEF(max_pool2d, "x"_a, "out"_a, "indices"_a, "planes"_a, "h"_a, "w"_a, "oh"_a, "ow"_a,
             "kh"_a, "kw"_a, "sh"_a, "sw"_a, "ph"_a, "pw"_a, "dh"_a, "dw"_a,
             "max of each window of each (h, w) plane and its flat index y*w + x");
  LAMINA_DEF(max_pool2d_backward, "grad_out"_a, "indices"_a, "grad_in"_a, "planes"_a, "h"_a,
             "w"_a, "oh"_a, "ow"_a, "kh"_a, "kw"_a, "sh"_a, "sw"_a, "ph"_a, "pw"_a, "dh"_a,
             "dw"_a, "grad_in = grad_out summed at the indices; overwrites grad_in");
}
