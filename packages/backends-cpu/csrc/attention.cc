// attention.cc: scaled dot-product attention, forward and backward, one kernel
// each (interface v2.2, optional): attention and attention_backward.
//
// Layout (lamina.ndarray._numpy_attention, the reference these follow): q
// (B, L, E), k (B, S, E), v (B, S, Ev), g and out (B, L, Ev), lse (B, L), mask
// (mask_batch, L, S) with mask_batch 0 (none), 1 (shared) or B; compact from
// element 0. causal hides key j from query i where j > i.
//
// The forward takes a batch's queries in blocks of rows whose scores fit a
// thread's scratch: scores = q k^T (matmul.cc's GEMM on the calling thread),
// then per row scale, mask, max, exp, sum and log-sum-exp, then out = p v.
// Composed from NDArray ops the scores went through memory four times and the
// softmax backward five more; here they stay in cache. The backward recomputes
// p from lse, as flash attention does, so the forward keeps nothing of size
// L x S: dv += p^T g, dp = g v^T, ds = p (dp - rowsum(p dp)) scale, dq = ds k,
// dk += ds^T q. A causal block reads only the keys its last row sees.
//
// Threads: the forward splits (batch, row block) pairs and the backward
// batches (dk and dv sum over a batch's blocks in order), each computed by
// one thread, so results do not depend on the thread count. The row loops
// (attention_rows.h) are compiled once per instruction set; the active one is
// read once per call.
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "gemm.h"
#include "isa_table.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

namespace base {
#include "attention_rows.h"
}  // namespace base

namespace {

// A block's scores (and in the backward their gradient) take at most this many
// values, so they stay in L2 beside the block's operands.
constexpr int64_t kScoreBudget = 16384;
// A causal block's rows: smaller blocks skip more of the hidden keys but run
// thinner GEMMs. The char GPT's 128 x (64 x 32) heads, 1 thread, Zen 3, forward /
// backward medians: 64 rows 2.8 / 5.3 ms, 32 rows 2.5 / 4.6, 16 rows 2.5 / 4.8,
// 8 rows 3.2 / 5.9.
constexpr int64_t kCausalRows = 32;

template <class T>
AttentionRows<T> rows_table() {
#if defined(LAMINA_HAVE_AVX2_TU)
  if (active_isa() != Isa::Generic) {
    if constexpr (std::is_same_v<T, float>) return avx2::attention_rows_f32();
    else return avx2::attention_rows_f64();
  }
#endif
  return base::attention_rows<T>();
}

// n values of per-thread scratch number `which` (0 or 1), kept between calls.
template <class T>
T* thread_scratch(int which, int64_t n) {
  thread_local std::vector<T> buffers[2];
  std::vector<T>& b = buffers[which];
  if (b.size() < static_cast<std::size_t>(n)) b.resize(static_cast<std::size_t>(n));
  return b.data();
}

// One call's operands and sizes; row i of a batch's queries sees keys [0, seen(i)).
template <class T>
struct Problem {
  const T *q, *k, *v, *mask;
  int64_t L, S, E, Ev, mask_batch;
  T scale;
  bool causal;
  AttentionRows<T> rows;
  ExpLoop<T> exp;

