// rnn.cu: the fused recurrent cells, one time step of an LSTM or GRU layer,
// forward and backward (lstm_cell, lstm_cell_backward, gru_cell,
// gru_cell_backward; float32 and float64). The recurrent GEMM
// h_{t-1} @ W_hh^T runs outside (matmul); these kernels do all of a step's
// elementwise work in one launch instead of 10-15.
//
// Layouts (N = batch, H = hidden; every buffer compact):
//   LSTM: xp (L, N, 4H) gates i, f, g, o; hh (N, 4H); state (L+1, N, 2H)
//         rows [h | c], state[0] = [h0 | c0]; acts (L, N, 4H); tanh_c (L, N, H).
//   GRU:  xp (L, N, 3H) gates r, z, n; hh (N, 3H); b_hh (3H,); state
//         (L+1, N, H), state[0] = h0; gates (L, N, 4H) rows r, z, n, hn.
// A forward step reads state block `step`, writes block step + 1; a backward
// step updates the carry (dc, dh) of its row in place. One thread per
// (row, hidden unit): it reads and writes only its own unit's columns, so no
// thread depends on another. The math is the numpy reference backend's
// (lamina.ndarray._numpy_rnn): sigmoid(x) = 1 / (exp(-x) + 1), tanh(x) =
// 2 / (exp(-2x) + 1) - 1, which saturate without overflow trouble.
#include <cmath>

#include "common.cuh"

namespace lamina_cuda {

namespace {

using checks::RnnRows;

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }

template <class T>
__device__ __forceinline__ T sigmoid_of(T x) {
  return T(1) / (exp_of(-x) + T(1));
}

template <class T>
__device__ __forceinline__ T tanh_of(T x) {
  return T(2) / (exp_of(x * T(-2)) + T(1)) - T(1);
}

// The thread's (row, unit) pairs of an N x H step, grid-stride.
#define LAMINA_RNN_UNITS(e, total)                                                  \
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total; \
       e += static_cast<int64_t>(blockDim.x) * gridDim.x)

template <class T>
__global__ void lstm_cell_kernel(const T* __restrict__ xp, const T* __restrict__ hh,
                                 T* __restrict__ state, T* __restrict__ acts,
                                 T* __restrict__ tanh_c, int64_t step, int64_t batch,
                                 int64_t n) {
  const int64_t total = batch * n;
  LAMINA_RNN_UNITS(e, total) {
    const int64_t r = e / n, j = e - r * n, row = step * batch + r;
    const T* x = xp + row * 4 * n;
    const T* u = hh + r * 4 * n;
    T* a = acts + row * 4 * n;
    const T i = sigmoid_of(x[j] + u[j]);
    const T f = sigmoid_of(x[n + j] + u[n + j]);
    const T g = tanh_of(x[2 * n + j] + u[2 * n + j]);
    const T o = sigmoid_of(x[3 * n + j] + u[3 * n + j]);
    a[j] = i;
    a[n + j] = f;
    a[2 * n + j] = g;
    a[3 * n + j] = o;
    const T c = f * state[row * 2 * n + n + j] + i * g;
    const T tc = tanh_of(c);
    T* next = state + (row + batch) * 2 * n;
    next[j] = o * tc;
    next[n + j] = c;
    tanh_c[row * n + j] = tc;
  }
}

template <class T>
__global__ void lstm_cell_backward_kernel(const T* __restrict__ g, const T* __restrict__ dh_mm,
                                          const T* __restrict__ acts,
                                          const T* __restrict__ state,
                                          const T* __restrict__ tanh_c, T* __restrict__ dc,
                                          T* __restrict__ d_gates, int64_t step, int64_t batch,
                                          int64_t n) {
  const int64_t total = batch * n;
  LAMINA_RNN_UNITS(e, total) {
    const int64_t r = e / n, j = e - r * n, row = step * batch + r;
    const T* a = acts + row * 4 * n;
    const T i = a[j], f = a[n + j], gg = a[2 * n + j], o = a[3 * n + j];
    const T t = tanh_c[row * n + j], c_prev = state[row * 2 * n + n + j];
    const T dh = dh_mm[e] + g[row * 2 * n + j];
    const T d = (g[row * 2 * n + n + j] + dh * (o * (T(1) - t * t))) + dc[e];
    T* out = d_gates + row * 4 * n;
    out[j] = d * ((gg * i) * (T(1) - i));
    out[n + j] = d * ((c_prev * f) * (T(1) - f));
    out[2 * n + j] = d * (i * (T(1) - gg * gg));
    out[3 * n + j] = dh * ((t * o) * (T(1) - o));
    dc[e] = d * f;
  }
}

