// kernels.h: declarations of every kernel of interface v2 (and the optional
// fast paths), one spelling per kernel: the C++ name is the Python name.
// Argument order is inputs, output, layout; layout counts elements.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "common.h"
#include "ewise_ops.h"

namespace lamina_cpu {

namespace py = pybind11;

// buffers.cc
void from_numpy(py::array src, Array& out);
// An Array over the memory of src (1-D, contiguous, writable, a listed dtype),
// keeping src alive: the optional zero-copy import of the interface.
std::unique_ptr<Array> wrap_numpy(py::object src);
py::array to_numpy(const Array& a, const Shape& shape, const Shape& strides, int64_t offset);
void fill(Array& out, py::handle value);

// strided.cc
void compact(const Array& a, Array& out, const Shape& shape, const Shape& strides, int64_t offset);
void ewise_setitem(const Array& a, Array& out, const Shape& shape, const Shape& strides,
                   int64_t offset);
void scalar_setitem(int64_t size, py::handle value, Array& out, const Shape& shape,
                    const Shape& strides, int64_t offset);
// prod(shape), after checking the view lies inside a buffer of buffer_size
// elements (ValueError naming op otherwise).
int64_t check_view_bounds(const char* op, int64_t buffer_size, const Shape& shape,
                          const Shape& strides, int64_t offset);
// The strided view of a copied into dst (prod(shape) elements of a's dtype), validated.
void gather_view(const Array& a, void* dst, const Shape& shape, const Shape& strides,
                 int64_t offset, const char* op);

// ewise.cc: binary (ewise_OP, scalar_OP), reversed scalar and unary families,
// one declaration per entry of the op lists of ewise_ops.h.
#define LAMINA_DECLARE_EWISE(OP, NAME) void ewise_##NAME(const Array& a, const Array& b, Array& out);
#define LAMINA_DECLARE_SCALAR(OP, NAME) void scalar_##NAME(const Array& a, py::handle value, Array& out);
#define LAMINA_DECLARE_UNARY(OP, NAME) void ewise_##NAME(const Array& a, Array& out);
// ewise_strided_NAME: the binary op over two strided views into a compact out.
#define LAMINA_DECLARE_STRIDED(OP, NAME)                                                     \
  void ewise_strided_##NAME(const Array& a, const Array& b, Array& out, const Shape& shape, \
                            const Shape& a_strides, int64_t a_offset,                       \
                            const Shape& b_strides, int64_t b_offset);
LAMINA_EWISE_BINARY_LIST(LAMINA_DECLARE_EWISE)
LAMINA_SCALAR_BINARY_LIST(LAMINA_DECLARE_SCALAR)
LAMINA_EWISE_UNARY_LIST(LAMINA_DECLARE_UNARY)
LAMINA_EWISE_BINARY_LIST(LAMINA_DECLARE_STRIDED)
#undef LAMINA_DECLARE_EWISE
#undef LAMINA_DECLARE_SCALAR
#undef LAMINA_DECLARE_UNARY
#undef LAMINA_DECLARE_STRIDED
void ewise_where(const Array& cond, const Array& a, const Array& b, Array& out);
// out[i] = x[i] <= 0 ? 0 : g[i] (NaN x passes g): ReLU's backward, one pass.
void relu_backward(const Array& x, const Array& g, Array& out);
void ewise_cast(const Array& a, Array& out);

// reduce.cc
void reduce_sum(const Array& a, Array& out, int64_t size);
void reduce_max(const Array& a, Array& out, int64_t size);
void reduce_min(const Array& a, Array& out, int64_t size);
void reduce_argmax(const Array& a, Array& out, int64_t size);
void reduce_sum_axis(const Array& a, Array& out, int64_t outer, int64_t size, int64_t inner);
void reduce_prod(const Array& a, Array& out, int64_t size);
// Running sums along each contiguous row of `size` elements (compact a and
// out of equal size), accumulated in the dtype, left to right.
void cumsum_last(const Array& a, Array& out, int64_t size);
void softmax_last(const Array& a, Array& out, int64_t size);
void logsumexp_last(const Array& a, Array& out, int64_t size);
// LayerNorm over rows of `size` (biased variance); also writes each row's
// mean and 1/sqrt(var + eps) for the backward.
void layer_norm_last(const Array& a, const Array& weight, const Array& bias, Array& out,
                     Array& mean, Array& rstd, int64_t size, double eps);
void layer_norm_backward_last(const Array& g, const Array& a, const Array& weight,
                              const Array& mean, const Array& rstd, Array& grad_a,
                              Array& grad_weight, Array& grad_bias, int64_t size);
// The backward of a row-wise log-softmax over rows of `size`: grad_a = g -
// exp(out) * sum(g) per row, out being the log-softmax's output.
void log_softmax_backward_last(const Array& g, const Array& out, Array& grad_a, int64_t size);

// sort.cc (v2.1): the first k of each row's stable sort (PyTorch's order, NaN
// largest) into values_out and int64 indices_out, both (rows, k); and
// multinomial draws, out (rows, samples) int64, by searching each row's running
// sum (double, left to right) for uniforms[r, j] * total.
void sort_last(const Array& a, Array& values_out, Array& indices_out, int64_t size, int64_t k,
               bool descending);
