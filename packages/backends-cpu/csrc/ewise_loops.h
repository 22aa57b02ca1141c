// ewise_loops.h: the elementwise inner loops, written once and compiled once
// per instruction set: ewise.cc includes this file inside namespace
// lamina_cpu::base (baseline x86-64 / any CPU) and ewise_avx2.cc inside
// lamina_cpu::avx2 (-mavx2 -mfma), so the two copies never collide at link
// time. No include guard on purpose. `ivdep`: out may be the same buffer as
// an input (same index only), which is no loop-carried dependence.
// O is T, or bool for a comparison writing a bool out.
// (Included after ewise_ops.h and <cstdint>.)

template <class Op, class T, class O>
void binary_loop(const T* a, const T* b, O* o, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = ops::to_out<O>(Op::f(a[i], b[i]));
}

template <class Op, class T, class O>
void scalar_loop(const T* a, T v, O* o, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = ops::to_out<O>(Op::f(a[i], v));
}

template <class Op, class T>
void unary_loop(const T* a, T* o, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i], T(0));
}
