// gemm.h: the interface between the GEMM driver (matmul.cc) and the
// per-ISA micro-kernels (gemm_avx2.cc under -mavx2 -mfma, gemm_avx512.cc
// under -mavx512f/dq/bw/vl; both instantiate gemm_simd.h and gemv_simd.h and
// put them into their ISA's table, isa_table.h).
//
// A micro-kernel computes one full MR x NR tile of C from packed panels:
//   Ap is kc x MR (column k holds A[i0:i0+MR, k], MR consecutive values),
//   Bp is kc x NR (row k holds B[k, j0:j0+NR]), 64-byte aligned,
//   C is row-major with leading dimension ldc; accumulate adds to C,
//   otherwise C is overwritten.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa.h"

namespace lamina_cpu {

// A thread's scratch buffer number slot (0: packed B, 1: packed A, 2: a 16-bit
// product's float32 C), 64-byte aligned, at least bytes long: grown on demand
// and kept, so a batch of small products allocates nothing (matmul.cc;
// gemm_bf16.cc uses the same three for its packing and partial sums).
void* scratch_bytes(int slot, std::size_t bytes);

// C[0:M, 0:N] (row stride N) = A @ B, or += A @ B with accumulate, on the
// calling thread with the active ISA's kernels: matmul.cc's GEMM for kernels
// that run products inside their own loops (attention.cc). A[i, k] =
// A[i * ars + k * acs], B[k, j] = B[k * brs + j * bcs]. T: float or double.
template <class T>
void gemm_on_thread(const T* A, int64_t ars, int64_t acs, const T* B, int64_t brs, int64_t bcs,
                    T* C, int64_t M, int64_t K, int64_t N, bool accumulate);

// bias (null: none) is the tile's NR columns of a row vector added to every
// row as the tile is stored (matmul_bias: the product's last k block).
template <class T>
using UKernel = void (*)(int64_t kc, const T* Ap, const T* Bp, T* C, int64_t ldc, bool accumulate,
                         const T* bias);

// The same tile with A read in place instead of from a packed panel: row i of
// the tile is rows[i][0], rows[i][acs], rows[i][2 * acs], ... For a narrow C
// (one or two NR panels) packing A costs about as much as the FMAs it feeds,
// since each packed value is used by so few of them.
template <class T>
using DirectUKernel = void (*)(int64_t kc, const T* const* rows, int64_t acs, const T* Bp, T* C,
                               int64_t ldc, bool accumulate, const T* bias);

template <class T>
using SmallGemm = void (*)(const T* A, const T* B, T* C, int64_t M, int64_t K, int64_t N);

// The small-M products of gemv_simd.h, for columns [j0, j1) of C (ldc its
// row stride). gemv_dot: B[k, j] = B[j * ldb + k], A's rows contiguous
// (row i at A + i * lda); gemv_axpy: B[k, j] = B[k * ldb + j], A[i, k] =
// A[i * ars + k * acs].
template <class T>
using GemvDot = void (*)(const T* A, int64_t lda, int64_t M, const T* B, int64_t ldb, int64_t K,
                         T* C, int64_t ldc, int64_t j0, int64_t j1);
template <class T>
using GemvAxpy = void (*)(const T* A, int64_t ars, int64_t acs, int64_t M, const T* B, int64_t ldb,
                          int64_t K, T* C, int64_t ldc, int64_t j0, int64_t j1);

// The register tiles (MR rows x NR columns of C) and the kernels that run
// them. AVX2 has 16 ymm registers: 6 x 2 vectors = 12 accumulators, 2 for B,
// one broadcast. AVX-512 has 32 zmm and two tiles: the wide 6 x 4 vectors
// (24 accumulators, 4 for B, one broadcast: 6 broadcasts per 24 FMAs) for
// products wider than a few panels, the tall 14 x 2 (28 accumulators) for
// C 17-63 floats wide, where a 64-wide tile would be mostly padding. Narrower
// C runs the AVX2 tile (docs: the GEMM guide has the measurements).
enum class Tile { Portable, Avx2, Avx512Tall, Avx512Wide };
constexpr int kTiles = 4;

template <class T, Tile K> struct TileOf {
  static constexpr int MR = 6, NR = 64 / int(sizeof(T));  // 16 floats, 8 doubles
};
template <class T> struct TileOf<T, Tile::Avx512Tall> {
  static constexpr int MR = 14, NR = 128 / int(sizeof(T));  // 32 floats, 16 doubles
};
template <class T> struct TileOf<T, Tile::Avx512Wide> {
  static constexpr int MR = 6, NR = 256 / int(sizeof(T));  // 64 floats, 32 doubles
};

// One ISA's GEMM kernels for element type T.
template <class T>
struct IsaGemm {
  UKernel<T> packed;
  DirectUKernel<T> direct;
  SmallGemm<T> small;  // gemm_small.h
  GemvDot<T> dot;      // gemv_simd.h
  GemvAxpy<T> axpy;
  // The tile's narrower copies for C's last panel: edge[e] computes e + 1 of
  // its NR / edge_lanes vectors from the same NR-wide packed B panel, so a
  // C 100 floats wide pads the tall tile to 112 columns, not 128 (null past
  // the tile's vectors, and on the portable tile: edge_lanes 0). Each C
  // element sums the same products in the same order on either.
  UKernel<T> packed_edge[3] = {};
  DirectUKernel<T> direct_edge[3] = {};
  int edge_lanes = 0;
};

}  // namespace lamina_cpu
