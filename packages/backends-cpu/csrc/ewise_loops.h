// ewise_loops.h: the elementwise inner loops, written once and compiled once
// per instruction set: ewise.cc includes this file inside namespace
// lamina_cpu::base (baseline x86-64 / any CPU) and ewise_avx2.cc inside
// lamina_cpu::avx2 (-mavx2 -mfma), so the two copies never collide at link
// time; fill_loops puts each copy into its ISA's table. No include guard on purpose. `ivdep`: out may be the same buffer as
// an input (same index only), which is no loop-carried dependence.
// O is T, or bool for a comparison writing a bool out.
// (Included after isa_table.h.)

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

// A select on the bits with a mask made from the condition's byte: no branch, no
// conditional load, so the loop vectorises (5x the ternary's speed on Zen 3, AVX2).
// The words are read through may_alias types: they alias the float buffers.
typedef uint32_t where_u32 __attribute__((may_alias));
typedef uint64_t where_u64 __attribute__((may_alias));
template <class T>
void where_loop(const bool* c, const T* a, const T* b, T* o, int64_t n) {
  using U = std::conditional_t<sizeof(T) == 4, where_u32, where_u64>;
  const unsigned char* cb = reinterpret_cast<const unsigned char*>(c);
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  U* uo = reinterpret_cast<U*>(o);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const U m = U(0) - U(cb[i] != 0);
    uo[i] = (ua[i] & m) | (ub[i] & ~m);
  }
}

// ReLU's backward, g where x > 0 (or is NaN, PyTorch's threshold rule) and +0
// elsewhere, on the bits as where_loop: one pass where a comparison, a fill
// and a select took three (ResNet9's at 128 x 16 x 8 x 8: 46 us, Zen 4).
template <class T>
void relu_backward_loop(const T* x, const T* g, T* o, int64_t n) {
  using U = std::conditional_t<sizeof(T) == 4, where_u32, where_u64>;
  const U* ug = reinterpret_cast<const U*>(g);
  U* uo = reinterpret_cast<U*>(o);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const U m = U(0) - U(!(x[i] <= T(0)));
    uo[i] = ug[i] & m;
  }
}

// This copy's loops into an ISA table (isa_table.h): for every op and dtype
// it takes (kDtypes), or only those of its kSimd for a vector copy (the
// table keeps the baseline loops for the others).
template <bool kSimdOnly, class Op, class T>
constexpr bool kFills = (Op::kDtypes & (kSimdOnly ? Op::kSimd : Op::kDtypes) &
                         dtype_bit(dtype_of<T>())) != 0;

template <bool kSimdOnly, class Op, class T>
void fill_binary(IsaKernels& k) {
  if constexpr (kFills<kSimdOnly, Op, T>) {
    TypeKernels<T>& t = k.of<T>();
    t.binary.ewise[ops::kOpId<Op>] = &binary_loop<Op, T, T>;
    t.binary.scalar[ops::kOpId<Op>] = &scalar_loop<Op, T, T>;
    if constexpr (Op::kCompare) {
      t.to_bool.ewise[ops::kOpId<Op>] = &binary_loop<Op, T, bool>;
      t.to_bool.scalar[ops::kOpId<Op>] = &scalar_loop<Op, T, bool>;
    }
  }
}

template <bool kSimdOnly, class Op, class T>
void fill_unary(IsaKernels& k) {
  if constexpr (kFills<kSimdOnly, Op, T>) k.of<T>().unary[ops::kOpId<Op>] = &unary_loop<Op, T>;
}

template <bool kSimdOnly>
void fill_loops(IsaKernels& k) {
#define LAMINA_FILL(KIND, OP)                    \
  fill_##KIND<kSimdOnly, ops::OP, float>(k);     \
  fill_##KIND<kSimdOnly, ops::OP, double>(k);    \
  fill_##KIND<kSimdOnly, ops::OP, int64_t>(k);   \
  fill_##KIND<kSimdOnly, ops::OP, bool>(k);
#define LAMINA_FILL_BINARY(OP, NAME) LAMINA_FILL(binary, OP)
#define LAMINA_FILL_UNARY(OP, NAME) LAMINA_FILL(unary, OP)
  LAMINA_BINARY_LOOP_LIST(LAMINA_FILL_BINARY)
  LAMINA_EWISE_UNARY_LIST(LAMINA_FILL_UNARY)
  k.f32.where_bool = &where_loop<float>;
  k.f64.where_bool = &where_loop<double>;
  k.f32.relu_backward = &relu_backward_loop<float>;
  k.f64.relu_backward = &relu_backward_loop<double>;
#undef LAMINA_FILL_UNARY
#undef LAMINA_FILL_BINARY
#undef LAMINA_FILL
}
