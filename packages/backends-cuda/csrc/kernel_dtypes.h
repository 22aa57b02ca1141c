// kernel_dtypes.h: the dtypes each kernel of the backend takes (interface v1.1).
//
// One list, read twice: every launcher dispatches through dispatch<kernel_dtypes::NAME>
// (common.cuh), which compiles the kernel for exactly these dtypes and raises
// TypeError for the others, and bindings.cc exports the same list as the Python
// backend's kernel_dtypes. Plain C++ (no device code): bindings.cc includes it.
//
// The sets follow the numpy reference backend's KERNEL_DTYPES: true division and
// the float functions on floats; sub, neg, abs, sign, power, floordiv,
// remainder, sums, products, cumsum and argmax on numbers (not bool); bitwise
// ops on int64 and bool; copies, add, mul, maximum, minimum, comparisons, where,
// cast, max, min and the index kernels on every dtype.
#pragma once

namespace lamina_cuda {

using DTypes = unsigned;  // a set of DType values, bit k for DType k

constexpr DTypes kFloats = 0b0011;    // float32, float64
constexpr DTypes kNumbers = 0b0111;   // float32, float64, int64
constexpr DTypes kIntegral = 0b1100;  // int64, bool
constexpr DTypes kAllDTypes = 0b1111;

// X(kernel name, dtype set) for every kernel that takes a dtype.
#define LAMINA_KERNEL_DTYPES(X)                                                              \
  X(fill, kAllDTypes) X(compact, kAllDTypes) X(ewise_setitem, kAllDTypes)                    \
  X(scalar_setitem, kAllDTypes) X(from_numpy, kAllDTypes) X(to_numpy, kAllDTypes)            \
  X(ewise_add, kAllDTypes) X(scalar_add, kAllDTypes) X(ewise_mul, kAllDTypes)                \
  X(scalar_mul, kAllDTypes) X(ewise_maximum, kAllDTypes) X(scalar_maximum, kAllDTypes)       \
  X(ewise_minimum, kAllDTypes) X(scalar_minimum, kAllDTypes)                                 \
  X(ewise_sub, kNumbers) X(scalar_sub, kNumbers) X(scalar_rsub, kNumbers)                    \
  X(ewise_div, kFloats) X(scalar_div, kFloats) X(scalar_rdiv, kFloats)                       \
  X(ewise_power, kNumbers) X(scalar_power, kNumbers) X(scalar_rpower, kNumbers)              \
  X(ewise_eq, kAllDTypes) X(scalar_eq, kAllDTypes) X(ewise_ne, kAllDTypes)                   \
  X(scalar_ne, kAllDTypes) X(ewise_lt, kAllDTypes) X(scalar_lt, kAllDTypes)                  \
  X(ewise_le, kAllDTypes) X(scalar_le, kAllDTypes) X(ewise_gt, kAllDTypes)                   \
  X(scalar_gt, kAllDTypes) X(ewise_ge, kAllDTypes) X(scalar_ge, kAllDTypes)                  \
  X(ewise_floordiv, kNumbers) X(ewise_remainder, kNumbers)                                   \
  X(ewise_bitwise_and, kIntegral) X(ewise_bitwise_or, kIntegral)                             \
  X(ewise_bitwise_xor, kIntegral) X(ewise_bitwise_not, kIntegral)                            \
  X(ewise_neg, kNumbers) X(ewise_abs, kNumbers) X(ewise_sign, kNumbers)                      \
  X(ewise_exp, kFloats) X(ewise_log, kFloats) X(ewise_sqrt, kFloats) X(ewise_tanh, kFloats)  \
  X(ewise_sin, kFloats) X(ewise_cos, kFloats) X(ewise_erf, kFloats)                          \
  X(ewise_where, kAllDTypes) X(ewise_cast, kAllDTypes) X(ewise_strided, kAllDTypes)          \
  X(reduce_sum, kNumbers) X(reduce_max, kAllDTypes) X(reduce_min, kAllDTypes)                \
  X(reduce_argmax, kNumbers) X(reduce_prod, kNumbers) X(reduce_sum_axis, kNumbers)           \
  X(cumsum_last, kNumbers) X(softmax_last, kFloats) X(logsumexp_last, kFloats)               \
  X(layer_norm_last, kFloats) X(index_gather, kAllDTypes) X(index_scatter_add, kAllDTypes)   \
  X(index_copy, kAllDTypes)                                                                  \
  X(matmul, kFloats) X(matmul_batched, kFloats) X(matmul_strided, kFloats)                   \
  X(matmul_batched_strided, kFloats) X(im2col, kFloats) X(col2im, kFloats)

// kernel_dtypes::ewise_sub is the set of ewise_sub, and so on.
namespace kernel_dtypes {
#define LAMINA_KERNEL_DTYPE_CONSTANT(NAME, SET) constexpr DTypes NAME = SET;
LAMINA_KERNEL_DTYPES(LAMINA_KERNEL_DTYPE_CONSTANT)
#undef LAMINA_KERNEL_DTYPE_CONSTANT
}  // namespace kernel_dtypes

}  // namespace lamina_cuda