void multinomial_last(const Array& probs, const Array& uniforms, Array& out, int64_t size,
                      int64_t samples);

// program.cc (v2.1): a chain of elementwise ops (lamina/program_ops.h) run block
// by block over n elements of float32 or float64 buffers.
// code and scalars arrive as numpy arrays (a list converts), so that a replay that
// passes the same arrays pays no per-element conversion.
using Code = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Scalars = py::array_t<double, py::array::c_style | py::array::forcecast>;
void ewise_program(const std::vector<Array*>& bufs, const Code& code, const Scalars& scalars,
                   int64_t n);

// index.cc
void index_gather(const Array& a, const Array& idx, Array& out, int64_t outer,
                  int64_t axis_size, int64_t inner);
void index_scatter_add(const Array& a, const Array& idx, Array& out, int64_t outer,
                       int64_t axis_size, int64_t inner);
void index_copy(const Array& a, const Array& idx, Array& out, int64_t outer, int64_t axis_size,
                int64_t inner);

// matmul.cc
void matmul(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p);
// out (m, p) = A @ B with A[i, k] = a[a_offset + i*a_rs + k*a_cs] and
// B[k, j] = b[b_offset + k*b_rs + j*b_cs]: views (transposes) without copies.
void matmul_strided(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p,
                    int64_t a_offset, int64_t a_rs, int64_t a_cs, int64_t b_offset, int64_t b_rs,
                    int64_t b_cs);
// out (m, p) = A @ B + bias: matmul_strided's views with bias (p,) added to
// every row inside the GEMM (to each tile of C while it is in cache).
void matmul_bias(const Array& a, const Array& b, const Array& bias, Array& out, int64_t m,
                 int64_t n, int64_t p, int64_t a_offset, int64_t a_rs, int64_t a_cs,
                 int64_t b_offset, int64_t b_rs, int64_t b_cs);
void matmul_batched(const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
                    int64_t n, int64_t p);
// out (prod(batch), m, p) = A @ B for every batch index i, with
// A[i][r, k] = a[a_offset + i . a_strides[:-2] + r*a_strides[-2] + k*a_strides[-1]]
// and B likewise: strided (transposed, sliced, broadcast) batches without copies.
void matmul_batched_strided(const Array& a, const Array& b, Array& out, const Shape& batch,
                            int64_t m, int64_t n, int64_t p, int64_t a_offset,
                            const Shape& a_strides, int64_t b_offset, const Shape& b_strides);
// optim.cc: one Adam/AdamW step; the *_out buffers may be the inputs.
// GELU (approximate "none": erf form; tanh: the tanh form) and its backward,
// out[i] = gelu(a[i]) and out[i] = g[i] * gelu'(a[i]) for i < out.size(), in
// one pass: the float steps of lamina.ndarray's ewise_program listings (gelu.cc).
void gelu(const Array& a, Array& out, bool tanh);
void gelu_backward(const Array& a, const Array& g, Array& out, bool tanh);
void adam_step(const Array& param, const Array& grad, const Array& exp_avg,
               const Array& exp_avg_sq, Array& param_out, Array& exp_avg_out,
               Array& exp_avg_sq_out, double beta1, double beta2, double eps,
               double weight_decay, double decay, double step_size, double inv_bias2_sqrt);
double fma_peak_gflops(double seconds, int threads);
std::string gemm_kernel_name();
// The bfloat16 product paths this CPU, build and active ISA have ("float32":
// widen to the float32 kernels; "avx512_bf16"; "amx"), the one products take,
// and a choice among them ("best": the last of bf16_gemm_paths()).
std::vector<std::string> bf16_gemm_paths();
std::string bf16_gemm();
void set_bf16_gemm(const std::string& name);