template <class T>
__global__ void gru_cell_kernel(const T* __restrict__ xp, const T* __restrict__ hh,
                                const T* __restrict__ b, T* __restrict__ state,
                                T* __restrict__ gates, int64_t step, int64_t batch, int64_t n) {
  const int64_t total = batch * n;
  LAMINA_RNN_UNITS(e, total) {
    const int64_t r = e / n, j = e - r * n, row = step * batch + r;
    const T* x = xp + row * 3 * n;
    const T* u = hh + r * 3 * n;
    const T rr = sigmoid_of((x[j] + b[j]) + u[j]);
    const T z = sigmoid_of((x[n + j] + b[n + j]) + u[n + j]);
    const T hn = u[2 * n + j] + b[2 * n + j];
    const T cand = tanh_of(x[2 * n + j] + rr * hn);
    T* out = gates + row * 4 * n;
    out[j] = rr;
    out[n + j] = z;
    out[2 * n + j] = cand;
    out[3 * n + j] = hn;
    state[(row + batch) * n + j] = cand + z * (state[row * n + j] - cand);
  }
}

template <class T>
__global__ void gru_cell_backward_kernel(const T* __restrict__ g, const T* __restrict__ dh_mm,
                                         const T* __restrict__ gates,
                                         const T* __restrict__ state, T* __restrict__ dh,
                                         T* __restrict__ d_hh, T* __restrict__ d_xp,
                                         int64_t step, int64_t batch, int64_t n) {
  const int64_t total = batch * n;
  LAMINA_RNN_UNITS(e, total) {
    const int64_t r = e / n, j = e - r * n, row = step * batch + r;
    const T* gt = gates + row * 4 * n;
    const T rr = gt[j], z = gt[n + j], cand = gt[2 * n + j], hn = gt[3 * n + j];
    const T d = (dh[e] + dh_mm[e]) + g[row * n + j];
    const T q = (T(1) - z) * (T(1) - cand * cand);
    const T dr = d * (((q * hn) * rr) * (T(1) - rr));
    const T dz = d * (((state[row * n + j] - cand) * z) * (T(1) - z));
    T* oh = d_hh + row * 3 * n;
    T* ox = d_xp + row * 3 * n;
    oh[j] = dr;
    oh[n + j] = dz;
    oh[2 * n + j] = d * (q * rr);
    ox[j] = dr;
    ox[n + j] = dz;
    ox[2 * n + j] = d * q;
    dh[e] = d * z;
  }
}

#undef LAMINA_RNN_UNITS

}  // namespace

void lstm_cell(const Array& xp, const Array& hh, Array& state, Array& acts, Array& tanh_c,
               int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "lstm_cell";
  require_same_dtype(op, {&xp, &hh, &state, &acts, &tanh_c});
  checks::check_rnn_cell(op, step, batch, hidden,
                         {{"xp", xp.size(), RnnRows::Sequence, 4},
                          {"hh", hh.size(), RnnRows::Step, 4},
                          {"state", state.size(), RnnRows::States, 2},
                          {"acts", acts.size(), RnnRows::Sequence, 4},
                          {"tanh_c", tanh_c.size(), RnnRows::Sequence, 1}});
  const Launch ctx = launch_on(op, {&xp, &hh, &state, &acts, &tanh_c});
  dispatch<kernel_dtypes::lstm_cell>(op, xp.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = batch * hidden;
    if (total == 0) return;
    launch_kernel(&lstm_cell_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  xp.data<T>(), hh.data<T>(), state.data<T>(), acts.data<T>(), tanh_c.data<T>(),
                  step, batch, hidden);
    check_launch("lstm_cell_kernel", ctx.stream);
  });
}

