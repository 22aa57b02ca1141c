// kernel_dtypes.h: the dtypes each kernel of the backend takes (interface v2.0).
//
// One list, read twice: every launcher dispatches through dispatch<kernel_dtypes::NAME>
// (common.cuh), which compiles the kernel for exactly these dtypes and raises
// TypeError for the others, and bindings.cc exports the same list as the Python
// backend's kernel_dtypes. Plain C++ (no device code): bindings.cc includes it.
// The kernels of the elementwise ops take the set their line of ewise_ops.h gives.
//
// The sets follow the numpy reference backend's KERNEL_DTYPES: the fused row
// kernels, matmul and im2col/col2im on floats; sums, products, cumsum and argmax
// on numbers (not bool); copies, where, cast, max, min and the index kernels on
// every dtype.
//
// The 16-bit floats (kNarrow), beyond storage, copies and casts, are taken
// natively by the kernels the cpu backend names them for: the elementwise
// kernels of every op that takes float32 (with_narrow), fill, reduce_sum,
// reduce_sum_axis, reduce_max, reduce_min, softmax_last, logsumexp_last,
// layer_norm_last and the four matmuls. Each computes in float32 (ValueOf,
// common.cuh): it widens every element it loads and rounds every value it
// stores once, to nearest even; the reductions and row kernels accumulate as
// their float32 form does (sums in double, in the same order), so they give
// the float32 fallback's result bit for bit. Every other kernel on them runs
// that fallback (lamina.ndarray._narrow).
#pragma once

#include "ewise_ops.h"

namespace lamina_cuda {

using DTypes = unsigned;  // a set of DType values, bit k for DType k

constexpr DTypes kFloats = 0b0011;    // float32, float64
constexpr DTypes kNumbers = 0b0111;   // float32, float64, int64
constexpr DTypes kIntegral = 0b1100;  // int64, bool
constexpr DTypes kAllDTypes = 0b1111;   // all but the 16-bit floats
constexpr DTypes kStored = 0b111111;    // with float16, bfloat16: storage, copies, casts
constexpr DTypes kNarrow = 0b110000;    // float16, bfloat16

// An elementwise op's kernels take its set and, where that holds float32, the
// 16-bit floats (computed in float32: ewise.cuh's Widened).
constexpr DTypes with_narrow(DTypes set) { return (set & 0b0001) ? (set | kNarrow) : set; }

// X(kernel name, dtype set) for every kernel that takes a dtype.
#define LAMINA_KERNEL_DTYPES(X)                                                              \
  X(fill, kStored) X(compact, kStored) X(ewise_setitem, kStored)                             \
  X(scalar_setitem, kAllDTypes) X(from_numpy, kAllDTypes) X(to_numpy, kAllDTypes)            \
  LAMINA_BINARY_OPS_WITH(LAMINA_BINARY_KERNEL_DTYPES, X)                                     \
  LAMINA_UNARY_OPS_WITH(LAMINA_UNARY_KERNEL_DTYPES, X)                                       \
  X(ewise_where, kAllDTypes) X(ewise_cast, kStored) X(ewise_program, kFloats)                \
  X(relu_backward, kFloats)                                                                  \
  X(reduce_sum, kNumbers | kNarrow) X(reduce_max, kStored) X(reduce_min, kStored)            \
  X(reduce_argmax, kNumbers) X(reduce_prod, kNumbers) X(reduce_sum_axis, kNumbers | kNarrow) \
  X(cumsum_last, kNumbers) X(softmax_last, kFloats | kNarrow)                                \
  X(logsumexp_last, kFloats | kNarrow) X(sort_last, kAllDTypes) X(multinomial_last, kFloats) \
  X(log_softmax_backward_last, kFloats)                                                      \
  X(layer_norm_last, kFloats | kNarrow) X(index_gather, kAllDTypes)                          \
  X(index_scatter_add, kAllDTypes) X(index_copy, kAllDTypes)                                 \
  X(matmul, kFloats | kNarrow) X(matmul_batched, kFloats | kNarrow)                          \
  X(matmul_strided, kFloats | kNarrow) X(matmul_batched_strided, kFloats | kNarrow)          \
  X(im2col, kFloats) X(col2im, kFloats)                                                      \
  X(lstm_cell, kFloats) X(lstm_cell_backward, kFloats) X(gru_cell, kFloats)                  \
  X(gru_cell_backward, kFloats) X(max_pool2d, kFloats) X(max_pool2d_backward, kFloats)      \
  X(batch_norm_stats, kFloats) X(batch_norm_apply, kFloats) X(batch_norm_backward, kFloats)

// X(kernel, set) for each kernel of one op of ewise_ops.h.
#define LAMINA_BINARY_KERNEL_DTYPES(X, NAME, FUNCTOR, SET, FORMS, DOC)                             \
  X(ewise_##NAME, with_narrow(SET)) X(ewise_strided_##NAME, with_narrow(SET))                      \
  LAMINA_IF_SCALAR(FORMS, X(scalar_##NAME, with_narrow(SET)))                                      \
  LAMINA_IF_REVERSED(FORMS, X(scalar_r##NAME, with_narrow(SET)))
#define LAMINA_UNARY_KERNEL_DTYPES(X, NAME, FUNCTOR, SET, DOC) X(ewise_##NAME, with_narrow(SET))

// kernel_dtypes::reduce_sum is the set of reduce_sum, and so on.
namespace kernel_dtypes {
#define LAMINA_KERNEL_DTYPE_CONSTANT(NAME, SET) constexpr DTypes NAME = SET;
LAMINA_KERNEL_DTYPES(LAMINA_KERNEL_DTYPE_CONSTANT)
#undef LAMINA_KERNEL_DTYPE_CONSTANT
}  // namespace kernel_dtypes

}  // namespace lamina_cuda
