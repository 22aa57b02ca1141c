// matmul.cc: matmul (out (m, p) = a (m, n) @ b (n, p), all compact row-major),
// matmul_batched, and matmul_strided (either operand any 2-D view given by
// offset and row/column strides, such as a transpose: packing reads operands
// through their strides anyway, so a view costs no copy), on a cache-blocked,
// packed GEMM:
//
//   for jc in N by NC:            B block  KC x NC, packed into NR-wide panels (L3)
//     for pc in K by KC:
//       for ic in M by MC:        A block  MC x KC, packed into MR-tall panels (L2)
//         for jr, ir:             MR x NR micro-kernel, B panel stays in L1
//
// The micro-kernel and its tile follow the active ISA's table (isa_table.h) and, on
// AVX-512, the width of C: AVX-512 6x64 or 14x32 (gemm_avx512.cc), AVX2/FMA
// 6x16 (gemm_avx2.cc), a portable loop otherwise; the driver is
// instantiated once per tile. Threads own disjoint blocks of C and pack their own
// operands, so a product costs one fork/join and no barriers (which matter on
// a busy, shared machine). A product at most 64 floats wide reads A in place
// instead of packing it. KC is fixed, so every element of C is summed in
// the same order for any thread count. Tiny products skip packing, and so do
// products of a few rows (16 or 32) whose B has contiguous columns or rows
// (gemv_simd.h); batches of small matrices run one matrix per thread.
//
// float16 and bfloat16 products widen A and B to float32 as they are packed
// (no other pass over them), sum C in float32 and round it once at the end:
// PyTorch's rule on its CPU (the sums are the packed float32 path's; a small
// float32 product may take another path and sum in another order).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "isa_table.h"
#include "kernels.h"
#include "narrow.h"
#include "threading.h"
#include "transpose4.h"

namespace lamina_cpu {

namespace base {
template <class T>
inline T madd(T a, T b, T c) {
  return a * b + c;
}
#include "gemm_small.h"

// The portable vector for gemv_simd.h: 16 bytes of GCC vector extensions
// (SSE2 on any x86-64, NEON on arm64).
template <class T>
struct Vec {
  typedef T V __attribute__((vector_size(16)));
  static constexpr int L = 16 / int(sizeof(T));
  static V zero() { return V{}; }
  static V set1(T x) { return V{} + x; }
  static V loadu(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void storeu(T* p, V v) { std::memcpy(p, &v, sizeof v); }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V add(V a, V b) { return a + b; }
};
template <class V>
inline auto fold_lanes(V v) -> decltype(v[0] + v[0]) {
  if constexpr (sizeof(v[0]) == 4) return (v[0] + v[2]) + (v[1] + v[3]);
  else return v[0] + v[1];
}
#define LAMINA_GEMV_PORTABLE
#include "gemv_simd.h"
#undef LAMINA_GEMV_PORTABLE
}  // namespace base

namespace {

template <class T, int MR, int NR>
void ukernel_portable(int64_t kc, const T* __restrict__ Ap, const T* __restrict__ Bp,
                      T* __restrict__ C, int64_t ldc, bool accumulate, const T* bias) {
  T acc[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k)
    for (int i = 0; i < MR; ++i) {
      const T a = Ap[k * MR + i];
      for (int j = 0; j < NR; ++j) acc[i][j] += a * Bp[k * NR + j];
    }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      const T v = bias ? acc[i][j] + bias[j] : acc[i][j];
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + v : v;
    }
}

// Largest k and m blocks the packing sees (Cfg's KC; MC rounded up to MR).
constexpr int64_t kMaxKc = 256, kMaxMc = 512;

// The tile (gemm.h's TileOf) and cache blocking of one kernel: the packed B
// block KC x NC stays in L3, an A block MC x KC in L2, a B micro-panel
// KC x NR in L1 (the 64-wide AVX-512 one streams from L2). KC is the same
// for every tile, so each element of C sums its k terms in the same order on
// every path and the AVX2 and AVX-512 results are equal bit for bit. The
// AVX-512 MC is a multiple of both its MRs (6 and 14): those CPUs have 1-2
// MiB of L2 per core, AVX2 ones from 256 KiB.
template <class T, Tile I>
struct Cfg {
  static constexpr int MR = TileOf<T, I>::MR, NR = TileOf<T, I>::NR;
  static constexpr bool kF32 = sizeof(T) == 4, kWide = I == Tile::Avx512Tall || I == Tile::Avx512Wide;
  static constexpr int64_t KC = kMaxKc;
  static constexpr int64_t MC = kWide ? (kF32 ? 252 : 126) : (kF32 ? 144 : 96);
  static constexpr int64_t NC = kF32 ? 3072 : 2048;
};

}  // namespace

void* scratch_bytes(int slot, std::size_t bytes) {
  struct Buf {
    void* p = nullptr;
    std::size_t bytes = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[3];
  Buf& b = bufs[slot];
  if (bytes > b.bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, 64, bytes) != 0) throw std::bad_alloc();
    std::free(b.p);
    b.p = p;
    b.bytes = bytes;
  }
  return b.p;
}

// The portable tile for every CPU (the tables above it inherit it).
void base::fill_gemm(IsaKernels& k) {
  using F = Cfg<float, Tile::Portable>;
  using D = Cfg<double, Tile::Portable>;
  k.f32.gemm[int(Tile::Portable)] = {&ukernel_portable<float, F::MR, F::NR>, nullptr,
                                     &base::gemm_small<float>, &base::gemv_dot<float>,
                                     &base::gemv_axpy<float>};
  k.f64.gemm[int(Tile::Portable)] = {&ukernel_portable<double, D::MR, D::NR>, nullptr,
                                     &base::gemm_small<double>, &base::gemv_dot<double>,
                                     &base::gemv_axpy<double>};
}

