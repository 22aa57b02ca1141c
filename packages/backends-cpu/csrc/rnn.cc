// rnn.cc: the fused recurrent cells, one time step of an LSTM or GRU layer
// in one pass over its rows, forward and backward (lstm_cell,
// lstm_cell_backward, gru_cell, gru_cell_backward). The recurrent matmul
// h_{t-1} @ W_hh^T stays outside (the caller runs it with the GEMM); these
// kernels do everything elementwise around it, which as separate kernels
// is 10-15 passes over memory per step.
//
// Layouts (N = batch, H = hidden; every buffer compact, float32 or float64):
//   LSTM: xp (L, N, 4H) gates i, f, g, o; hh (N, 4H); state (L+1, N, 2H)
//         rows [h | c], state[0] = [h0 | c0]; acts (L, N, 4H) activations;
//         tanh_c (L, N, H).
//   GRU:  xp (L, N, 3H) gates r, z, n; hh (N, 3H); b_hh (3H,); state
//         (L+1, N, H), state[0] = h0; gates (L, N, 4H) rows r, z, n, hn
//         (hn = hh_n + b_n, the reset gate's operand).
// The math is the numpy reference backend's (lamina.ndarray._numpy_rnn),
// operation for operation: sigmoid(x) = 1 / (exp(-x) + 1) and tanh(x) =
// 2 / (exp(-2x) + 1) - 1, which saturate to exactly 0, 1 and -1 instead of
// overflowing. Each row writes its arguments of exp into its output, runs
// the active ISA's exp over them in place (the SIMD exp of exp_simd.h for
// float32, the same one NDArray's exp uses), then finishes in plain loops
// over H that the compiler vectorises. Rows run in parallel only when a step
// is large enough to pay for the threads (threading.h).
#include <algorithm>

#include "isa_table.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

namespace {

using checks::RnnRows;

template <class T>
using ExpLoop = UnaryLoop<T>;

template <class T>
ExpLoop<T> exp_loop() {
  return isa_kernels().of<T>().unary[ops::kOpId<ops::Exp>];
}

// Runs row(r) for r in [0, batch), in parallel when rows * width elements
// of transcendental work are worth the threads.
template <class F>
void for_rows(int64_t batch, int64_t width, F&& row) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, width));
  parallel_for(batch, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) row(r);
  }, 1);
}

void require_rnn_dtypes(const char* op, std::initializer_list<const Array*> arrays) {
  require_same_dtype(op, arrays);
  require_dtype_in(op, (*arrays.begin())->dtype(), kRnnDtypes);
}

template <class T>
void lstm_row(const T* __restrict__ x, const T* __restrict__ u, const T* __restrict__ c_prev,
              T* __restrict__ a, T* __restrict__ h, T* __restrict__ c, T* __restrict__ tc,
              int64_t n, ExpLoop<T> exp) {
  T* ai = a;
  T* af = a + n;
  T* ag = a + 2 * n;
  T* ao = a + 3 * n;
  for (int64_t j = 0; j < n; ++j) ai[j] = -(x[j] + u[j]);
  for (int64_t j = 0; j < n; ++j) af[j] = -(x[n + j] + u[n + j]);
  for (int64_t j = 0; j < n; ++j) ag[j] = (x[2 * n + j] + u[2 * n + j]) * T(-2);
  for (int64_t j = 0; j < n; ++j) ao[j] = -(x[3 * n + j] + u[3 * n + j]);
  exp(a, a, 4 * n);
  for (int64_t j = 0; j < 2 * n; ++j) a[j] = T(1) / (a[j] + T(1));
  for (int64_t j = 0; j < n; ++j) ag[j] = T(2) / (ag[j] + T(1)) - T(1);
  for (int64_t j = 0; j < n; ++j) ao[j] = T(1) / (ao[j] + T(1));
  for (int64_t j = 0; j < n; ++j) {
    c[j] = af[j] * c_prev[j] + ai[j] * ag[j];
    tc[j] = c[j] * T(-2);
  }
  exp(tc, tc, n);
  for (int64_t j = 0; j < n; ++j) {
    tc[j] = T(2) / (tc[j] + T(1)) - T(1);
    h[j] = ao[j] * tc[j];
  }
}

