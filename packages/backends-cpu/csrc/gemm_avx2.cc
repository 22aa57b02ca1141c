// gemm_avx2.cc: AVX2/FMA code, compiled with -mavx2 -mfma and called only
// after cpu_has_avx2_fma() said yes: the float32 6x16 and float64 6x8 GEMM
// micro-kernels (12 ymm accumulators, two B loads and one broadcast per k;
// the float one also in a variant reading A in place),
// the AVX2 copy of the small-product GEMM (gemm_small.h), and the
// FMA-throughput probe the benchmark uses to report fraction of peak.
#include <immintrin.h>

#include <chrono>
#include <cmath>

#include "gemm.h"

namespace lamina_cpu {

namespace avx2 {
template <class T>
inline T madd(T a, T b, T c) {
  return std::fma(a, b, c);  // one vfmadd under -mfma
}
#include "gemm_small.h"
}  // namespace avx2

template <class T> SmallGemm<T> avx2_gemm_small() { return &avx2::gemm_small<T>; }
template SmallGemm<float> avx2_gemm_small<float>();
template SmallGemm<double> avx2_gemm_small<double>();

namespace {
// Adds (accumulate) or writes the 6x16 float tile c{i}{0,1} to C.
inline void store_tile_f32(const __m256 (&rows)[kMR][2], float* C, int64_t ldc, bool accumulate) {
  for (int i = 0; i < kMR; ++i) {
    float* c = C + i * ldc;
    __m256 r0 = rows[i][0], r1 = rows[i][1];
    if (accumulate) {
      r0 = _mm256_add_ps(r0, _mm256_loadu_ps(c));
      r1 = _mm256_add_ps(r1, _mm256_loadu_ps(c + 8));
    }
    _mm256_storeu_ps(c, r0);
    _mm256_storeu_ps(c + 8, r1);
  }
}
}  // namespace

void sgemm_ukernel_avx2(int64_t kc, const float* __restrict__ Ap, const float* __restrict__ Bp,
                        float* __restrict__ C, int64_t ldc, bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int i = 0; i < kMR; ++i) _mm_prefetch(reinterpret_cast<const char*>(C + i * ldc), _MM_HINT_T0);
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);
    _mm_prefetch(reinterpret_cast<const char*>(Bp + 128), _MM_HINT_T0);
    __m256 a = _mm256_broadcast_ss(Ap + 0);
    c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(Ap + 1);
    c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(Ap + 2);
    c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(Ap + 3);
    c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(Ap + 4);
    c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(Ap + 5);
    c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
    Ap += kMR;
    Bp += kNR32;
  }
  const __m256 rows[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                               {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile_f32(rows, C, ldc, accumulate);
}

void sgemm_ukernel_avx2_direct(int64_t kc, const float* const* arows, int64_t acs,
                               const float* __restrict__ Bp, float* __restrict__ C, int64_t ldc,
                               bool accumulate) {
  const float *a0 = arows[0], *a1 = arows[1], *a2 = arows[2], *a3 = arows[3], *a4 = arows[4],
              *a5 = arows[5];
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  // A is not packed, so it may still be in memory. Rows of a row-major A are
  // six streams the hardware prefetches; a transposed A jumps acs along k
  // (one line holding all six rows of a k), so fetch 24 k ahead of it, unless
  // that is pages away (measured: it then costs more than it saves).
  const int64_t ahead = acs == 1 || acs > 1024 ? 0 : 24 * acs;
  for (int64_t k = 0, o = 0; k < kc; ++k, o += acs) {
    const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);
    _mm_prefetch(reinterpret_cast<const char*>(a0 + o + ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(a5 + o + ahead), _MM_HINT_T0);
    __m256 a = _mm256_broadcast_ss(a0 + o);
    c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(a1 + o);
    c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(a2 + o);
    c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(a3 + o);
    c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(a4 + o);
    c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(a5 + o);
    c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
    Bp += kNR32;
  }
  const __m256 rows[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                               {c30, c31}, {c40, c41}, {c50, c51}};
  store_tile_f32(rows, C, ldc, accumulate);
}

void dgemm_ukernel_avx2(int64_t kc, const double* __restrict__ Ap, const double* __restrict__ Bp,
                        double* __restrict__ C, int64_t ldc, bool accumulate) {
  // Named accumulators: an array of __m256d makes GCC store it every k.
  __m256d c00 = _mm256_setzero_pd(), c01 = _mm256_setzero_pd();
  __m256d c10 = _mm256_setzero_pd(), c11 = _mm256_setzero_pd();
  __m256d c20 = _mm256_setzero_pd(), c21 = _mm256_setzero_pd();
  __m256d c30 = _mm256_setzero_pd(), c31 = _mm256_setzero_pd();
  __m256d c40 = _mm256_setzero_pd(), c41 = _mm256_setzero_pd();
  __m256d c50 = _mm256_setzero_pd(), c51 = _mm256_setzero_pd();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256d b0 = _mm256_load_pd(Bp), b1 = _mm256_load_pd(Bp + 4);
    _mm_prefetch(reinterpret_cast<const char*>(Bp + 64), _MM_HINT_T0);
    __m256d a = _mm256_broadcast_sd(Ap + 0);
    c00 = _mm256_fmadd_pd(a, b0, c00); c01 = _mm256_fmadd_pd(a, b1, c01);
    a = _mm256_broadcast_sd(Ap + 1);
    c10 = _mm256_fmadd_pd(a, b0, c10); c11 = _mm256_fmadd_pd(a, b1, c11);
    a = _mm256_broadcast_sd(Ap + 2);
    c20 = _mm256_fmadd_pd(a, b0, c20); c21 = _mm256_fmadd_pd(a, b1, c21);
    a = _mm256_broadcast_sd(Ap + 3);
    c30 = _mm256_fmadd_pd(a, b0, c30); c31 = _mm256_fmadd_pd(a, b1, c31);
    a = _mm256_broadcast_sd(Ap + 4);
    c40 = _mm256_fmadd_pd(a, b0, c40); c41 = _mm256_fmadd_pd(a, b1, c41);
    a = _mm256_broadcast_sd(Ap + 5);
    c50 = _mm256_fmadd_pd(a, b0, c50); c51 = _mm256_fmadd_pd(a, b1, c51);
    Ap += kMR;
    Bp += kNR64;
  }
  const __m256d rows[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                                {c30, c31}, {c40, c41}, {c50, c51}};
  for (int i = 0; i < kMR; ++i) {
    double* row = C + i * ldc;
    __m256d r0 = rows[i][0], r1 = rows[i][1];
    if (accumulate) {
      r0 = _mm256_add_pd(r0, _mm256_loadu_pd(row));
      r1 = _mm256_add_pd(r1, _mm256_loadu_pd(row + 4));
    }
    _mm256_storeu_pd(row, r0);
    _mm256_storeu_pd(row + 4, r1);
  }
}