namespace {

// An operand as a 2-D view: element (r, c) is p[r * rs + c * cs]. A compact
// row-major matrix has cs == 1, its transpose rs == 1.
template <class T>
struct Mat {
  const T* p;
  int64_t rs, cs;
  Mat at(int64_t r, int64_t c) const { return {p + r * rs + c * cs, rs, cs}; }
};

// An operand element S as the compute type T: a 16-bit float widens exactly.
template <class T, class S>
inline T widen(S x) {
  if constexpr (::lamina::is_narrow_v<S>) return ::lamina::to_float(x);
  else return x;
}

// A contiguous run p[0:n] as T values: p itself or, for a 16-bit S, its
// values widened into buf by the vectorised loops of narrow.h.
template <class T, class S>
const T* as_compute(const S* p, int64_t n, T* buf) {
  if constexpr (std::is_same_v<S, T>) {
    return p;
  } else {
    to_float32(p, buf, n);
    return buf;
  }
}

// Scratch for as_compute: none where S is T.
template <class T, class S, int64_t N>
struct RunBuf {
  T v[std::is_same_v<S, T> ? 1 : N];
};

// Packs B[0:kc, 0:nc] into NR-wide panels, zero-padded.
template <class T, int NR, class S>
void pack_b_panel(Mat<S> B, int64_t kc, int64_t nc, int64_t panel, T* dst) {
  const int64_t j0 = panel * NR, w = std::min<int64_t>(NR, nc - j0);
  T* d = dst + panel * kc * NR;
  RunBuf<T, S, kMaxKc> buf;
  if (B.cs != 1 && B.rs == 1) {
    // Transposed B: column j is contiguous in k; NR columns, read along k.
#if defined(LAMINA_HAS_TRANSPOSE4)
    if constexpr (std::is_same_v<S, float> && std::is_same_v<T, float> && NR % 4 == 0) {
      if (w == NR) {
        // 4x4 blocks of (column, k) transposed in registers: writing one
        // element per column and k cost about as much as the FMAs of a
        // 128-row product (x @ W^T in a Linear layer).
        const int64_t k4 = kc / 4 * 4;
        for (int64_t j = 0; j < NR; j += 4) {
          const S* col = B.p + (j0 + j) * B.cs;
          for (int64_t k = 0; k < k4; k += 4) transpose4x4(col + k, B.cs, d + k * NR + j, NR);
          for (int64_t k = k4; k < kc; ++k)
            for (int64_t i = 0; i < 4; ++i) d[k * NR + j + i] = col[i * B.cs + k];
        }
        return;
      }
    }
#endif
    for (int64_t j = 0; j < NR; ++j) {
      if (j >= w) {
        for (int64_t k = 0; k < kc; ++k) d[k * NR + j] = T(0);
        continue;
      }
      const T* col = as_compute(B.p + (j0 + j) * B.cs, kc, buf.v);
      for (int64_t k = 0; k < kc; ++k) d[k * NR + j] = col[k];
    }
    return;
  }
  for (int64_t k = 0; k < kc; ++k, d += NR) {
    const S* s = B.p + k * B.rs + j0 * B.cs;
    if (B.cs == 1 && w == NR) {
      const T* row = as_compute(s, NR, buf.v);
      for (int j = 0; j < NR; ++j) d[j] = row[j];
    } else {
      for (int64_t j = 0; j < w; ++j) d[j] = widen<T>(s[j * B.cs]);
      for (int64_t j = w; j < NR; ++j) d[j] = T(0);
    }
  }
}

// Packs B[0:kc, 0:nc] into its NR-wide panels. Row-major B goes a row of k
// at a time across all the panels: panel by panel, each k of a panel is
// another line of a row kc lines apart, and at 256 x 512 floats (a 2 KiB row
// stride, a 512 KiB block, more than Zen 3's L2) every panel fetched its
// lines from L3 again: a third of 128 x 2048 @ 2048 x 512 on Zen 3.
template <class T, int NR, class S>
void pack_b(Mat<S> B, int64_t kc, int64_t nc, T* dst) {
  const int64_t full = nc / NR;
  if (B.cs == 1 && full > 1) {
    RunBuf<T, S, 8 * NR> buf;  // a 16-bit row widens 8 panels at a time
    for (int64_t k = 0; k < kc; ++k) {
      const S* row = B.p + k * B.rs;
      for (int64_t p0 = 0; p0 < full; p0 += 8) {
        const int64_t p1 = std::min(full, p0 + 8);
        const T* r = as_compute(row + p0 * NR, (p1 - p0) * NR, buf.v);
        for (int64_t p = p0; p < p1; ++p)
          std::memcpy(dst + p * kc * NR + k * NR, r + (p - p0) * NR, sizeof(T) * NR);
      }
    }
    if (full * NR < nc) pack_b_panel<T, NR>(B, kc, nc, full, dst);
    return;
  }
  for (int64_t p = 0; p * NR < nc; ++p) pack_b_panel<T, NR>(B, kc, nc, p, dst);
}

// Packs A[0:mc, 0:kc] into MR-tall panels, zero-padded.
template <class T, int MR, class S>
void pack_a(Mat<S> A, int64_t mc, int64_t kc, T* dst) {
  if constexpr (!std::is_same_v<S, T>) {
    if (A.rs == 1 && A.cs != 1) {
      // Transposed 16-bit A: widen the mc values of each k at once, then
      // deal them out to the panels.
      RunBuf<T, S, kMaxMc> buf;
      for (int64_t k = 0; k < kc; ++k) {
        const T* run = as_compute(A.p + k * A.cs, mc, buf.v);
        for (int64_t i0 = 0; i0 < mc; i0 += MR)
          for (int i = 0; i < MR; ++i) dst[i0 * kc + k * MR + i] = i0 + i < mc ? run[i0 + i] : T(0);
      }
      return;
    }
  }
  RunBuf<T, S, MR * kMaxKc> buf;
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t h = std::min<int64_t>(MR, mc - i0);
    T* d = dst + i0 * kc;
    if (h == MR && A.cs == 1) {
#if defined(LAMINA_HAS_TRANSPOSE4)
      if constexpr (std::is_same_v<S, float> && std::is_same_v<T, float> && MR >= 4) {
        // The panel's rows in fours as 4x4 register transposes and a last pair
        // as 2x4 ones (6 rows: 4 + 2): the scalar gather cost up to a quarter of
        // a 256-column product, and rows 4-5 one by one a quarter of the packing.
        constexpr int kFours = MR / 4 * 4, kPaired = kFours + (MR - kFours) / 2 * 2;
        const int64_t k4 = kc / 4 * 4;
        const S* r0 = A.p + i0 * A.rs;
        for (int64_t k = 0; k < k4; k += 4) {
          for (int i = 0; i < kFours; i += 4)
            transpose4x4(r0 + i * A.rs + k, A.rs, d + k * MR + i, MR);
          if constexpr (kPaired > kFours)
            transpose2x4(r0 + kFours * A.rs + k, A.rs, d + k * MR + kFours, MR);
          if constexpr (kPaired < MR)
            for (int q = 0; q < 4; ++q) d[(k + q) * MR + kPaired] = r0[kPaired * A.rs + k + q];
        }
        for (int64_t k = k4; k < kc; ++k)
          for (int i = 0; i < MR; ++i) d[k * MR + i] = r0[i * A.rs + k];
        continue;
      }
#endif
      const T* r[MR];
      for (int i = 0; i < MR; ++i) r[i] = as_compute(A.p + (i0 + i) * A.rs, kc, buf.v + i * kMaxKc);
      for (int64_t k = 0; k < kc; ++k, d += MR)
        for (int i = 0; i < MR; ++i) d[i] = r[i][k];
    } else if (h == MR && A.rs == 1) {
      // Transposed A: the MR values of one k are contiguous. Panel by panel,
      // each k's line serves the next panels from L1; dealing each k's run out
      // to every panel (mc / MR write streams) packed 10-20% slower (the K =
      // 2048 weight gradients on Zen 3, read off profiles).
      for (int64_t k = 0; k < kc; ++k, d += MR)
        for (int i = 0; i < MR; ++i) d[i] = widen<T>(A.p[k * A.cs + i0 + i]);
    } else {
      for (int64_t k = 0; k < kc; ++k, d += MR)
        for (int i = 0; i < MR; ++i) d[i] = i < h ? widen<T>(A.p[(i0 + i) * A.rs + k * A.cs]) : T(0);
    }
  }
}

