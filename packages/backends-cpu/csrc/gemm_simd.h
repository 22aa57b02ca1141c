// gemm_simd.h: the GEMM micro-kernels and the FMA probe, written once over
// simd.h's Vec<T> and compiled once per ISA (gemm_avx2.cc: 8-float ymm,
// gemm_avx512.cc: 16-float zmm), so the AVX2 copy that runs on every x86
// machine also tests the logic of the wide one. Include inside the per-ISA
// namespace after simd.h; no include guard on purpose.
//
// ukernel<T, MR, NV, BV>: one MR x (NV * L) tile of C from packed panels (see
// gemm.h) BV vectors wide (BV > NV: the first NV vectors of a wider tile's
// panel, its edge kernels), MR * NV accumulators held in registers for the
// whole k loop: per k, NV loads of B, MR broadcasts of A, MR * NV FMAs. The loops over
// the tile are fully unrolled, so the accumulator array becomes registers.
// The k loop is unrolled 4 times: on Zen 3 its counter and pointer updates
// held the 6x16 AVX2 tile at 66-72 GFLOP/s, 81-86 unrolled (of a 90 peak). A
// B micro-panel one line wide per k (the AVX2 tiles: 16 KiB at KC 256) stays
// in L1, where prefetching it only took load slots (that, too, cost ~5%);
// the wider AVX-512 panels stream from L2 and are fetched 8 k ahead.

// The tile into C: c + bias (bias: NV vectors, or null) + C where accumulating.
template <class T, int MR, int NV>
inline void store_tile(typename Vec<T>::V (&c)[MR][NV], T* __restrict__ C, int64_t ldc,
                       bool accumulate, const T* __restrict__ bias) {
  using W = Vec<T>;
  using V = typename W::V;
  V b[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) b[j] = bias ? W::loadu(bias + j * W::L) : W::zero();
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      T* p = C + i * ldc + j * W::L;
      V v = bias ? W::add(c[i][j], b[j]) : c[i][j];
      W::storeu(p, accumulate ? W::add(v, W::loadu(p)) : v);
    }
}

template <class T, int MR, int NV, int BV = NV>
void ukernel(int64_t kc, const T* __restrict__ Ap, const T* __restrict__ Bp, T* __restrict__ C,
             int64_t ldc, bool accumulate, const T* __restrict__ bias) {
  using W = Vec<T>;
  using V = typename W::V;
  constexpr int NR = BV * W::L;  // the panel's row stride
  constexpr bool kStreamB = NR * sizeof(T) > 64;
  V c[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) c[i][j] = W::zero();
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) _mm_prefetch(reinterpret_cast<const char*>(C + i * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    V b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = W::load(Bp + j * W::L);
    if constexpr (kStreamB) _mm_prefetch(reinterpret_cast<const char*>(Bp + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V a = W::bcast(Ap + i);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) c[i][j] = W::fma(a, b[j], c[i][j]);
    }
    Ap += MR;
    Bp += NR;
  }
  store_tile<T, MR, NV>(c, C, ldc, accumulate, bias);
}

// The same tile reading A in place (DirectUKernel in gemm.h): row i of the
// tile is rows[i][0], rows[i][acs], ... Rows of a row-major A are MR streams
// the hardware prefetches; a transposed A jumps acs along k (one line holds
// all rows of a k), so fetch 24 k ahead of it, unless that is pages away
// (measured on AVX2: it then costs more than it saves).
template <class T, int MR, int NV, int BV = NV>
void ukernel_direct(int64_t kc, const T* const* rows, int64_t acs, const T* __restrict__ Bp,
                    T* __restrict__ C, int64_t ldc, bool accumulate, const T* __restrict__ bias) {
  using W = Vec<T>;
  using V = typename W::V;
  constexpr int NR = BV * W::L;  // the panel's row stride
  const T* a[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) a[i] = rows[i];
  V c[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) c[i][j] = W::zero();
  const int64_t ahead = acs == 1 || acs > 1024 ? 0 : 24 * acs;
  for (int64_t k = 0, o = 0; k < kc; ++k, o += acs) {
    V b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = W::load(Bp + j * W::L);
    _mm_prefetch(reinterpret_cast<const char*>(a[0] + o + ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(a[MR - 1] + o + ahead), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V x = W::bcast(a[i] + o);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) c[i][j] = W::fma(x, b[j], c[i][j]);
    }
    Bp += NR;
  }
  store_tile<T, MR, NV>(c, C, ldc, accumulate, bias);
}

// The edge copies of the MR x NV-vector tile into g (gemm.h's IsaGemm).
template <class T, int MR, int NV, int E = 1>
void add_edges(IsaGemm<T>& g) {
  if constexpr (E < NV) {
    g.packed_edge[E - 1] = &ukernel<T, MR, E, NV>;
    g.direct_edge[E - 1] = &ukernel_direct<T, MR, E, NV>;
    add_edges<T, MR, NV, E + 1>(g);
  }
}

// Seconds (of the calling thread's CPU time) of back-to-back float FMAs;
// returns GFLOP per CPU-second: what the core does while it runs this
// thread, also on a machine shared with other work. Ten independent chains
// cover the FMA latency (4-5 cycles) times two FMA ports.
inline double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

inline double fma_probe(double seconds) {
  using W = Vec<float>;
  using V = W::V;
  V acc[10];
#pragma GCC unroll 10
  for (int i = 0; i < 10; ++i) acc[i] = W::set1(0.1f * float(i));
  const V x = W::set1(0.999999f), y = W::set1(1e-7f);
  const int64_t inner = 1 << 16;
  int64_t rounds = 0;
  const double t0 = thread_seconds();
  double elapsed = 0;
  do {
    for (int64_t r = 0; r < inner; ++r) {
#pragma GCC unroll 10
      for (int i = 0; i < 10; ++i) acc[i] = W::fma(acc[i], x, y);
    }
    ++rounds;
    elapsed = thread_seconds() - t0;
  } while (elapsed < seconds);
  V s = acc[0];
#pragma GCC unroll 10
  for (int i = 1; i < 10; ++i) s = W::add(s, acc[i]);
  alignas(64) float sink[W::L];
  W::storeu(sink, s);
  volatile float keep = sink[0];
  (void)keep;
  return double(rounds) * inner * 10 * W::L * 2 / elapsed * 1e-9;
}
