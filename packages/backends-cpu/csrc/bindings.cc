// bindings.cc: the one place where the extension lamina_backend_cpu._core is
// defined: every exported kernel, the Array class, the metadata of interface
// v2.0 and the exception mapping (std::invalid_argument -> ValueError,
// TypeError -> TypeError, IndexError -> IndexError, ZeroDivisionError ->
// ZeroDivisionError, std::runtime_error -> RuntimeError). Kernels that take
// no Python objects release the GIL.
#include <pybind11/stl.h>

#include "allocator.h"
#include "isa.h"
#include "kernels.h"
#include "threading.h"

namespace py = pybind11;
using namespace lamina_cpu;

namespace {
using nogil = py::call_guard<py::gil_scoped_release>;

py::tuple dtype_names(DTypeMask mask) {
  py::list names;
  for (DType dt : kDTypes)
    if (mask & dtype_bit(dt)) names.append(dtype_name(dt));
  return py::tuple(names);
}

// The interface's kernel_dtypes: every kernel that takes fewer dtypes than
// the backend lists, from the masks its code dispatches over (ewise_ops.h,
// kernels.h), so the declaration cannot drift from the kernels.
py::dict kernel_dtypes() {
  py::dict d;
  auto add = [&](const std::string& name, DTypeMask mask) {
    if (mask != kAllDtypes) d[py::str(name)] = dtype_names(mask);
  };
#define LAMINA_EWISE_DTYPES(OP, NAME) add("ewise_" #NAME, ops::kKernelDtypes<ops::OP>);
#define LAMINA_SCALAR_DTYPES(OP, NAME) add("scalar_" #NAME, ops::kKernelDtypes<ops::OP>);
#define LAMINA_STRIDED_DTYPES(OP, NAME) add("ewise_strided_" #NAME, ops::kKernelDtypes<ops::OP>);
  LAMINA_EWISE_BINARY_LIST(LAMINA_EWISE_DTYPES)
  LAMINA_EWISE_BINARY_LIST(LAMINA_STRIDED_DTYPES)
  LAMINA_EWISE_UNARY_LIST(LAMINA_EWISE_DTYPES)
  LAMINA_SCALAR_BINARY_LIST(LAMINA_SCALAR_DTYPES)
#undef LAMINA_EWISE_DTYPES
#undef LAMINA_SCALAR_DTYPES
#undef LAMINA_STRIDED_DTYPES
  add("reduce_sum", kReduceSumDtypes);
  add("reduce_sum_axis", kReduceSumDtypes);
  add("reduce_max", kReduceExtremeDtypes);
  add("reduce_min", kReduceExtremeDtypes);
  add("reduce_argmax", kReduceArgmaxDtypes);
  add("reduce_prod", kReduceProdDtypes);
  add("cumsum_last", kCumsumDtypes);
  add("sort_last", kSortDtypes);
  add("multinomial_last", kMultinomialDtypes);
  add("ewise_program", kProgramDtypes);
  add("fill", kStoredDtypes);
  add("relu_backward", kFloats);
  for (const char* name : {"matmul", "matmul_batched", "matmul_strided", "matmul_batched_strided"})
    add(name, kMatmulDtypes);
  for (const char* name : {"softmax_last", "logsumexp_last", "layer_norm_last"})
    add(name, kRowDtypes);
  add("layer_norm_backward_last", kLayerNormBackwardDtypes);
  add("log_softmax_backward_last", kLogSoftmaxBackwardDtypes);
  for (const char* name : {"im2col", "col2im", "conv2d", "conv2d_backward_input",
                           "conv2d_backward_weight", "adam_step"})
    add(name, kFusedDtypes);
  for (const char* name : {"gelu", "gelu_backward"}) add(name, kGeluDtypes);
  for (const char* name : {"lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"})
    add(name, kRnnDtypes);
  for (const char* name : {"batch_norm_stats", "batch_norm_apply", "batch_norm_backward"})
    add(name, kBatchNormDtypes);
  for (const char* name : {"max_pool2d", "max_pool2d_backward"}) add(name, kPoolDtypes);
  for (const char* name : {"attention", "attention_backward"}) add(name, kAttentionDtypes);
  add("matmul_bias", kMatmulBiasDtypes);
  return d;
}
}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "Lamina's cpu backend (interface v2.0): C++17 kernels with AVX2/FMA, AVX-512 and worker threads";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lamina_cpu::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const lamina_cpu::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const lamina_cpu::ZeroDivisionError& e) {
      PyErr_SetString(PyExc_ZeroDivisionError, e.what());
    }
  });

  // metadata
  m.attr("name") = "cpu";
  m.attr("api_version") = 2;
  // Interface v2.0: v1.1 (bool buffers, comparisons writing bool, int64
  // arithmetic; kernel_dtypes names the kernels that take fewer dtypes than
  // `dtypes`) with one ewise_strided_OP kernel per binary op.
  // v2.1 adds the optional sort_last and multinomial_last (sort.cc).
  // v2.2 adds the 16-bit floats: stored, copied and converted here; every other
  // kernel takes them as float32 copies made by the ndarray layer (_narrow.py).
  m.attr("api_minor_version") = 2;
  m.attr("dtypes") = dtype_names(kStoredDtypes);
  m.attr("kernel_dtypes") = kernel_dtypes();
  m.def("is_available", [] { return true; });
  m.def("unavailable_reason", [] { return std::string(); });
  // No device_count: one device, named "cpu" (device_count is for indexed devices).
  m.def("synchronize", [] {});  // kernels are synchronous
  m.def("num_threads", &num_threads);
  m.def("set_num_threads", &set_num_threads, py::arg("n"));
  m.def("have_openmp", &have_openmp);
  m.def("gemm_kernel_name", &gemm_kernel_name);
  m.def("bf16_gemm_paths", &bf16_gemm_paths);
  m.def("bf16_gemm", &bf16_gemm);
  m.def("set_bf16_gemm", &set_bf16_gemm, py::arg("name"));
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
    info["bf16_gemm"] = bf16_gemm();
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
          std::string format;
          if constexpr (std::is_same_v<T, Half>) {
            format = "e";  // the buffer protocol's (and numpy's) float16
          } else if constexpr (std::is_same_v<T, BFloat16>) {
            // numpy has no bfloat16: the bits as the one-field record the numpy
            // backend stores them in, which numpy never computes on as integers
            format = "T{H:bfloat16:}";
          } else {
            format = py::format_descriptor<T>::format();
          }
          return py::buffer_info(a.data<T>(), sizeof(T), format, 1, {a.size()},
                                 {static_cast<py::ssize_t>(sizeof(T))});
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

  // elementwise: binary, with a scalar (the value is converted under the GIL)
  // and unary, one export per entry of the op lists of ewise_ops.h