// scratch_bytes (gemm.h) as n values of T.
template <class T>
T* scratch(int slot, std::size_t n) {
  return static_cast<T*>(scratch_bytes(slot, n * sizeof(T)));
}

// Adds bias[0:w] to each of the h rows of c (row stride ldc): the products of
// few rows, which the tiles do not run.
template <class T>
inline void add_bias(T* c, int64_t ldc, int64_t h, int64_t w, const T* __restrict__ bias) {
  for (int64_t i = 0; i < h; ++i) {
    T* __restrict__ ci = c + i * ldc;
    for (int64_t j = 0; j < w; ++j) ci[j] += bias[j];
  }
}

// Runs tile(i0, h, bpanel, dst, ld, acc, bias, e) for each MR x NR tile of an
// mc x nc block of C (i0: its first row, h: its rows in the block, bpanel: its
// packed B panel, e: -1, or the edge kernel that covers a last panel narrower
// than the tile: IsaGemm's edge[e], e + 1 vectors of lanes); edge tiles compute
// into a scratch tile, then add or copy the part that is in C. A bias (null:
// none) goes into each tile's store (the last k block of a product with a bias,
// matmul_bias); an edge tile's NR columns of it come from a padded copy.
template <class T, int MR, int NR, class Tile>
void for_each_tile(const T* Bp, int64_t mc, int64_t nc, int64_t kc, T* C, int64_t ldc,
                   bool accumulate, const T* bias, int64_t lanes, Tile tile) {
  alignas(64) T scratch_tile[MR * NR];
  alignas(64) T edge_bias[NR];
  for (int64_t j0 = 0; j0 < nc; j0 += NR) {
    const int64_t w = std::min<int64_t>(NR, nc - j0);
    const int e = lanes && w <= NR - lanes ? int((w + lanes - 1) / lanes) - 1 : -1;
    const T* bpanel = Bp + j0 * kc;
    const T* b = bias ? bias + j0 : nullptr;
    if (b && w < NR) {
      std::fill(edge_bias, edge_bias + NR, T(0));
      std::copy(b, b + w, edge_bias);
      b = edge_bias;
    }
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
      const int64_t h = std::min<int64_t>(MR, mc - i0);
      T* c = C + i0 * ldc + j0;
      if (h == MR && w == NR) {
        tile(i0, h, bpanel, c, ldc, accumulate, b, -1);
      } else {
        tile(i0, h, bpanel, scratch_tile, int64_t(NR), false, b, e);
        for (int64_t i = 0; i < h; ++i) {
          T* ci = c + i * ldc;
          const T* si = scratch_tile + i * NR;
          if (accumulate) {
            for (int64_t j = 0; j < w; ++j) ci[j] += si[j];
          } else {
            // Fixed-size copies in a loop of constant length (unrolled): a
            // memcpy of w elements became a `rep movs`, whose start-up cost
            // was 30% of 32768x16 @ 16x27 (edge tiles 11 wide) on Zen 3.
#pragma GCC unroll 16
            for (int j = 0; j < NR; j += 4) {
              if (j + 4 <= w) {
                std::memcpy(ci + j, si + j, 4 * sizeof(T));
              } else {
#pragma GCC unroll 4
                for (int q = j; q < j + 3; ++q)
                  if (q < w) ci[q] = si[q];
                break;
              }
            }
          }
        }
      }
    }
  }
}

// One mc x nc block of C from packed A (mc x kc) and packed B (kc x nc).
template <class T, int MR, int NR>
void macro_kernel(const IsaGemm<T>& ks, const T* Ap, const T* Bp, int64_t mc, int64_t nc,
                  int64_t kc, T* C, int64_t ldc, bool accumulate, const T* bias) {
  for_each_tile<T, MR, NR>(Bp, mc, nc, kc, C, ldc, accumulate, bias, ks.edge_lanes,
                       [&](int64_t i0, int64_t, const T* bpanel, T* dst, int64_t ld, bool acc,
                           const T* b, int e) {
                         const UKernel<T> uk = e < 0 ? ks.packed : ks.packed_edge[e];
                         uk(kc, Ap + i0 * kc, bpanel, dst, ld, acc, b);
                       });
}

