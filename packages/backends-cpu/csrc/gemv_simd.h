// gemv_simd.h: the products of a few rows (up to matmul.cc's kGemvDotRows
// or kGemvAxpyRows, as in decoding one token: x (M, K) @ W^T), reading B in
// place instead of packing it; packing B costs K * N moves for only
// M * K * N FMAs, and a transposed B packs through strided writes (the packed
// path ran 10-15x behind a compact product at M = 1). Written once over simd.h's Vec<T> and compiled once per
// ISA like gemm_simd.h (matmul.cc gives the portable path a Vec of GCC
// vector extensions and its fold_lanes, and defines LAMINA_GEMV_PORTABLE,
// which leaves out the intrinsic ones also under -march=native); include
// after Vec and madd; no include guard on purpose.
//
// gemv_dot: B's columns are contiguous (a transposed compact weight,
//   B[k, j] = B[j * ldb + k]): each element of C is the dot product of a row
//   of A with a column of B, summed over k in 64-byte lanes (16 floats,
//   8 doubles, whatever the register width, so AVX2 and AVX-512 give the same
//   bits), the lanes folded in halves, then the last K % lanes terms added.
// gemv_axpy: B's rows are contiguous: a tile of C accumulates
//   A[i, k] * B[k, j0:j1] over k, each element one FMA chain in k order.
// Both compute an element of C the same way wherever a thread's columns
// start, so results do not depend on the thread count.

#if !defined(LAMINA_GEMV_PORTABLE) && (defined(__AVX512F__) || defined(__AVX2__))
// The lanes of one vector folded in halves: (upper half + lower half), and
// again, down to one lane.
inline float fold_lanes(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 1)));
}
inline double fold_lanes(__m128d v) { return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v))); }
inline float fold_lanes(__m256 v) {
  return fold_lanes(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
inline double fold_lanes(__m256d v) {
  return fold_lanes(_mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1)));
}
#endif
#if !defined(LAMINA_GEMV_PORTABLE) && defined(__AVX512F__)
inline float fold_lanes(__m512 v) {
  return fold_lanes(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
inline double fold_lanes(__m512d v) {
  return fold_lanes(_mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1)));
}
#endif

// C[r * ldc + j] = row r of A . column j of B for r < R, j < J: the first
// K - K % P terms in P lanes of 64 bytes (NV vectors), folded in halves
// (first across the vectors, then within one), then the last K % P terms
// one FMA each; the same operations in the same order for every vector width.
template <class T, int R, int J>
void dot_tile(const T* __restrict__ A, int64_t lda, const T* __restrict__ B, int64_t ldb,
              int64_t K, T* __restrict__ C, int64_t ldc) {
  using W = Vec<T>;
  using V = typename W::V;
  constexpr int P = 64 / int(sizeof(T)), NV = P / W::L;
  const int64_t kv = K - K % P;
  T sum[R][J];
  if (kv > 0) {
    V acc[R][J][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][j][v] = W::zero();
    for (int64_t k = 0; k < kv; k += P) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        V x[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) x[r] = W::loadu(A + r * lda + k + v * W::L);
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
          const V w = W::loadu(B + j * ldb + k + v * W::L);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) acc[r][j][v] = W::fma(x[r], w, acc[r][j][v]);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < J; ++j) {
#pragma GCC unroll 4
        for (int n = NV / 2; n > 0; n /= 2)
#pragma GCC unroll 4
          for (int v = 0; v < n; ++v) acc[r][j][v] = W::add(acc[r][j][v], acc[r][j][v + n]);
        sum[r][j] = fold_lanes(acc[r][j][0]);
      }
  } else {
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < J; ++j) sum[r][j] = T(0);
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j) {
      T q = sum[r][j];
      for (int64_t k = kv; k < K; ++k) q = madd(A[r * lda + k], B[j * ldb + k], q);
      C[r * ldc + j] = q;
    }
}

// Columns [j0, j1) of C for R rows of A, J columns at a time.
template <class T, int R, int J>
void dot_cols(const T* A, int64_t lda, const T* B, int64_t ldb, int64_t K, T* C, int64_t ldc,
              int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + J <= j1; j += J) dot_tile<T, R, J>(A, lda, B + j * ldb, ldb, K, C + j, ldc);
  for (; j < j1; ++j) dot_tile<T, R, 1>(A, lda, B + j * ldb, ldb, K, C + j, ldc);
}

// C[i, j] = sum_k A[i * lda + k] * B[j * ldb + k] for i < M, j0 <= j < j1.
// One row takes four columns per pass, two rows 4 / NV (NV vectors per sum:
// 4 on AVX-512, 2 on AVX2; measured on Zen 4, 8 columns for one row and 2
// for four rows were slower), more rows one column at a time, which stays in
// L1 while each group of four rows reads it.
template <class T>
void gemv_dot(const T* A, int64_t lda, int64_t M, const T* B, int64_t ldb, int64_t K, T* C,
              int64_t ldc, int64_t j0, int64_t j1) {
  constexpr int NV = 64 / int(sizeof(T)) / Vec<T>::L, J2 = NV >= 4 ? 1 : 4 / NV;
  if (M == 1) return dot_cols<T, 1, 4>(A, lda, B, ldb, K, C, ldc, j0, j1);
  if (M == 2) return dot_cols<T, 2, J2>(A, lda, B, ldb, K, C, ldc, j0, j1);
  for (int64_t j = j0; j < j1; ++j) {
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) dot_tile<T, 4, 1>(A + i * lda, lda, B + j * ldb, ldb, K, C + i * ldc + j, ldc);
    const T* a = A + i * lda;
    T* c = C + i * ldc + j;
    switch (M - i) {
      case 3: dot_tile<T, 3, 1>(a, lda, B + j * ldb, ldb, K, c, ldc); break;
      case 2: dot_tile<T, 2, 1>(a, lda, B + j * ldb, ldb, K, c, ldc); break;
      case 1: dot_tile<T, 1, 1>(a, lda, B + j * ldb, ldb, K, c, ldc); break;
      default: break;
    }
  }
}