#define LAMINA_DEF_NOGIL(OP, NAME) m.def("ewise_" #NAME, &ewise_##NAME, nogil());
#define LAMINA_DEF_SCALAR(OP, NAME) m.def("scalar_" #NAME, &scalar_##NAME);
#define LAMINA_DEF_STRIDED(OP, NAME) \
  m.def("ewise_strided_" #NAME, &ewise_strided_##NAME, nogil());
  LAMINA_EWISE_BINARY_LIST(LAMINA_DEF_NOGIL)
  LAMINA_EWISE_BINARY_LIST(LAMINA_DEF_STRIDED)
  LAMINA_EWISE_UNARY_LIST(LAMINA_DEF_NOGIL)
  LAMINA_SCALAR_BINARY_LIST(LAMINA_DEF_SCALAR)
#undef LAMINA_DEF_NOGIL
#undef LAMINA_DEF_SCALAR
#undef LAMINA_DEF_STRIDED
  // elementwise: others
  m.def("ewise_where", &ewise_where, nogil());
  m.def("relu_backward", &relu_backward, nogil());
  m.def("ewise_cast", &ewise_cast, nogil());

  // reductions
  m.def("reduce_sum", &reduce_sum, nogil());
  m.def("reduce_max", &reduce_max, nogil());
  m.def("reduce_min", &reduce_min, nogil());
  m.def("reduce_argmax", &reduce_argmax, nogil());
  m.def("reduce_prod", &reduce_prod, nogil());
  m.def("reduce_sum_axis", &reduce_sum_axis, nogil());
  m.def("cumsum_last", &cumsum_last, nogil());
  m.def("sort_last", &sort_last, nogil());
  m.def("multinomial_last", &multinomial_last, nogil());
  m.def("ewise_program", &ewise_program, nogil());
  m.def("softmax_last", &softmax_last, nogil());
  m.def("logsumexp_last", &logsumexp_last, nogil());
  m.def("layer_norm_last", &layer_norm_last, nogil());
  m.def("layer_norm_backward_last", &layer_norm_backward_last, nogil());
  m.def("log_softmax_backward_last", &log_softmax_backward_last, nogil());

  // indexing
  m.def("index_gather", &index_gather, nogil());
  m.def("index_scatter_add", &index_scatter_add, nogil());
  m.def("index_copy", &index_copy, nogil());

  // matrix multiplication and convolution
  m.def("matmul", &matmul, nogil());
  m.def("matmul_batched", &matmul_batched, nogil());
  m.def("matmul_strided", &matmul_strided, nogil());
  m.def("matmul_bias", &matmul_bias, nogil());
  m.def("matmul_batched_strided", &matmul_batched_strided, nogil());
  m.def("im2col", &im2col, nogil());
  m.def("adam_step", &adam_step, nogil());
  m.def("gelu", &gelu, nogil());
  m.def("gelu_backward", &gelu_backward, nogil());
  m.def("col2im", &col2im, nogil());
  m.def("conv2d", &conv2d, nogil());
  m.def("conv2d_backward_input", &conv2d_backward_input, nogil());
  m.def("conv2d_backward_weight", &conv2d_backward_weight, nogil());

  // recurrent cells (rnn.cc)
  m.def("lstm_cell", &lstm_cell, nogil());
  m.def("lstm_cell_backward", &lstm_cell_backward, nogil());
  m.def("gru_cell", &gru_cell, nogil());
  m.def("gru_cell_backward", &gru_cell_backward, nogil());

  // batch normalisation (batch_norm.cc)
  m.def("batch_norm_stats", &batch_norm_stats, nogil());
  m.def("batch_norm_apply", &batch_norm_apply, nogil());
  m.def("batch_norm_backward", &batch_norm_backward, nogil());

  // max pooling with indices (pool.cc)
  m.def("max_pool2d", &max_pool2d, nogil());
  m.def("max_pool2d_backward", &max_pool2d_backward, nogil());

  // scaled dot-product attention (attention.cc)
  m.def("attention", &attention, nogil());
  m.def("attention_backward", &attention_backward, nogil());
}