// macro_kernel reading A in place (see DirectUKernel in gemm.h). A tile's rows
// past mc point at its first row; their results land in the scratch tile only.
template <class T, int MR, int NR>
void macro_kernel_direct(const IsaGemm<T>& ks, Mat<T> A, const T* Bp, int64_t mc, int64_t nc,
                         int64_t kc, T* C, int64_t ldc, bool accumulate, const T* bias) {
  for_each_tile<T, MR, NR>(Bp, mc, nc, kc, C, ldc, accumulate, bias, ks.edge_lanes,
                       [&](int64_t i0, int64_t h, const T* bpanel, T* dst, int64_t ld, bool acc,
                           const T* b, int e) {
                         const T* rows[MR];
                         for (int i = 0; i < MR; ++i) rows[i] = A.p + (i0 + (i < h ? i : 0)) * A.rs;
                         const DirectUKernel<T> uk = e < 0 ? ks.direct : ks.direct_edge[e];
                         uk(kc, rows, A.cs, bpanel, dst, ld, acc, b);
                       });
}

// C[0:M, 0:N] = A[0:M, 0:K] @ B[0:K, 0:N] (+ bias[0:N] on every row, bias
// not null) on the calling thread; ldc is C's row stride, so a thread can own
// any block of the full product. S is the operands' element type: T, or a
// 16-bit float that packing widens to T. K >= 1.
template <class T, Tile I, class S>
void gemm_serial(const IsaGemm<T>& ks, Mat<S> A, Mat<S> B, T* C, int64_t M, int64_t K, int64_t N,
                 int64_t ldc, bool accumulate = false, const T* bias = nullptr) {
  using G = Cfg<T, I>;
  constexpr int NR = G::NR, MR = G::MR;
  const int64_t nc_max = std::min<int64_t>(G::NC, (N + NR - 1) / NR * NR);
  // Even K and M blocks: K = 784 runs as 4 x 196, not 3 x 256 + 16 (a thin
  // last block pays the C load/store of a full one for a few k).
  const int64_t kblocks = (K + G::KC - 1) / G::KC, mblocks = (M + G::MC - 1) / G::MC;
  const int64_t kc_max = (K + kblocks - 1) / kblocks;
  const int64_t mc_max = ((M + mblocks - 1) / mblocks + MR - 1) / MR * MR;
  T* const bpack = scratch<T>(0, static_cast<std::size_t>(kc_max * nc_max));
  // C at most 64 float (32 double) columns wide, four AVX2 panels (AVX-512's
  // wider ones keep two): each packed A value would feed at most 4 NR FMAs,
  // so packing would cost about what it saves; read A in place (unless it
  // needs widening). At 64 columns (a 32 -> 64 3x3 convolution, 36864 x 288
  // @ 288 x 64) packing A cost about a fifth of the product on Zen 3.
  constexpr int64_t kDirectCols = std::max<int64_t>(2 * NR, 256 / int64_t(sizeof(T)));
  const bool direct = std::is_same_v<S, T> && nc_max <= kDirectCols && ks.direct;
  T* const apack = direct ? nullptr : scratch<T>(1, static_cast<std::size_t>(mc_max * kc_max));
  for (int64_t jc = 0; jc < N; jc += nc_max) {
    const int64_t nc = std::min(nc_max, N - jc);
    for (int64_t pc = 0; pc < K; pc += kc_max) {
      const int64_t kc = std::min(kc_max, K - pc);
      const T* last = bias && pc + kc >= K ? bias + jc : nullptr;  // the bias, once
      pack_b<T, NR>(B.at(pc, jc), kc, nc, bpack);
      for (int64_t ic = 0; ic < M; ic += mc_max) {
        const int64_t mc = std::min(mc_max, M - ic);
        if constexpr (std::is_same_v<S, T>) {
          if (direct) {
            macro_kernel_direct<T, MR, NR>(ks, A.at(ic, pc), bpack, mc, nc, kc,
                                           C + ic * ldc + jc, ldc, accumulate || pc > 0, last);
            continue;
          }
        }
        pack_a<T, MR>(A.at(ic, pc), mc, kc, apack);
        macro_kernel<T, MR, NR>(ks, apack, bpack, mc, nc, kc, C + ic * ldc + jc, ldc,
                                accumulate || pc > 0, last);
      }
    }
  }
}

// Threads own disjoint blocks of C on a tr x tc grid (block edges on MR / NR
// multiples): no shared packing, so no barriers, only the final join. Each
// thread packs the A rows and B columns it needs; the grid minimises the
// largest block plus that packing. block(i0, i1, j0, j1) computes
// C[i0:i1, j0:j1]; a grid of one block runs on the calling thread.
template <class Block>
void split_c(int64_t M, int64_t K, int64_t N, int64_t MR, int64_t NR, int nt, Block block) {
  const int64_t mt = (M + MR - 1) / MR, nt_panels = (N + NR - 1) / NR;
  int tr = 1, tc = 1;
  double best = -1;
  for (int r = 1; r <= nt; ++r) {
    if (nt % r) continue;
    const int c = nt / r;
    if (r > mt || c > nt_panels) continue;
    const double rows = double((mt + r - 1) / r) * MR, cols = double((nt_panels + c - 1) / c) * NR;
    const double cost = rows * cols * double(K) + (rows + cols) * double(K) * 4;
    if (best < 0 || cost < best) {
      best = cost;
      tr = r;
      tc = c;
    }
  }
  if (best < 0 || tr * tc == 1) return block(int64_t(0), M, int64_t(0), N);
  auto one = [&](int t) {
    const int ti = t / tc, tj = t % tc;
    const int64_t i0 = mt * ti / tr * MR, i1 = std::min(M, mt * (ti + 1) / tr * MR);
    const int64_t j0 = nt_panels * tj / tc * NR, j1 = std::min(N, nt_panels * (tj + 1) / tc * NR);
    if (i0 < i1 && j0 < j1) block(i0, i1, j0, j1);
  };
  run_threads(tr * tc, [&](int t, int tn) {
    for (int i = t; i < tr * tc; i += tn) one(i);
  });
}

