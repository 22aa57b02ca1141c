// bindings.cc: the one place where the extension lamina_backend_cpu._core is
// defined: every exported kernel, the Array class, the metadata of interface
// v1 and the exception mapping (std::invalid_argument -> ValueError,
// TypeError -> TypeError, IndexError -> IndexError, std::runtime_error ->
// RuntimeError). Kernels that take no Python objects release the GIL.
#include <pybind11/stl.h>

#include "allocator.h"
#include "isa.h"
#include "kernels.h"
#include "threading.h"

namespace py = pybind11;
using namespace lamina_cpu;

namespace {
using nogil = py::call_guard<py::gil_scoped_release>;
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "Lamina's cpu backend (interface v1): C++17 kernels with AVX2/FMA, AVX-512 and OpenMP";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lamina_cpu::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const lamina_cpu::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    }
  });

  // metadata
  m.attr("name") = "cpu";
  m.attr("api_version") = 1;
  // Interface v1.1: int64 arithmetic where the kernels have an integer loop (the
  // ops with kInt in ewise_ops.h, and the reductions); no bool dtype yet. The
  // kernels named here take fewer dtypes than `dtypes` lists.
  m.attr("api_minor_version") = 1;
  m.attr("dtypes") = py::make_tuple("float32", "float64", "int64");
  {
    py::dict kernel_dtypes;
    const py::tuple floats = py::make_tuple("float32", "float64");
    for (const char* name : {"ewise_div", "scalar_div", "scalar_rdiv", "ewise_power", "scalar_power",
                             "scalar_rpower", "ewise_exp", "ewise_log", "ewise_sqrt", "ewise_tanh",
                             "ewise_sin", "ewise_cos", "ewise_erf", "matmul", "matmul_batched",
                             "matmul_strided", "reduce_sum_axis", "softmax_last", "logsumexp_last",
                             "layer_norm_last", "im2col", "col2im"})
      kernel_dtypes[name] = floats;
    m.attr("kernel_dtypes") = kernel_dtypes;
  }
  m.def("is_available", [] { return true; });
  m.def("unavailable_reason", [] { return std::string(); });
  // No device_count: one device, named "cpu" (device_count is for indexed devices).
  m.def("synchronize", [] {});  // kernels are synchronous
  m.def("num_threads", &num_threads);
  m.def("set_num_threads", &set_num_threads, py::arg("n"));
  m.def("have_openmp", &have_openmp);
  m.def("gemm_kernel_name", &gemm_kernel_name);
  // The instruction-set path: isa() runs now, cpu_isa() is the best this CPU
  // and build allow, set_isa switches (LAMINA_CPU_ISA sets it at load).
  m.def("isa", [] { return std::string(isa_name(active_isa())); });
  m.def("cpu_isa", [] { return std::string(isa_name(cpu_isa())); });
  m.def("set_isa", &set_isa, py::arg("name"));
  // What LAMINA_CPU_ISA / LAMINA_NUM_THREADS asked for that could not be had.
  m.def("env_warnings", [] {
    num_threads();  // parses LAMINA_NUM_THREADS
    return env_warnings();
  });
  // How this extension was built, so a session can check it runs the build it
  // meant to (an editable install elsewhere on sys.path can shadow it).
  m.def("build_info", [] {
    py::dict info;
    info["openmp"] = have_openmp();
    info["openmp_library"] = openmp_library();
#if defined(LAMINA_HAVE_AVX2_TU)
    info["avx2_kernels"] = true;
#else
    info["avx2_kernels"] = false;
#endif
#if defined(LAMINA_HAVE_AVX512_TU)
    info["avx512_kernels"] = true;
#else
    info["avx512_kernels"] = false;
#endif
    info["isa"] = isa_name(active_isa());
    info["cpu_isa"] = isa_name(cpu_isa());
#if defined(LAMINA_NATIVE_BUILD)
    info["native"] = true;
#else
    info["native"] = false;
#endif
#if defined(LAMINA_SANITIZE_BUILD)
    info["sanitize"] = true;
#else
    info["sanitize"] = false;
#endif
    info["gemm_kernel"] = gemm_kernel_name();
    return info;
  });
  m.def("memory_stats", &allocator_stats);
  m.def("empty_cache", &allocator_empty_cache);
  m.def("fma_peak_gflops", &fma_peak_gflops, py::arg("seconds") = 0.2, py::arg("threads") = 1,
        nogil());

  // buffers
  // The buffer protocol exposes the flat allocation as a writable 1-D buffer
  // of its dtype, so numpy (and through it DLPack) views it without a copy;
  // the view holds a reference to the Array, so the block is not recycled.
  py::class_<Array>(m, "Array", py::buffer_protocol())
      .def(py::init<int64_t, const std::string&>(), py::arg("size"), py::arg("dtype") = "float32")
      .def_buffer([](Array& a) {
        return dispatch(a.dtype(), [&](auto tag) {
          using T = elem_t<decltype(tag)>;
          return py::buffer_info(a.data<T>(), sizeof(T), py::format_descriptor<T>::format(), 1,
                                 {a.size()}, {static_cast<py::ssize_t>(sizeof(T))});
        });
      })
      .def_property_readonly("size", &Array::size)
      .def_property_readonly("dtype", &Array::dtype_str)
      .def_property_readonly("nbytes", &Array::nbytes)
      .def("__repr__", [](const Array& a) {
        return "cpu.Array(size=" + std::to_string(a.size()) + ", dtype=" + a.dtype_str() + ")";
      });
  // empty(size, dtype): a new buffer, as Array(size, dtypes[dtype]) with dtype an index
  // into `dtypes`. Every op result is allocated here; a plain function taking two
  // ints skips the class constructor's dispatch and the dtype string conversion,
  // which cost a third of a one-element op.
  {
    auto names = std::make_shared<std::vector<std::string>>();
    for (py::handle d : m.attr("dtypes")) names->push_back(py::cast<std::string>(d));
    m.def(
        "empty",
        [names](int64_t size, int64_t dtype) {
          if (dtype < 0 || dtype >= static_cast<int64_t>(names->size()))
            throw lamina_cpu::IndexError(cat("empty: dtype index ", dtype, " is out of range for ",
                                             names->size(), " dtypes"));
          return new Array(size, (*names)[dtype]);
        },
        py::return_value_policy::take_ownership);
  }
  m.def("from_numpy", &from_numpy, py::arg("src"), py::arg("out"));
  m.def("wrap_numpy", &wrap_numpy, py::arg("src"));
  m.def("to_numpy", &to_numpy, py::arg("a"), py::arg("shape"), py::arg("strides"), py::arg("offset"));
  m.def("fill", &fill, py::arg("out"), py::arg("value"));

  // strided access
  m.def("compact", &compact, nogil());
  m.def("ewise_setitem", &ewise_setitem, nogil());
  m.def("scalar_setitem", &scalar_setitem);

  // elementwise: binary
  m.def("ewise_add", &ewise_add, nogil());
  m.def("ewise_sub", &ewise_sub, nogil());
  m.def("ewise_mul", &ewise_mul, nogil());
  m.def("ewise_div", &ewise_div, nogil());
  m.def("ewise_power", &ewise_power, nogil());
  m.def("ewise_maximum", &ewise_maximum, nogil());
  m.def("ewise_minimum", &ewise_minimum, nogil());
  m.def("ewise_eq", &ewise_eq, nogil());
  m.def("ewise_ne", &ewise_ne, nogil());
  m.def("ewise_lt", &ewise_lt, nogil());
  m.def("ewise_le", &ewise_le, nogil());
  m.def("ewise_gt", &ewise_gt, nogil());
  m.def("ewise_ge", &ewise_ge, nogil());
  // elementwise: with a scalar (the value is converted under the GIL)
  m.def("scalar_add", &scalar_add);
  m.def("scalar_sub", &scalar_sub);
  m.def("scalar_mul", &scalar_mul);
  m.def("scalar_div", &scalar_div);
  m.def("scalar_power", &scalar_power);
  m.def("scalar_maximum", &scalar_maximum);
  m.def("scalar_minimum", &scalar_minimum);
  m.def("scalar_eq", &scalar_eq);
  m.def("scalar_ne", &scalar_ne);
  m.def("scalar_lt", &scalar_lt);
  m.def("scalar_le", &scalar_le);
  m.def("scalar_gt", &scalar_gt);
  m.def("scalar_ge", &scalar_ge);
  m.def("scalar_rsub", &scalar_rsub);
  m.def("scalar_rdiv", &scalar_rdiv);
  m.def("scalar_rpower", &scalar_rpower);
  // elementwise: unary
  m.def("ewise_neg", &ewise_neg, nogil());
  m.def("ewise_abs", &ewise_abs, nogil());
  m.def("ewise_exp", &ewise_exp, nogil());
  m.def("ewise_log", &ewise_log, nogil());
  m.def("ewise_sqrt", &ewise_sqrt, nogil());
  m.def("ewise_tanh", &ewise_tanh, nogil());
  m.def("ewise_sin", &ewise_sin, nogil());
  m.def("ewise_cos", &ewise_cos, nogil());
  m.def("ewise_erf", &ewise_erf, nogil());
  m.def("ewise_strided", &ewise_strided, nogil());
  m.def("ewise_sign", &ewise_sign, nogil());
  // elementwise: others
  m.def("ewise_where", &ewise_where, nogil());
  m.def("ewise_cast", &ewise_cast, nogil());

  // reductions
  m.def("reduce_sum", &reduce_sum, nogil());
  m.def("reduce_max", &reduce_max, nogil());
  m.def("reduce_min", &reduce_min, nogil());
  m.def("reduce_argmax", &reduce_argmax, nogil());
  m.def("reduce_sum_axis", &reduce_sum_axis, nogil());
  m.def("softmax_last", &softmax_last, nogil());
  m.def("logsumexp_last", &logsumexp_last, nogil());
  m.def("layer_norm_last", &layer_norm_last, nogil());

  // indexing
  m.def("index_gather", &index_gather, nogil());
  m.def("index_scatter_add", &index_scatter_add, nogil());

  // matrix multiplication and convolution
  m.def("matmul", &matmul, nogil());
  m.def("matmul_batched", &matmul_batched, nogil());
  m.def("matmul_strided", &matmul_strided, nogil());
  m.def("im2col", &im2col, nogil());
  m.def("col2im", &col2im, nogil());
}