template <class T>
void lstm_row_backward(const T* __restrict__ gh, const T* __restrict__ gc,
                       const T* __restrict__ mm, const T* __restrict__ a,
                       const T* __restrict__ c_prev, const T* __restrict__ tc,
                       T* __restrict__ dc, T* __restrict__ d, int64_t n) {
  const T* ai = a;
  const T* af = a + n;
  const T* ag = a + 2 * n;
  const T* ao = a + 3 * n;
  for (int64_t j = 0; j < n; ++j) {
    const T i = ai[j], f = af[j], g = ag[j], o = ao[j], t = tc[j];
    const T dh = mm[j] + gh[j];
    const T dcj = (gc[j] + dh * (o * (T(1) - t * t))) + dc[j];
    d[j] = dcj * ((g * i) * (T(1) - i));
    d[n + j] = dcj * ((c_prev[j] * f) * (T(1) - f));
    d[2 * n + j] = dcj * (i * (T(1) - g * g));
    d[3 * n + j] = dh * ((t * o) * (T(1) - o));
    dc[j] = dcj * f;
  }
}

template <class T>
void gru_row(const T* __restrict__ x, const T* __restrict__ u, const T* __restrict__ b,
             const T* __restrict__ h_prev, T* __restrict__ gt, T* __restrict__ h, int64_t n,
             ExpLoop<T> exp) {
  T* nn = gt + 2 * n;
  T* hn = gt + 3 * n;
  for (int64_t j = 0; j < 2 * n; ++j) gt[j] = -((x[j] + b[j]) + u[j]);
  exp(gt, gt, 2 * n);
  for (int64_t j = 0; j < 2 * n; ++j) gt[j] = T(1) / (gt[j] + T(1));
  for (int64_t j = 0; j < n; ++j) {
    hn[j] = u[2 * n + j] + b[2 * n + j];
    nn[j] = (x[2 * n + j] + gt[j] * hn[j]) * T(-2);
  }
  exp(nn, nn, n);
  for (int64_t j = 0; j < n; ++j) {
    nn[j] = T(2) / (nn[j] + T(1)) - T(1);
    h[j] = nn[j] + gt[n + j] * (h_prev[j] - nn[j]);
  }
}

template <class T>
void gru_row_backward(const T* __restrict__ g, const T* __restrict__ mm,
                      const T* __restrict__ gt, const T* __restrict__ h_prev,
                      T* __restrict__ dh, T* __restrict__ dhh, T* __restrict__ dx, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const T r = gt[j], z = gt[n + j], nj = gt[2 * n + j], hn = gt[3 * n + j];
    const T d = (dh[j] + mm[j]) + g[j];
    const T q = (T(1) - z) * (T(1) - nj * nj);
    const T dr = d * (((q * hn) * r) * (T(1) - r));
    const T dz = d * (((h_prev[j] - nj) * z) * (T(1) - z));
    dhh[j] = dr;
    dhh[n + j] = dz;
    dhh[2 * n + j] = d * (q * r);
    dx[j] = dr;
    dx[n + j] = dz;
    dx[2 * n + j] = d * q;
    dh[j] = d * z;
  }
}

}  // namespace

void lstm_cell(const Array& xp, const Array& hh, Array& state, Array& acts, Array& tanh_c,
               int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "lstm_cell";
  require_rnn_dtypes(op, {&xp, &hh, &state, &acts, &tanh_c});
  checks::check_rnn_cell(op, step, batch, hidden,
                         {{"xp", xp.size(), RnnRows::Sequence, 4},
                          {"hh", hh.size(), RnnRows::Step, 4},
                          {"state", state.size(), RnnRows::States, 2},
                          {"acts", acts.size(), RnnRows::Sequence, 4},
                          {"tanh_c", tanh_c.size(), RnnRows::Sequence, 1}});
  dispatch_in<kRnnDtypes>(op, xp.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const int64_t n = hidden, at = step * batch;
    const T* px = xp.data<T>() + at * 4 * n;
    const T* pu = hh.data<T>();
    T* ps = state.data<T>() + at * 2 * n;
    T* pa = acts.data<T>() + at * 4 * n;
    T* pt = tanh_c.data<T>() + at * n;
    const ExpLoop<T> exp = exp_loop<T>();
    for_rows(batch, 5 * n, [&](int64_t r) {
      T* next = ps + (batch + r) * 2 * n;  // state[step + 1, r]
      lstm_row(px + r * 4 * n, pu + r * 4 * n, ps + r * 2 * n + n, pa + r * 4 * n, next,
               next + n, pt + r * n, n, exp);
    });
  });
}