template <class T, Tile I, class S>
void gemm_packed(const IsaGemm<T>& ks, Mat<S> A, Mat<S> B, T* C, int64_t M, int64_t K, int64_t N,
                 int nt, const T* bias = nullptr) {
  split_c(M, K, N, Cfg<T, I>::MR, Cfg<T, I>::NR, nt,
          [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
            gemm_serial<T, I>(ks, A.at(i0, 0), B.at(0, j0), C + i0 * N + j0, i1 - i0, K, j1 - j0, N,
                              false, bias ? bias + j0 : nullptr);
          });
}

constexpr int64_t kSmallFlops = 8 * 8 * 8;

// Threads for a product of M * K * N FMAs: one more thread per 2^20 FMAs (2
// MFLOP). Workers spin and then poll for a millisecond before they sleep
// (threading.cc), so inside a training step a second thread is awake and
// pays off on small products: a quiet Zen 4, 2 threads against 1 in a loop,
// 1.23x at 64^3, 1.37x at 96^3, 1.49x at 128^3, 2.05x at 20x200x800 (an LSTM
// step's recurrent product; the PTB model's 2-thread step went from about 90
// to 85 ms). Products under 2^20 FMAs (about 20 us) stay on one thread: after
// a pause of a few milliseconds the worker sleeps, and waking it costs tens of
// microseconds. The threshold was 2^23 FMAs while workers slept at once.
// Beside a busy core, only the cores left free (free_threads): the sums are the same
// for any thread count.
int threads_for_gemm(int64_t M, int64_t K, int64_t N, int nt) {
  const int64_t want = std::min<int64_t>(nt, M * K * N / (1 << 20) + 1);
  return want <= 1 ? 1 : free_threads(static_cast<int>(want));
}

// Products with at most this many rows read B in place (gemv_simd.h) when
// its columns (dot products) or its rows (row updates) are contiguous. Measured
// against the packed path on Zen 4, 1 thread, K, N from 64 to 800: the dot
// products win up to 16 rows (at 20 they lose by up to 20%), the row updates
// up to 32 (at 48 they lose at 768 x 768).
// The dot products also need K of at least kGemvDotMinK: each one folds its
// lanes and adds K % 16 terms one by one, so at K = 27 (a 3x3 convolution over
// 3 channels, 16 x 27 @ 27 x 1024) they ran 15x behind the packed path.
constexpr int64_t kGemvDotRows = 16, kGemvAxpyRows = 32, kGemvDotMinK = 64;

// Cycles per k of gemv_axpy's tiles for an M x N product with L-lane vectors:
// groups of 6 rows (then 4, then the rest) each run tiles 2 vectors wide, one
// vector wide, then a zero-padded vector for the last N % L columns, copied
// column by column; a tile of R rows and V vectors issues R * V FMAs and R + V
// loads, two of either per cycle.
inline double axpy_cycles(int64_t M, int64_t N, int64_t L) {
  auto group = [&](double r) {
    double c = double(N / (2 * L)) * std::max(2 * r, r + 2) / 2;
    if (N % (2 * L) >= L) c += (r + 1) / 2;
    if (N % L) c += (r + 1) / 2 + double(N % L) / 2;
    return c;
  };
  return double(M / 6) * group(6) + double(M % 6 / 4) * group(4) + (M % 6 % 4 ? group(double(M % 6 % 4)) : 0.0);
}

// Row updates as C^T = B^T A^T when that product's tiles are clearly cheaper
// (A^T must have contiguous rows, N at most 64): 16 x 27 @ 27-column B (a
// 3-channel 3x3 convolution's weight gradient, 16 x 32768 @ 32768 x 27) runs
// its 27 columns as a 16-wide tile, an 8-wide one and a padded 3-wide one per
// group of rows, 27 x 16 as one 16-wide tile.
template <class T>
bool gemv_axpy_transposed(const IsaGemm<T>& ks, Mat<T> A, Mat<T> B, T* C, int64_t M, int64_t K,
                          int64_t N, int nt, int64_t lanes) {
  if (A.rs != 1 || A.cs == 1 || N > 64 || M < 2 ||
      axpy_cycles(N, M, lanes) > 0.85 * axpy_cycles(M, N, lanes))
    return false;
  T* ct = scratch<T>(2, static_cast<std::size_t>(N * M));  // C^T, N x M
  // Threads take groups of 6 rows of C^T (columns of C).
  const int64_t groups = (N + 5) / 6;
  run_threads(static_cast<int>(std::min<int64_t>(nt, groups)), [&](int t, int tn) {
    const int64_t r0 = std::min(N, groups * t / tn * 6), r1 = std::min(N, groups * (t + 1) / tn * 6);
    if (r0 < r1) ks.axpy(B.p + r0 * B.cs, B.cs, B.rs, r1 - r0, A.p, A.cs, K, ct + r0 * M, M, 0, M);
  });
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = ct[j * M + i];
  return true;
}

// The small-M path: false when B has neither contiguous rows nor contiguous
// columns (then the packed GEMM reads it). Threads split the columns of C.
template <class T>
bool gemv(const IsaGemm<T>& ks, Mat<T> A, Mat<T> B, T* C, int64_t M, int64_t K, int64_t N, int nt,
          int64_t lanes) {
  const bool dot = B.rs == 1 && (B.cs != 1 || N == 1);
  if (dot ? (M > kGemvDotRows || K < kGemvDotMinK) : (B.cs != 1 || M > kGemvAxpyRows))
    return false;
  if (!dot && gemv_axpy_transposed(ks, A, B, C, M, K, N, threads_for_gemm(M, K, N, nt), lanes))
    return true;
  if (dot && A.cs != 1) {
    // The dot products read rows of A along k: copy a strided A (M * K, small).
    T* a = scratch<T>(1, static_cast<std::size_t>(M * K));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) a[i * K + k] = A.p[i * A.rs + k * A.cs];
    A = {a, K, 1};
  }
  auto cols = [&](int64_t j0, int64_t j1) {
    if (dot)
      ks.dot(A.p, A.rs, M, B.p, B.cs, K, C, N, j0, j1);
    else
      ks.axpy(A.p, A.rs, A.cs, M, B.p, B.rs, K, C, N, j0, j1);
  };
  nt = threads_for_gemm(M, K, N, nt);
  if (nt == 1) {
    cols(0, N);
    return true;
  }
  // Slices of whole 64-byte lines of C, one per thread.
  constexpr int64_t line = 64 / int64_t(sizeof(T));
  const int64_t lines = (N + line - 1) / line;
  run_threads(nt, [&](int t, int tn) {
    const int64_t j0 = std::min(N, lines * t / tn * line), j1 = std::min(N, lines * (t + 1) / tn * line);
    if (j0 < j1) cols(j0, j1);
  });
  return true;
}