  int64_t block() const {
    const int64_t fit = std::max<int64_t>(1, kScoreBudget / std::max<int64_t>(1, S));
    return std::max<int64_t>(1, std::min({fit, causal ? kCausalRows : L, L}));
  }
  int64_t keys(int64_t i1) const { return causal ? std::min(S, i1) : S; }  // of rows < i1
  int64_t seen(int64_t i) const { return causal ? std::min(S, i + 1) : S; }
  const T* mask_row(int64_t b, int64_t i) const {
    return mask_batch ? mask + ((mask_batch == 1 ? 0 : b) * L + i) * S : nullptr;
  }
  // Products of a block of `rows` against `keys` keys, for the thread split.
  double flops(int64_t rows, int64_t keys) const {
    return 2.0 * double(rows) * double(keys) * double(E + Ev);
  }
};

// Work items per thread part below which a kernel stays on one thread: about
// a million multiply-adds, tens of microseconds.
int64_t grain_for(double flops_per_item) {
  return std::max<int64_t>(1, int64_t(2e6 / std::max(1.0, flops_per_item)));
}

template <class T>
void forward(const Problem<T>& a, T* out, T* lse, int64_t batch) {
  const int64_t lb = a.block(), blocks = (a.L + lb - 1) / lb;
  parallel_for(batch * blocks, grain_for(a.flops(lb, a.S)), [&](int64_t s, int64_t e) {
    T* scores = thread_scratch<T>(0, lb * a.S);
    for (int64_t t = s; t < e; ++t) {
      const int64_t b = t / blocks, i0 = t % blocks * lb, i1 = std::min(a.L, i0 + lb);
      const int64_t rows = i1 - i0, n = a.keys(i1);
      // scores (rows x n) = q[i0:i1] @ k[0:n]^T
      gemm_on_thread<T>(a.q + (b * a.L + i0) * a.E, a.E, 1, a.k + b * a.S * a.E, 1, a.E, scores,
                        rows, a.E, n, false);
      for (int64_t r = 0; r < rows; ++r) {
        const T* m = a.mask_row(b, i0 + r);
        lse[b * a.L + i0 + r] =
            a.rows.softmax(scores + r * n, m, a.seen(i0 + r), n, a.scale, a.exp);
      }
      gemm_on_thread<T>(scores, n, 1, a.v + b * a.S * a.Ev, a.Ev, 1,
                        out + (b * a.L + i0) * a.Ev, rows, n, a.Ev, false);
    }
  }, 1);
}

template <class T>
void backward(const Problem<T>& a, const T* g, const T* lse, T* dq, T* dk, T* dv,
              int64_t batch) {
  const int64_t lb = a.block(), L = a.L, S = a.S, E = a.E, Ev = a.Ev;
  parallel_for(batch, grain_for(2.5 * a.flops(L, S)), [&](int64_t s, int64_t e) {
    T* p = thread_scratch<T>(0, lb * S);
    T* ds = thread_scratch<T>(1, lb * S);
    for (int64_t b = s; b < e; ++b) {
      const T* q = a.q + b * L * E;
      const T* k = a.k + b * S * E;
      const T* v = a.v + b * S * Ev;
      T* dkb = dk + b * S * E;
      T* dvb = dv + b * S * Ev;
      std::fill(dkb, dkb + S * E, T(0));
      std::fill(dvb, dvb + S * Ev, T(0));
      for (int64_t i0 = 0; i0 < L; i0 += lb) {
        const int64_t i1 = std::min(L, i0 + lb), rows = i1 - i0, n = a.keys(i1);
        const T* qi = q + i0 * E;
        const T* gi = g + (b * L + i0) * Ev;
        gemm_on_thread<T>(qi, E, 1, k, 1, E, p, rows, E, n, false);  // p = q k^T
        for (int64_t r = 0; r < rows; ++r)
          a.rows.probabilities(p + r * n, a.mask_row(b, i0 + r), a.seen(i0 + r), n, a.scale,
                               lse[b * L + i0 + r], a.exp);
        gemm_on_thread<T>(p, 1, n, gi, Ev, 1, dvb, n, rows, Ev, true);   // dv += p^T g
        gemm_on_thread<T>(gi, Ev, 1, v, 1, Ev, ds, rows, Ev, n, false);  // dp = g v^T
        for (int64_t r = 0; r < rows; ++r) a.rows.score_grads(p + r * n, ds + r * n, n, a.scale);
        gemm_on_thread<T>(ds, n, 1, k, E, 1, dq + (b * L + i0) * E, rows, n, E, false);
        gemm_on_thread<T>(ds, 1, n, qi, E, 1, dkb, n, rows, E, true);  // dk += ds^T q
      }
    }
  }, 1);
}

template <class T>
Problem<T> problem(const Array& q, const Array& k, const Array& v, const Array& mask, int64_t L,
                   int64_t S, int64_t E, int64_t Ev, int64_t mask_batch, double scale,
                   bool causal) {
  return {q.data<T>(), k.data<T>(), v.data<T>(), mask.data<T>(), L, S, E, Ev, mask_batch,
          T(scale), causal, rows_table<T>(), isa_kernels().of<T>().unary[ops::kOpId<ops::Exp>]};
}

}  // namespace

void attention(const Array& q, const Array& k, const Array& v, const Array& mask, Array& out,
               Array& lse, int64_t batch, int64_t L, int64_t S, int64_t E, int64_t Ev,
               int64_t mask_batch, double scale, bool causal) {
  const char* op = "attention";
  require_same_dtype(op, {&q, &k, &v, &mask, &out, &lse});
  require_dtype_in(op, q.dtype(), kAttentionDtypes);
  using checks::AttentionLayout;
  checks::check_attention(op, batch, L, S, E, Ev, mask_batch,
                          {{"q", q.size(), AttentionLayout::LE},
                           {"k", k.size(), AttentionLayout::SE},
                           {"v", v.size(), AttentionLayout::SV},
                           {"mask", mask.size(), AttentionLayout::Mask},
                           {"out", out.size(), AttentionLayout::LV},
                           {"lse", lse.size(), AttentionLayout::L}});
  dispatch_in<kAttentionDtypes>(op, q.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    forward<T>(problem<T>(q, k, v, mask, L, S, E, Ev, mask_batch, scale, causal), out.data<T>(),
               lse.data<T>(), batch);
  });
}

void attention_backward(const Array& g, const Array& q, const Array& k, const Array& v,
                        const Array& mask, const Array& lse, Array& dq, Array& dk, Array& dv,
                        int64_t batch, int64_t L, int64_t S, int64_t E, int64_t Ev,
                        int64_t mask_batch, double scale, bool causal) {
  const char* op = "attention_backward";
  require_same_dtype(op, {&g, &q, &k, &v, &mask, &lse, &dq, &dk, &dv});
  require_dtype_in(op, q.dtype(), kAttentionDtypes);
  using checks::AttentionLayout;
  checks::check_attention(op, batch, L, S, E, Ev, mask_batch,
                          {{"g", g.size(), AttentionLayout::LV},
                           {"q", q.size(), AttentionLayout::LE},
                           {"k", k.size(), AttentionLayout::SE},
                           {"v", v.size(), AttentionLayout::SV},
                           {"mask", mask.size(), AttentionLayout::Mask},
                           {"lse", lse.size(), AttentionLayout::L},
                           {"dq", dq.size(), AttentionLayout::LE},
                           {"dk", dk.size(), AttentionLayout::SE},
                           {"dv", dv.size(), AttentionLayout::SV}});
  dispatch_in<kAttentionDtypes>(op, q.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    backward<T>(problem<T>(q, k, v, mask, L, S, E, Ev, mask_batch, scale, causal), g.data<T>(),
                lse.data<T>(), dq.data<T>(), dk.data<T>(), dv.data<T>(), batch);
  });
}

}  // namespace lamina_cpu