void lstm_cell_backward(const Array& g, const Array& dh_mm, const Array& acts,
                        const Array& state, const Array& tanh_c, Array& dc, Array& d_gates,
                        int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "lstm_cell_backward";
  require_rnn_dtypes(op, {&g, &dh_mm, &acts, &state, &tanh_c, &dc, &d_gates});
  checks::check_rnn_cell(
      op, step, batch, hidden,
      {{"g", g.size(), RnnRows::Sequence, 2}, {"dh_mm", dh_mm.size(), RnnRows::Step, 1},
       {"acts", acts.size(), RnnRows::Sequence, 4}, {"state", state.size(), RnnRows::States, 2},
       {"tanh_c", tanh_c.size(), RnnRows::Sequence, 1}, {"dc", dc.size(), RnnRows::Step, 1},
       {"d_gates", d_gates.size(), RnnRows::Sequence, 4}});
  dispatch_in<kRnnDtypes>(op, g.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const int64_t n = hidden, at = step * batch;
    const T* pg = g.data<T>() + at * 2 * n;
    const T* pa = acts.data<T>() + at * 4 * n;
    const T* ps = state.data<T>() + at * 2 * n;
    const T* pt = tanh_c.data<T>() + at * n;
    T* pd = d_gates.data<T>() + at * 4 * n;
    for_rows(batch, n, [&](int64_t r) {
      const T* gr = pg + r * 2 * n;
      lstm_row_backward(gr, gr + n, dh_mm.data<T>() + r * n, pa + r * 4 * n, ps + r * 2 * n + n,
                        pt + r * n, dc.data<T>() + r * n, pd + r * 4 * n, n);
    });
  });
}

void gru_cell(const Array& xp, const Array& hh, const Array& b_hh, Array& state, Array& gates,
              int64_t step, int64_t batch, int64_t hidden) {
  const char* op = "gru_cell";
  require_rnn_dtypes(op, {&xp, &hh, &b_hh, &state, &gates});
  checks::check_rnn_cell(op, step, batch, hidden,
                         {{"xp", xp.size(), RnnRows::Sequence, 3},
                          {"hh", hh.size(), RnnRows::Step, 3},
                          {"b_hh", b_hh.size(), RnnRows::Bias, 3},
                          {"state", state.size(), RnnRows::States, 1},
                          {"gates", gates.size(), RnnRows::Sequence, 4}});
  dispatch_in<kRnnDtypes>(op, xp.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const int64_t n = hidden, at = step * batch;
    const T* px = xp.data<T>() + at * 3 * n;
    T* ps = state.data<T>() + at * n;
    T* pg = gates.data<T>() + at * 4 * n;
    const ExpLoop<T> exp = exp_loop<T>();
    for_rows(batch, 3 * n, [&](int64_t r) {
      gru_row(px + r * 3 * n, hh.data<T>() + r * 3 * n, b_hh.data<T>(), ps + r * n,
              pg + r * 4 * n, ps + (batch + r) * n, n, exp);
    });
  });
}

void gru_cell_backward(const Array& g, const Array& dh_mm, const Array& gates,
                       const Array& state, Array& dh, Array& d_hh, Array& d_xp, int64_t step,
                       int64_t batch, int64_t hidden) {
  const char* op = "gru_cell_backward";
  require_rnn_dtypes(op, {&g, &dh_mm, &gates, &state, &dh, &d_hh, &d_xp});
  checks::check_rnn_cell(
      op, step, batch, hidden,
      {{"g", g.size(), RnnRows::Sequence, 1}, {"dh_mm", dh_mm.size(), RnnRows::Step, 1},
       {"gates", gates.size(), RnnRows::Sequence, 4}, {"state", state.size(), RnnRows::States, 1},
       {"dh", dh.size(), RnnRows::Step, 1}, {"d_hh", d_hh.size(), RnnRows::Sequence, 3},
       {"d_xp", d_xp.size(), RnnRows::Sequence, 3}});
  dispatch_in<kRnnDtypes>(op, g.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const int64_t n = hidden, at = step * batch;
    const T* pg = g.data<T>() + at * n;
    const T* pt = gates.data<T>() + at * 4 * n;
    const T* ps = state.data<T>() + at * n;
    T* phh = d_hh.data<T>() + at * 3 * n;
    T* pxp = d_xp.data<T>() + at * 3 * n;
    for_rows(batch, n, [&](int64_t r) {
      gru_row_backward(pg + r * n, dh_mm.data<T>() + r * n, pt + r * 4 * n, ps + r * n,
                       dh.data<T>() + r * n, phh + r * 3 * n, pxp + r * 3 * n, n);
    });
  });
}

}  // namespace lamina_cpu
