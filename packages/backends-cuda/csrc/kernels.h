// kernels.h: the launcher of every exported kernel, one line each, under the
// name Python sees (bindings.cc binds each under that same name). Arguments
// come in the order inputs, output, layout; launchers validate, then queue
// work on the operands' device stream and return without waiting.
#pragma once

#include <pybind11/numpy.h>

#include <vector>

#include "common.cuh"
#include "ewise_ops.h"

namespace lamina_cuda {

// buffers (buffers.cc)
void from_numpy(const pybind11::array& src, Array& out);
pybind11::array to_numpy(const Array& a, const Shape& shape, const Shape& strides, int64_t offset);
void fill(Array& out, const Scalar& value);

// strided access (strided.cu)
void compact(const Array& a, Array& out, const Shape& shape, const Shape& strides, int64_t offset);
void ewise_setitem(const Array& a, Array& out, const Shape& shape, const Shape& strides,
                   int64_t offset);
void scalar_setitem(int64_t size, const Scalar& value, Array& out, const Shape& shape,
                    const Shape& strides, int64_t offset);

// elementwise (ewise_binary.cu, ewise_unary.cu, ewise_strided.cu): the kernels
// of every op of ewise_ops.h, which says what each computes. ewise_strided_OP
// does what ewise_OP does, out[i] = f(a at view position i, b at view position
// i), over two strided views of shape into compact out.
#define LAMINA_DECLARE_BINARY(NAME, OP, SET, FORMS, DOC)                                        \
  void ewise_##NAME(const Array& a, const Array& b, Array& out);                                \
  void ewise_strided_##NAME(const Array& a, const Array& b, Array& out, const Shape& shape,     \
                            const Shape& a_strides, int64_t a_offset, const Shape& b_strides,   \
                            int64_t b_offset);                                                  \
  LAMINA_IF_SCALAR(FORMS, void scalar_##NAME(const Array& a, const Scalar& value, Array& out);) \
  LAMINA_IF_REVERSED(FORMS,                                                                     \
                     void scalar_r##NAME(const Array& a, const Scalar& value, Array& out);)
#define LAMINA_DECLARE_UNARY(NAME, OP, SET, DOC) void ewise_##NAME(const Array& a, Array& out);
LAMINA_BINARY_OPS(LAMINA_DECLARE_BINARY)
LAMINA_UNARY_OPS(LAMINA_DECLARE_UNARY)
#undef LAMINA_DECLARE_BINARY
#undef LAMINA_DECLARE_UNARY
void ewise_where(const Array& cond, const Array& a, const Array& b, Array& out);
// out[i] = x[i] <= 0 ? 0 : g[i] (NaN x passes g): ReLU's backward, one kernel
void relu_backward(const Array& x, const Array& g, Array& out);
void ewise_cast(const Array& a, Array& out);
// a chain of elementwise ops as one kernel, v2.1 (program.cu): code holds (op, dst, a, b)
// per instruction, ops numbered as lamina/program_ops.h lists them
void ewise_program(const std::vector<Array*>& bufs, const std::vector<int64_t>& code,
                   const std::vector<double>& scalars, int64_t n);

// reductions and fused row kernels (reduce.cu)
void reduce_sum(const Array& a, Array& out, int64_t size);
void reduce_max(const Array& a, Array& out, int64_t size);
void reduce_min(const Array& a, Array& out, int64_t size);
void reduce_argmax(const Array& a, Array& out, int64_t size);
void reduce_prod(const Array& a, Array& out, int64_t size);
void reduce_sum_axis(const Array& a, Array& out, int64_t outer, int64_t size, int64_t inner);
void softmax_last(const Array& a, Array& out, int64_t size);
void log_softmax_backward_last(const Array& g, const Array& out, Array& grad_a, int64_t size);
void logsumexp_last(const Array& a, Array& out, int64_t size);
// LayerNorm of rows (biased variance); also writes each row's mean and 1/sqrt(var + eps).
void layer_norm_last(const Array& a, const Array& weight, const Array& bias, Array& out,
                     Array& mean, Array& rstd, int64_t size, double eps);

// running sums along the last axis (scan.cu)
void cumsum_last(const Array& a, Array& out, int64_t size);

// sorting and sampling along the last axis, v2.1 (sort.cu): the first k of each
// row's stable sort (NaN largest) into values_out and int64 indices_out (rows, k);
// multinomial draws out (rows, samples) from each row's running sum and host uniforms.
void sort_last(const Array& a, Array& values_out, Array& indices_out, int64_t size, int64_t k,
               bool descending);
void multinomial_last(const Array& probs, const Array& uniforms, Array& out, int64_t size,
                      int64_t samples);

// indexing (index.cu)
void index_gather(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                  int64_t inner);
void index_scatter_add(const Array& a, const Array& idx, Array& out, int64_t outer,
                       int64_t axis_size, int64_t inner);
void index_copy(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                int64_t inner);

// matrix multiplication (matmul.cu)
void matmul(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p);
void matmul_batched(const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
                    int64_t n, int64_t p);
// out (m, p) = A @ B with A[i, k] = a[a_offset + i*a_rs + k*a_cs] and
// B[k, j] = b[b_offset + k*b_rs + j*b_cs]: strided views (transposes) without copies.
void matmul_strided(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p,
                    int64_t a_offset, int64_t a_rs, int64_t a_cs, int64_t b_offset, int64_t b_rs,
                    int64_t b_cs);
// matmul_strided for every index i of the batch shape: out (*batch, m, p) compact,
// A[i][r, k] = a[a_offset + i . a_strides[:-2] + r*a_strides[-2] + k*a_strides[-1]].
void matmul_batched_strided(const Array& a, const Array& b, Array& out, const Shape& batch,
                            int64_t m, int64_t n, int64_t p, int64_t a_offset,
                            const Shape& a_strides, int64_t b_offset, const Shape& b_strides);

// convolution helpers (conv.cu)
void im2col(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
void col2im(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);

// recurrent cells, v2.1 (rnn.cu): one LSTM or GRU time step in one launch, forward
// and backward; rnn.cu's header gives the layouts (state holds h_{t-1} in block step
// and receives h_t in block step + 1; dc and dh carry step + 1's gradient in, step's out).
void lstm_cell(const Array& xp, const Array& hh, Array& state, Array& acts, Array& tanh_c,
               int64_t step, int64_t batch, int64_t hidden);
void lstm_cell_backward(const Array& g, const Array& dh_mm, const Array& acts,
                        const Array& state, const Array& tanh_c, Array& dc, Array& d_gates,
                        int64_t step, int64_t batch, int64_t hidden);
void gru_cell(const Array& xp, const Array& hh, const Array& b_hh, Array& state, Array& gates,
              int64_t step, int64_t batch, int64_t hidden);
void gru_cell_backward(const Array& g, const Array& dh_mm, const Array& gates,
                       const Array& state, Array& dh, Array& d_hh, Array& d_xp, int64_t step,
                       int64_t batch, int64_t hidden);

// batch norm, v2.1 (batch_norm.cu): per channel of compact (n, c, s) x, g, out and
// dx; mean, var, rstd, weight, bias, dweight, dbias are (c,). stats: mean and
// biased variance; apply: out = (x - mean) * (rstd * weight) + bias; backward:
// dbias = sum(g), dweight = sum(g * xhat) and dx (batch statistics when training).
void batch_norm_stats(const Array& x, Array& mean, Array& var, int64_t n, int64_t c, int64_t s);
void batch_norm_apply(const Array& x, const Array& mean, const Array& rstd, const Array& weight,
                      const Array& bias, Array& out, int64_t n, int64_t c, int64_t s);
void batch_norm_backward(const Array& g, const Array& x, const Array& mean, const Array& rstd,
                         const Array& weight, Array& dx, Array& dweight, Array& dbias, int64_t n,
                         int64_t c, int64_t s, bool training);

// max pooling with int64 indices, v2.1 (pool.cu), forward and backward; the layout
// is lamina/pool_checks.h's (planes of H x W pooled into OH x OW).
void max_pool2d(const Array& x, Array& out, Array& indices, int64_t planes, int64_t h,
                int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
void max_pool2d_backward(const Array& grad_out, const Array& indices, Array& grad_in,
                         int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                         int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         int64_t dh, int64_t dw);

}  // namespace lamina_cuda