template <class T, Tile I, class S>
void gemm_on(const IsaGemm<T>& ks, Mat<S> A, Mat<S> B, T* C, int64_t M, int64_t K, int64_t N,
             int nt, bool accumulate, const T* bias) {
  // Only the packed path adds into C (its micro-kernels' accumulate); the others overwrite.
  if (accumulate) return gemm_serial<T, I>(ks, A, B, C, M, K, N, N, true);
  if constexpr (!std::is_same_v<S, T>) {
    // 16-bit operands: the paths that read them in place would need them
    // widened first; packing widens them on the way.
    gemm_packed<T, I>(ks, A, B, C, M, K, N, threads_for_gemm(M, K, N, nt), bias);
  } else {
    // the bias goes into the packed path's tiles; the paths for few rows add it after
    if (bias && M > kGemvAxpyRows && M * K * N > kSmallFlops)
      return gemm_packed<T, I>(ks, A, B, C, M, K, N, threads_for_gemm(M, K, N, nt), bias);
    // the lanes of the table's row-update kernels: AVX2's 8 floats, AVX-512's 16
    constexpr int64_t lanes = (I == Tile::Avx2 || I == Tile::Portable ? 32 : 64) / int64_t(sizeof(T));
    if (M <= kGemvAxpyRows && gemv<T>(ks, A, B, C, M, K, N, nt, lanes)) {
      if (bias) add_bias(C, N, M, N, bias);
      return;
    }
    if (M * K * N <= kSmallFlops || M < 2) {
      if (A.cs == 1 && A.rs == K && B.cs == 1 && B.rs == N)
        ks.small(A.p, B.p, C, M, K, N);
      else
        gemm_serial<T, I>(ks, A, B, C, M, K, N, N);
      if (bias) add_bias(C, N, M, N, bias);
      return;
    }
    gemm_packed<T, I>(ks, A, B, C, M, K, N, threads_for_gemm(M, K, N, nt), bias);
  }
}

// C = A @ B (C += A @ B with accumulate; + bias[0:N] on every row, bias not
// null, without accumulate) on the active ISA's kernels and tile (A and B of T
// or, for a float32 T, a 16-bit float S).
template <class T, class S = T>
void gemm(Mat<S> A, Mat<S> B, T* C, int64_t M, int64_t K, int64_t N, int nt,
          bool accumulate = false, const T* bias = nullptr) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) std::fill(C, C + M * N, T(0));
    if (bias) add_bias(C, N, M, N, bias);
    return;
  }
  // The tiles of the active ISA's table: on AVX-512 the one that pads C least
  // (see gemm.h): a C at most one AVX2 panel wide keeps the AVX2 tile, one
  // that the wide tile would pad by more than a quarter takes the tall one.
  const IsaGemm<T>* tiles = isa_kernels().of<T>().gemm;
  auto on = [&](auto tile) {
    constexpr Tile I = decltype(tile)::value;
    gemm_on<T, I>(tiles[int(I)], A, B, C, M, K, N, nt, accumulate, bias);
  };
  using Avx2 = std::integral_constant<Tile, Tile::Avx2>;
  if (tiles[int(Tile::Avx512Wide)].packed) {
    constexpr int64_t kNarrow = TileOf<T, Tile::Avx2>::NR, kWideNR = TileOf<T, Tile::Avx512Wide>::NR;
    if (N <= kNarrow) return on(Avx2{});
    if (N % kWideNR == 0 || N >= 4 * kWideNR)
      return on(std::integral_constant<Tile, Tile::Avx512Wide>{});
    return on(std::integral_constant<Tile, Tile::Avx512Tall>{});
  }
  if (tiles[int(Tile::Avx2)].packed) return on(Avx2{});
  on(std::integral_constant<Tile, Tile::Portable>{});
}

// The bfloat16 path products take (set_bf16_gemm; -1: the best the active
// table has).
std::atomic<int> bf16_choice{-1};

// The bfloat16 path products take now (a Bf16Path): the chosen one, or float32
// where set_isa left it out; else the best the active table has.
int bf16_path() {
  const Bf16Gemm* paths = isa_kernels().bf16_gemm;
  const int choice = bf16_choice.load(std::memory_order_relaxed);
  if (choice >= 0) return paths[choice] ? choice : 0;
  int p = kBf16Paths - 1;
  while (p > 0 && !paths[p]) --p;
  return p;
}

// The kernel of that path, or null: the float32 path.
Bf16Gemm bf16_kernel() { return isa_kernels().bf16_gemm[bf16_path()]; }

// out = A @ B on the chosen bfloat16 path's kernel (false where that is
// float32), which sums in float32 and rounds each block of C into out as its
// last k block ends. Threads own blocks of whole 32 x 32 kernel blocks
// (gemm_bf16.cc).
template <class S>
bool bf16_product(Mat<S> A, Mat<S> B, S* out, int64_t M, int64_t K, int64_t N, int nt) {
  if constexpr (std::is_same_v<S, BFloat16>) {
    const Bf16Gemm kernel = bf16_kernel();
    if (!kernel) return false;
    split_c(M, K, N, 32, 32, threads_for_gemm(M, K, N, nt),
            [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
              const Mat<S> a = A.at(i0, 0), b = B.at(0, j0);
              kernel(a.p, a.rs, a.cs, b.p, b.rs, b.cs, out + i0 * N + j0, i1 - i0, K, j1 - j0, N);
            });
    return true;
  }
  return false;
}

