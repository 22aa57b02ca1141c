// attention.h: the table of attention.cc's row loops, one per instruction set
// (attention_rows.h holds their source).
#pragma once

#include <cstdint>

namespace lamina_cpu {

// exp over n values, in place allowed (the ISA table's ewise_exp loop).
template <class T>
using ExpLoop = void (*)(const T* a, T* out, int64_t n);

template <class T>
struct AttentionRows {
  // A row of raw scores s[0:n] (q . k) into probabilities: s = scale * s + m
  // (m null: no mask) over the first `seen` keys, 0 beyond; returns the
  // row's log-sum-exp (-inf, the row all 0, when no key is left; NaN, the
  // row all NaN, when a score is NaN).
  T (*softmax)(T* s, const T* m, int64_t seen, int64_t n, T scale, ExpLoop<T> exp);
  // The same row recomputed from its log-sum-exp: s = exp(scale * s + m - lse).
  void (*probabilities)(T* s, const T* m, int64_t seen, int64_t n, T scale, T lse,
                        ExpLoop<T> exp);
  // dp = p * (dp - sum(p * dp)) * scale over a row of n: the scores' gradient.
  void (*score_grads)(const T* p, T* dp, int64_t n, T scale);
};

namespace avx2 {
// attention_avx2.cc (x86 builds with the AVX2 translation units only).
AttentionRows<float> attention_rows_f32();
AttentionRows<double> attention_rows_f64();
}  // namespace avx2

}  // namespace lamina_cpu