void lstm_cell_backward(const Array& g, const Array& dh_mm, const Array& acts,
                        const Array& state, const Array& tanh_c, Array& dc, Array& d_gates,
                        int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "lstm_cell_backward";
  require_same_dtype(op, {&g, &dh_mm, &acts, &state, &tanh_c, &dc, &d_gates});
  checks::check_rnn_cell(
      op, step, batch, hidden,
      {{"g", g.size(), RnnRows::Sequence, 2}, {"dh_mm", dh_mm.size(), RnnRows::Step, 1},
       {"acts", acts.size(), RnnRows::Sequence, 4}, {"state", state.size(), RnnRows::States, 2},
       {"tanh_c", tanh_c.size(), RnnRows::Sequence, 1}, {"dc", dc.size(), RnnRows::Step, 1},
       {"d_gates", d_gates.size(), RnnRows::Sequence, 4}});
  const Launch ctx = launch_on(op, {&g, &dh_mm, &acts, &state, &tanh_c, &dc, &d_gates});
  dispatch<kernel_dtypes::lstm_cell_backward>(op, g.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = batch * hidden;
    if (total == 0) return;
    launch_kernel(&lstm_cell_backward_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, g.data<T>(), dh_mm.data<T>(), acts.data<T>(), state.data<T>(),
                  tanh_c.data<T>(), dc.data<T>(), d_gates.data<T>(), step, batch, hidden);
    check_launch("lstm_cell_backward_kernel", ctx.stream);
  });
}

void gru_cell(const Array& xp, const Array& hh, const Array& b_hh, Array& state, Array& gates,
              int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "gru_cell";
  require_same_dtype(op, {&xp, &hh, &b_hh, &state, &gates});
  checks::check_rnn_cell(op, step, batch, hidden,
                         {{"xp", xp.size(), RnnRows::Sequence, 3},
                          {"hh", hh.size(), RnnRows::Step, 3},
                          {"b_hh", b_hh.size(), RnnRows::Bias, 3},
                          {"state", state.size(), RnnRows::States, 1},
                          {"gates", gates.size(), RnnRows::Sequence, 4}});
  const Launch ctx = launch_on(op, {&xp, &hh, &b_hh, &state, &gates});
  dispatch<kernel_dtypes::gru_cell>(op, xp.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = batch * hidden;
    if (total == 0) return;
    launch_kernel(&gru_cell_kernel<T>, grid_for(total, ctx.device), kThreads, 0, ctx.stream,
                  xp.data<T>(), hh.data<T>(), b_hh.data<T>(), state.data<T>(), gates.data<T>(),
                  step, batch, hidden);
    check_launch("gru_cell_kernel", ctx.stream);
  });
}

void gru_cell_backward(const Array& g, const Array& dh_mm, const Array& gates,
                       const Array& state, Array& dh, Array& d_hh, Array& d_xp, int64_t step,
                       int64_t batch, int64_t hidden) {
  const char* op = "gru_cell_backward";
  require_same_dtype(op, {&g, &dh_mm, &gates, &state, &dh, &d_hh, &d_xp});
  checks::check_rnn_cell(
      op, step, batch, hidden,
      {{"g", g.size(), RnnRows::Sequence, 1}, {"dh_mm", dh_mm.size(), RnnRows::Step, 1},
       {"gates", gates.size(), RnnRows::Sequence, 4}, {"state", state.size(), RnnRows::States, 1},
       {"dh", dh.size(), RnnRows::Step, 1}, {"d_hh", d_hh.size(), RnnRows::Sequence, 3},
       {"d_xp", d_xp.size(), RnnRows::Sequence, 3}});
  const Launch ctx = launch_on(op, {&g, &dh_mm, &gates, &state, &dh, &d_hh, &d_xp});
  dispatch<kernel_dtypes::gru_cell_backward>(op, g.dtype(), [&](auto t) {
    using T = decltype(t);
    const int64_t total = batch * hidden;
    if (total == 0) return;
    launch_kernel(&gru_cell_backward_kernel<T>, grid_for(total, ctx.device), kThreads, 0,
                  ctx.stream, g.data<T>(), dh_mm.data<T>(), gates.data<T>(), state.data<T>(),
                  dh.data<T>(), d_hh.data<T>(), d_xp.data<T>(), step, batch, hidden);
    check_launch("gru_cell_backward_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