// C = A @ B for any of kMatmulDtypes: a 16-bit product sums into float32
// scratch, rounded once at the end; a bfloat16 one on the CPU's bf16
// instructions where it has them (gemm_bf16.cc), else on widened operands.
template <class T>
void product(Mat<T> A, Mat<T> B, T* C, int64_t M, int64_t K, int64_t N, int nt) {
  if constexpr (::lamina::is_narrow_v<T>) {
    if (M == 0 || N == 0) return;
    if (bf16_product(A, B, C, M, K, N, nt)) return;
    float* c = scratch<float>(2, static_cast<std::size_t>(M * N));
    gemm<float, T>(A, B, c, M, K, N, nt);
    if (nt == 1) return from_float32(c, C, M * N);
    parallel_for(M * N, kCopyGrain, [&](int64_t s, int64_t e) { from_float32(c + s, C + s, e - s); });
  } else {
    gemm<T>(A, B, C, M, K, N, nt);
  }
}

}  // namespace

template <class T>
void gemm_on_thread(const T* A, int64_t ars, int64_t acs, const T* B, int64_t brs, int64_t bcs,
                    T* C, int64_t M, int64_t K, int64_t N, bool accumulate) {
  gemm<T>({A, ars, acs}, {B, brs, bcs}, C, M, K, N, 1, accumulate);
}
template void gemm_on_thread<float>(const float*, int64_t, int64_t, const float*, int64_t,
                                    int64_t, float*, int64_t, int64_t, int64_t, bool);
template void gemm_on_thread<double>(const double*, int64_t, int64_t, const double*, int64_t,
                                     int64_t, double*, int64_t, int64_t, int64_t, bool);

namespace {

void check_matmul(const char* op, const Array& a, const Array& b, const Array& out, int64_t batch,
                  int64_t m, int64_t n, int64_t p) {
  require_same_dtype(op, {&out, &a, &b});
  require_dtype_in(op, out.dtype(), kMatmulDtypes);
  for (int64_t x : {batch, m, n, p})
    if (x < 0) value_error(op, ": sizes must be >= 0, got batch=", batch, ", m=", m, ", n=", n, ", p=", p);
  const int64_t na = checked_mul(checked_mul(batch, m, op), n, op);
  const int64_t nb = checked_mul(checked_mul(batch, n, op), p, op);
  const int64_t no = checked_mul(checked_mul(batch, m, op), p, op);
  checked_mul(checked_mul(m, n, op), p, op);
  if (a.size() < na || b.size() < nb || out.size() < no)
    value_error(op, ": buffers of ", a.size(), ", ", b.size(), " and ", out.size(),
                " elements do not fit batch=", batch, ", m=", m, ", n=", n, ", p=", p);
}

}  // namespace

void matmul(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p) {
  check_matmul("matmul", a, b, out, 1, m, n, p);
  dispatch_in<kMatmulDtypes>("matmul", out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    product<T>({a.data<T>(), n, 1}, {b.data<T>(), p, 1}, out.data<T>(), m, n, p, num_threads());
  });
}

void matmul_batched(const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
                    int64_t n, int64_t p) {
  check_matmul("matmul_batched", a, b, out, batch, m, n, p);
  dispatch_in<kMatmulDtypes>("matmul_batched", out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    const int64_t work = m * n * p;
    if (batch >= 2 * num_threads() && work < 256 * 256 * 256) {
      // Many small products: one matrix per thread, each single-threaded.
      parallel_for(batch, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work)),
                   [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i)
          product<T>({pa + i * m * n, n, 1}, {pb + i * n * p, p, 1}, po + i * m * p, m, n, p, 1);
      }, 1);
    } else {
      for (int64_t i = 0; i < batch; ++i)
        product<T>({pa + i * m * n, n, 1}, {pb + i * n * p, p, 1}, po + i * m * p, m, n, p,
                num_threads());
    }
  });
}

void matmul_batched_strided(const Array& a, const Array& b, Array& out, const Shape& batch,
                            int64_t m, int64_t n, int64_t p, int64_t a_offset,
                            const Shape& a_strides, int64_t b_offset, const Shape& b_strides) {
  const char* op = "matmul_batched_strided";
  require_same_dtype(op, {&out, &a, &b});
  require_dtype_in(op, out.dtype(), kMatmulDtypes);
  const std::size_t nb = batch.size();
  const int64_t count = checks::check_batched_strided(op, batch, m, n, p, a_offset, a_strides,
                                                      b_offset, b_strides, out.size());
  checked_mul(checked_mul(m, n, op), p, op);
  if (count == 0 || m == 0 || p == 0) return;
  if (n) {
    checks::require_batched_view_fits(op, "a", a_offset, a_strides, batch, m, n, a.size());
    checks::require_batched_view_fits(op, "b", b_offset, b_strides, batch, n, p, b.size());
  }
  std::vector<int64_t> ao(static_cast<std::size_t>(count)), bo(ao.size());
  checks::batch_offsets(batch, count, a_offset, a_strides, ao.data());
  checks::batch_offsets(batch, count, b_offset, b_strides, bo.data());
  dispatch_in<kMatmulDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    auto one = [&](int64_t i, int nt) {
      T* c = po + i * m * p;
      if (n == 0) return std::fill(c, c + m * p, T{});
      product<T>({pa + ao[i], a_strides[nb], a_strides[nb + 1]},
              {pb + bo[i], b_strides[nb], b_strides[nb + 1]}, c, m, n, p, nt);
    };
    const int64_t work = m * n * p;
    if (count >= 2 * num_threads() && work < 256 * 256 * 256) {
      // Many small products: one matrix per thread, each single-threaded.
      parallel_for(count, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work)),
                   [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) one(i, 1);
      }, 1);
    } else {
      for (int64_t i = 0; i < count; ++i) one(i, num_threads());
    }
  });
}