double fma_probe_avx2(double seconds) {
  using clock = std::chrono::steady_clock;
  // Ten independent chains cover the FMA latency (4-5 cycles) times the two
  // FMA ports; named locals so the compiler keeps them in registers.
  __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(0.1f), a2 = _mm256_set1_ps(0.2f),
         a3 = _mm256_set1_ps(0.3f), a4 = _mm256_set1_ps(0.4f), a5 = _mm256_set1_ps(0.5f),
         a6 = _mm256_set1_ps(0.6f), a7 = _mm256_set1_ps(0.7f), a8 = _mm256_set1_ps(0.8f),
         a9 = _mm256_set1_ps(0.9f);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  const int64_t inner = 1 << 16;
  int64_t rounds = 0;
  const auto t0 = clock::now();
  double elapsed = 0;
  do {
    for (int64_t r = 0; r < inner; ++r) {
      a0 = _mm256_fmadd_ps(a0, x, y); a1 = _mm256_fmadd_ps(a1, x, y);
      a2 = _mm256_fmadd_ps(a2, x, y); a3 = _mm256_fmadd_ps(a3, x, y);
      a4 = _mm256_fmadd_ps(a4, x, y); a5 = _mm256_fmadd_ps(a5, x, y);
      a6 = _mm256_fmadd_ps(a6, x, y); a7 = _mm256_fmadd_ps(a7, x, y);
      a8 = _mm256_fmadd_ps(a8, x, y); a9 = _mm256_fmadd_ps(a9, x, y);
    }
    ++rounds;
    elapsed = std::chrono::duration<double>(clock::now() - t0).count();
  } while (elapsed < seconds);
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(a8, a9));
  float sink[8];
  _mm256_storeu_ps(sink, s);
  volatile float keep = sink[0];
  (void)keep;
  return double(rounds) * inner * 10 * 8 * 2 / elapsed * 1e-9;
}

}  // namespace lamina_cpu