// conv.cc
void im2col(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
void col2im(const Array& a, Array& out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);

// conv_gemm.cc: NCHW convolution (groups 1) as a GEMM per image, and its two
// gradients; x (n, c, h, w), w (o, c, kh, kw), out and grad (n, o, oh, ow).
void conv2d(const Array& x, const Array& w, Array& out, int64_t n, int64_t c, int64_t h,
            int64_t wd, int64_t o, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
            int64_t pw, int64_t dh, int64_t dw);
void conv2d_backward_input(const Array& grad, const Array& w, Array& dx, int64_t n, int64_t c,
                           int64_t h, int64_t wd, int64_t o, int64_t kh, int64_t kw, int64_t sh,
                           int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
void conv2d_backward_weight(const Array& x, const Array& grad, Array& dw_out, int64_t n,
                            int64_t c, int64_t h, int64_t wd, int64_t o, int64_t kh, int64_t kw,
                            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                            int64_t dw);

// rnn.cc: one time step of an LSTM or GRU layer, forward and backward, in
// one pass; rnn.cc's header gives the layouts (state holds h_{t-1} in block
// `step` and receives h_t in block step + 1; dc and dh carry the gradient
// from step + 1 in and step's out).
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

// pool.cc: 2-D max pooling with int64 indices, forward and backward; the
// layout is lamina/pool_checks.h's (planes of H x W pooled into OH x OW).
void max_pool2d(const Array& x, Array& out, Array& indices, int64_t planes, int64_t h,
                int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh,
                int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
void max_pool2d_backward(const Array& grad_out, const Array& indices, Array& grad_in,
                         int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                         int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         int64_t dh, int64_t dw);

// batch_norm.cc (v2.1): per-channel batch norm over compact (n, c, s) x, g,
// out and dx; mean, var, rstd, weight, bias, dweight, dbias are (c,).
// batch_norm_stats: mean and biased variance; batch_norm_apply: out = (x -
// mean) * (rstd * weight) + bias; batch_norm_backward: dbias = sum(g),
// dweight = sum(g * xhat) and dx (batch statistics when training, else fixed).
void batch_norm_stats(const Array& x, Array& mean, Array& var, int64_t n, int64_t c, int64_t s);
void batch_norm_apply(const Array& x, const Array& mean, const Array& rstd, const Array& weight,
                      const Array& bias, Array& out, int64_t n, int64_t c, int64_t s);
void batch_norm_backward(const Array& g, const Array& x, const Array& mean, const Array& rstd,
                         const Array& weight, Array& dx, Array& dweight, Array& dbias, int64_t n,
                         int64_t c, int64_t s, bool training);

// attention.cc (v2.2): scaled dot-product attention over compact q (batch, L,
// E), k (batch, S, E), v (batch, S, Ev); mask (mask_batch, L, S) added to the
// scores (mask_batch 0: none, 1: shared, batch: one each), causal hiding key j
// from query i > j. attention writes out (batch, L, Ev) and each query's
// log-sum-exp lse (batch, L); attention_backward recomputes the probabilities
// from lse and writes dq, dk and dv from g, the gradient of out
// (lamina.ndarray._numpy_attention has the formulas).
void attention(const Array& q, const Array& k, const Array& v, const Array& mask, Array& out,
               Array& lse, int64_t batch, int64_t L, int64_t S, int64_t E, int64_t Ev,
               int64_t mask_batch, double scale, bool causal);
void attention_backward(const Array& g, const Array& q, const Array& k, const Array& v,
                        const Array& mask, const Array& lse, Array& dq, Array& dk, Array& dv,
                        int64_t batch, int64_t L, int64_t S, int64_t E, int64_t Ev,
                        int64_t mask_batch, double scale, bool causal);

// The dtypes of the kernels outside the ewise families (those take their
// op's kDtypes): each kernel dispatches over its mask, and bindings.cc
// publishes the masks as kernel_dtypes.
// The reductions and row kernels that take the 16-bit floats widen them into
// float32 scratch, run their float32 body and round (reduce.cc's Widened).
constexpr DTypeMask kReduceSumDtypes = kNumbers | kNarrow;  // a bool sum is cast to int64 first
constexpr DTypeMask kReduceExtremeDtypes = kAllDtypes | kNarrow;
constexpr DTypeMask kReduceArgmaxDtypes = kNumbers;
constexpr DTypeMask kReduceProdDtypes = kNumbers;
constexpr DTypeMask kCumsumDtypes = kNumbers;
constexpr DTypeMask kSortDtypes = kAllDtypes;
constexpr DTypeMask kMultinomialDtypes = kFloats;  // of probs
constexpr DTypeMask kProgramDtypes = kFloats;
constexpr DTypeMask kFusedDtypes = kFloats;  // im2col, col2im, conv2d*, adam_step
constexpr DTypeMask kGeluDtypes = kFloats | kNarrow;  // gelu(_backward): 16-bit in float32 blocks
constexpr DTypeMask kRowDtypes = kFloats | kNarrow;  // softmax, logsumexp, layer norm
// LayerNorm's backward: float32 and float64 (a 16-bit one runs on widened copies)
constexpr DTypeMask kLayerNormBackwardDtypes = kFloats;
constexpr DTypeMask kLogSoftmaxBackwardDtypes = kFloats;  // likewise
// The matmuls take the 16-bit floats too: packing widens them, C sums in float32.
constexpr DTypeMask kMatmulDtypes = kFloats | kNarrow;
constexpr DTypeMask kRnnDtypes = kFloats;  // lstm_cell, gru_cell, their backwards
constexpr DTypeMask kBatchNormDtypes = kFloats;  // batch_norm_stats, _apply, _backward
constexpr DTypeMask kPoolDtypes = kFloats;  // max_pool2d and its backward (indices int64)
constexpr DTypeMask kMatmulBiasDtypes = kFloats;  // 16-bit: widened by the ndarray layer
constexpr DTypeMask kAttentionDtypes = kFloats;  // attention and its backward (16-bit: widened)

// Converts a Python scalar to T like numpy's dtype.type(value): floats round,
// float -> int64 truncates; raises ValueError for NaN/inf into int64.
template <class T>
T scalar_as(py::handle value, const char* op);

}  // namespace lamina_cpu