namespace {

// matmul_strided's and matmul_bias's checks of their operands and views.
void check_strided(const char* op, const Array& a, const Array& b, const Array& out, int64_t m,
                   int64_t n, int64_t p, int64_t a_offset, int64_t a_rs, int64_t a_cs,
                   int64_t b_offset, int64_t b_rs, int64_t b_cs) {
  require_same_dtype(op, {&out, &a, &b});
  require_dtype_in(op, out.dtype(), kMatmulDtypes);
  for (int64_t x : {m, n, p, a_offset, a_rs, a_cs, b_offset, b_rs, b_cs})
    if (x < 0)
      value_error(op, ": sizes, offsets and strides must be >= 0, got m=", m, ", n=", n, ", p=", p,
                  ", a=(", a_offset, "; ", a_rs, ", ", a_cs, "), b=(", b_offset, "; ", b_rs, ", ",
                  b_cs, ")");
  if (out.size() < checked_mul(m, p, op))
    value_error(op, ": out has ", out.size(), " elements, expected ", m, "x", p);
  checked_mul(checked_mul(m, n, op), p, op);
  // The last element each view reaches must lie in its buffer (every step
  // checked: huge strides must not wrap around to a small index).
  auto reach = [&](int64_t off, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    return checked_add(checked_add(off, checked_mul(rows - 1, rs, op), op),
                       checked_mul(cols - 1, cs, op), op);
  };
  if (m && n && reach(a_offset, m, n, a_rs, a_cs) >= a.size())
    value_error(op, ": a view (offset ", a_offset, ", strides ", a_rs, ", ", a_cs, ") of ", m, "x",
                n, " does not fit a buffer of ", a.size());
  if (n && p && reach(b_offset, n, p, b_rs, b_cs) >= b.size())
    value_error(op, ": b view (offset ", b_offset, ", strides ", b_rs, ", ", b_cs, ") of ", n, "x",
                p, " does not fit a buffer of ", b.size());
}

}  // namespace

void matmul_strided(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p,
                    int64_t a_offset, int64_t a_rs, int64_t a_cs, int64_t b_offset, int64_t b_rs,
                    int64_t b_cs) {
  const char* op = "matmul_strided";
  check_strided(op, a, b, out, m, n, p, a_offset, a_rs, a_cs, b_offset, b_rs, b_cs);
  dispatch_in<kMatmulDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    product<T>({a.data<T>() + a_offset, a_rs, a_cs}, {b.data<T>() + b_offset, b_rs, b_cs},
            out.data<T>(), m, n, p, num_threads());
  });
}

void matmul_bias(const Array& a, const Array& b, const Array& bias, Array& out, int64_t m,
                 int64_t n, int64_t p, int64_t a_offset, int64_t a_rs, int64_t a_cs,
                 int64_t b_offset, int64_t b_rs, int64_t b_cs) {
  const char* op = "matmul_bias";
  check_strided(op, a, b, out, m, n, p, a_offset, a_rs, a_cs, b_offset, b_rs, b_cs);
  require_same_dtype(op, {&out, &bias});
  require_dtype_in(op, out.dtype(), kMatmulBiasDtypes);
  if (bias.size() < p) value_error(op, ": bias has ", bias.size(), " elements, expected ", p);
  dispatch_in<kMatmulBiasDtypes>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    gemm<T>({a.data<T>() + a_offset, a_rs, a_cs}, {b.data<T>() + b_offset, b_rs, b_cs},
            out.data<T>(), m, n, p, num_threads(), false, bias.data<T>());
  });
}

double fma_peak_gflops(double seconds, int threads) {
  if (!(seconds > 0) || seconds > 60) value_error("fma_peak_gflops: seconds must be in (0, 60], got ", seconds);
  if (threads < 1) value_error("fma_peak_gflops: threads must be >= 1, got ", threads);
  if (in_forked_child()) threads = 1;
  double (*probe)(double) = isa_kernels().fma_probe;
  if (!probe)
    throw std::runtime_error(cat("fma_peak_gflops: no FMA probe on the ", isa_name(active_isa()),
                                 " path (it needs avx2 or avx512)"));
  std::vector<double> rates(static_cast<std::size_t>(threads), 0.0);
  run_threads(threads, [&](int t, int) { rates[t] = probe(seconds); });
  double total = 0;
  for (double r : rates) total += r;
  return total;
}

std::string gemm_kernel_name() {
  const IsaGemm<float>* tiles = isa_kernels().f32.gemm;
  auto tile = [](int mr, int nr) { return cat(mr, "x", nr); };
  using W = TileOf<float, Tile::Avx512Wide>;
  using H = TileOf<float, Tile::Avx512Tall>;
  using N = TileOf<float, Tile::Avx2>;
  if (tiles[int(Tile::Avx512Wide)].packed)
    return "avx512_" + tile(W::MR, W::NR) + "+" + tile(H::MR, H::NR) + "+avx2_" + tile(N::MR, N::NR);
  if (tiles[int(Tile::Avx2)].packed) return "avx2_fma_" + tile(N::MR, N::NR);
  return "portable_" + tile(N::MR, N::NR);
}

namespace {
constexpr const char* kBf16PathNames[kBf16Paths] = {"float32", "avx512_bf16", "amx"};
}  // namespace

std::vector<std::string> bf16_gemm_paths() {
  std::vector<std::string> out{kBf16PathNames[0]};
  for (int p = 1; p < kBf16Paths; ++p)
    if (isa_kernels().bf16_gemm[p]) out.push_back(kBf16PathNames[p]);
  return out;
}

std::string bf16_gemm() { return kBf16PathNames[bf16_path()]; }

void set_bf16_gemm(const std::string& name) {
  if (name == "best") return bf16_choice.store(-1, std::memory_order_relaxed);
  for (int p = 0; p < kBf16Paths; ++p)
    if (name == kBf16PathNames[p]) {
      if (p > 0 && !isa_kernels().bf16_gemm[p]) {
        std::string have;
        for (const std::string& h : bf16_gemm_paths()) have += (have.empty() ? "" : ", ") + h;
        value_error("set_bf16_gemm: this CPU (or build, or the active ISA) has no '", name,
                    "' path; it has ", have);
      }
      return bf16_choice.store(p, std::memory_order_relaxed);
    }
  value_error("set_bf16_gemm: unknown path '", name, "'; expected best, float32, avx512_bf16 or amx");
}

}  // namespace lamina_cpu
