// gemm.h: the interface between the GEMM driver (matmul.cc) and the
// per-ISA micro-kernels (gemm_avx2.cc, compiled with -mavx2 -mfma).
//
// A micro-kernel computes one full MR x NR tile of C from packed panels:
//   Ap is kc x MR (column k holds A[i0:i0+MR, k], MR consecutive values),
//   Bp is kc x NR (row k holds B[k, j0:j0+NR]), 32-byte aligned,
//   C is row-major with leading dimension ldc; accumulate adds to C,
//   otherwise C is overwritten.
#pragma once

#include <cstdint>

namespace lamina_cpu {

template <class T>
using UKernel = void (*)(int64_t kc, const T* Ap, const T* Bp, T* C, int64_t ldc, bool accumulate);

// The same tile with A read in place instead of from a packed panel: row i of
// the tile is rows[i][0], rows[i][acs], rows[i][2 * acs], ... For a narrow C
// (one or two NR panels) packing A costs about as much as the FMAs it feeds,
// since each packed value is used by so few of them.
template <class T>
using DirectUKernel = void (*)(int64_t kc, const T* const* rows, int64_t acs, const T* Bp, T* C,
                               int64_t ldc, bool accumulate);

constexpr int kMR = 6;
constexpr int kNR32 = 16;  // float32 tile: 6 x 16 = 12 ymm accumulators
constexpr int kNR64 = 8;   // float64 tile: 6 x 8  = 12 ymm accumulators

bool cpu_has_avx2_fma();

template <class T>
using SmallGemm = void (*)(const T* A, const T* B, T* C, int64_t M, int64_t K, int64_t N);

#if defined(LAMINA_HAVE_AVX2_TU)
void sgemm_ukernel_avx2(int64_t kc, const float* Ap, const float* Bp, float* C, int64_t ldc,
                        bool accumulate);
void sgemm_ukernel_avx2_direct(int64_t kc, const float* const* rows, int64_t acs,
                               const float* Bp, float* C, int64_t ldc, bool accumulate);
void dgemm_ukernel_avx2(int64_t kc, const double* Ap, const double* Bp, double* C, int64_t ldc,
                        bool accumulate);
// The AVX2/FMA copy of gemm_small.h.
template <class T> SmallGemm<T> avx2_gemm_small();
// Seconds of back-to-back FMAs on the calling thread; returns GFLOP/s.
double fma_probe_avx2(double seconds);
// out[i] = exp(a[i]) for float32, 8 lanes at a time; a and out may alias.
void exp_f32_avx2(const float* a, float* out, int64_t n);
// The AVX2 copy of reduce_columns.h's sum_columns (float and double).
template <class T>
void sum_columns_avx2(const T* src, T* dst, int64_t rows, int64_t ld, int64_t w);
#endif

}  // namespace lamina_cpu