// C[0:R, 0:NV * L] = A[0:R, :] @ B[:, 0:NV * L], A read through its strides.
template <class T, int R, int NV>
void axpy_tile(const T* __restrict__ A, int64_t ars, int64_t acs, const T* __restrict__ B,
               int64_t ldb, int64_t K, T* __restrict__ C, int64_t ldc, bool accumulate) {
  using W = Vec<T>;
  using V = typename W::V;
  V acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = W::zero();
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) b[v] = W::loadu(B + k * ldb + v * W::L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V a = W::set1(A[r * ars + k * acs]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = W::fma(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      T* c = C + r * ldc + v * W::L;
      W::storeu(c, accumulate ? W::add(W::loadu(c), acc[r][v]) : acc[r][v]);
    }
}

// Columns [j, j1) for R rows: tiles NV vectors wide, then half as wide, down
// to one vector, then the last columns one FMA chain each.
template <class T, int R, int NV>
void axpy_cols(const T* A, int64_t ars, int64_t acs, const T* B, int64_t ldb, int64_t K, T* C,
               int64_t ldc, int64_t j, int64_t j1, bool accumulate) {
  constexpr int64_t w = NV * Vec<T>::L;
  for (; j + w <= j1; j += w) axpy_tile<T, R, NV>(A, ars, acs, B + j, ldb, K, C + j, ldc, accumulate);
  if constexpr (NV > 1) {
    axpy_cols<T, R, NV / 2>(A, ars, acs, B, ldb, K, C, ldc, j, j1, accumulate);
  } else if (j < j1) {
    // The last j1 - j < L columns: one zero-padded vector per k, copied from B
    // a block of k at a time, with the tiles' FMA per lane (a scalar chain
    // per column waited out each FMA's latency: 16 x 27 at K = 32768 ran 7x
    // behind the packed path).
    using W = Vec<T>;
    using V = typename W::V;
    constexpr int64_t L = W::L, kb = 64;
    const int64_t tw = j1 - j;
    alignas(64) T rows[kb * L] = {};
    V acc[R];
    for (int r = 0; r < R; ++r) acc[r] = W::zero();
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
      const int64_t nk = std::min(kb, K - k0);
      for (int64_t k = 0; k < nk; ++k)
        for (int64_t c = 0; c < tw; ++c) rows[k * L + c] = B[(k0 + k) * ldb + j + c];
      for (int64_t k = 0; k < nk; ++k) {
        const V b = W::loadu(rows + k * L);
        for (int r = 0; r < R; ++r)
          acc[r] = W::fma(W::set1(A[r * ars + (k0 + k) * acs]), b, acc[r]);
      }
    }
    alignas(64) T out[L];
    for (int r = 0; r < R; ++r) {
      W::storeu(out, acc[r]);
      for (int64_t c = 0; c < tw; ++c) C[r * ldc + j + c] = accumulate ? C[r * ldc + j + c] + out[c] : out[c];
    }
  }
}

// C[i, j] = sum_k A[i * ars + k * acs] * B[k * ldb + j] for i < M,
// j0 <= j < j1, in blocks of 512 bytes of columns by 256 k: a block of B
// (at most 128 KiB) stays in L2 while every group of rows and every tile
// width reads it, and the partial sums add into C. Unblocked in k, each of
// them read all of B again: at 16 x 32768 @ 32768 x 27 (a 3-channel 3x3
// convolution's weight gradient) nine passes over 3.5 MB.
template <class T>
void gemv_axpy(const T* A, int64_t ars, int64_t acs, int64_t M, const T* B, int64_t ldb,
               int64_t K, T* C, int64_t ldc, int64_t j0, int64_t j1) {
  constexpr int64_t block = 512 / int64_t(sizeof(T)), kblock = 256;
  for (int64_t jb = j0; jb < j1; jb += block) {
    const int64_t je = j1 - jb < block ? j1 : jb + block;
    for (int64_t k0 = 0; k0 < K; k0 += kblock) {
      const int64_t nk = std::min(kblock, K - k0);
      const T* ak = A + k0 * acs;
      const T* bk = B + k0 * ldb;
      const bool acc = k0 > 0;
      // Groups of 6 rows (12 accumulators, the packed AVX2 tile's), then 4 and
      // fewer: each group reads the block of B once.
      int64_t i = 0;
      for (; i + 6 <= M; i += 6)
        axpy_cols<T, 6, 2>(ak + i * ars, ars, acs, bk, ldb, nk, C + i * ldc, ldc, jb, je, acc);
      for (; i + 4 <= M; i += 4)
        axpy_cols<T, 4, 2>(ak + i * ars, ars, acs, bk, ldb, nk, C + i * ldc, ldc, jb, je, acc);
      const T* a = ak + i * ars;
      T* c = C + i * ldc;
      switch (M - i) {
        case 3: axpy_cols<T, 3, 2>(a, ars, acs, bk, ldb, nk, c, ldc, jb, je, acc); break;
        case 2: axpy_cols<T, 2, 4>(a, ars, acs, bk, ldb, nk, c, ldc, jb, je, acc); break;
        case 1: axpy_cols<T, 1, 8>(a, ars, acs, bk, ldb, nk, c, ldc, jb, je, acc); break;
        default: break;
      }
    }
  }
}
