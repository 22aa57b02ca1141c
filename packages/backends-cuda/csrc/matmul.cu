// matmul.cu: matmul(a, b, out, m, n, p) and matmul_batched(a, b, out, batch,
// m, n, p): out (m, p) = a (m, n) @ b (n, p), all compact, float32/float64.
//
// A shared-memory, register-blocked tiled GEMM. A block computes a BM x BN tile
// of out with (BM/TM) x (BN/TN) threads, each owning a TM x TN register tile
// spread as 4-wide strips (rows ty*4 + g*4*NTY, columns tx*4 + g*4*NTX) so its
// shared-memory reads are conflict-free 16-byte loads. K advances in steps of
// BK through two shared buffers: while one is multiplied, the next tile is
// loaded from global memory into registers and then stored into the other,
// one __syncthreads per step. The a tile is stored transposed (k-major) so
// both operands are read along a row of shared memory. When n and p are
// multiples of 4, global loads and stores are 16-byte vectors (VEC); otherwise
// scalar with bounds checks. Tiles are numbered along x in groups of 8 tile
// rows so blocks running together share a tiles in L2. batch is grid z.
// float32 uses 128x128 tiles (8x8 per thread) when there are enough of them to
// fill the GPU, else 64x64 (4x4); float64 always 64x64. Accumulation is in T.
#include <algorithm>
#include <type_traits>

#include "common.cuh"

namespace lamina_cuda {

template <class T, int BM, int BN, int BK, int TM, int TN, bool VEC>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                  int64_t m, int64_t n, int64_t p, int64_t batch0) {
  constexpr int NTX = BN / TN, NTY = BM / TM, THREADS = NTX * NTY;
  constexpr int L = VEC ? 4 : 1;                       // elements per global load
  constexpr int A_UNITS = BM * BK / (L * THREADS);     // loads per thread per tile
  constexpr int B_UNITS = BK * BN / (L * THREADS);
  constexpr int APAD = 4;                              // keeps transposed stores 2-way at most
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are 4-wide strips");
  static_assert(A_UNITS * L * THREADS == BM * BK && B_UNITS * L * THREADS == BK * BN,
                "tile loads must divide evenly among threads");
  __shared__ __align__(16) T as[2][BK][BM + APAD];
  __shared__ __align__(16) T bs[2][BK][BN];

  const int64_t batch = batch0 + blockIdx.z;
  a += batch * m * n;
  b += batch * n * p;
  out += batch * m * p;

  // Grouped tile order: 8 tile rows sweep the tile columns together.
  const int64_t tiles_x = (p + BN - 1) / BN, tiles_y = (m + BM - 1) / BM;
  const int64_t per_group = 8 * tiles_x, pid = blockIdx.x;
  const int64_t first_y = pid / per_group * 8;
  const int64_t group_rows = tiles_y - first_y < 8 ? tiles_y - first_y : 8;
  const int64_t row0 = (first_y + (pid % per_group) % group_rows) * BM;
  const int64_t col0 = (pid % per_group) / group_rows * BN;

  const int tid = threadIdx.x, tx = tid % NTX, ty = tid / NTX;
  T ra[A_UNITS][L], rb[B_UNITS][L];

  auto load_global = [&](int64_t k0) {
#pragma unroll
    for (int u = 0; u < A_UNITS; ++u) {
      const int unit = tid + u * THREADS;
      const int64_t r = row0 + unit / (BK / L), c = k0 + unit % (BK / L) * L;
      if constexpr (VEC) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < m && c < n) v = *reinterpret_cast<const float4*>(a + r * n + c);
        ra[u][0] = v.x; ra[u][1] = v.y; ra[u][2] = v.z; ra[u][3] = v.w;
      } else {
        ra[u][0] = (r < m && c < n) ? a[r * n + c] : T(0);
      }
    }
#pragma unroll
    for (int u = 0; u < B_UNITS; ++u) {
      const int unit = tid + u * THREADS;
      const int64_t r = k0 + unit / (BN / L), c = col0 + unit % (BN / L) * L;
      if constexpr (VEC) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < n && c < p) v = *reinterpret_cast<const float4*>(b + r * p + c);
        rb[u][0] = v.x; rb[u][1] = v.y; rb[u][2] = v.z; rb[u][3] = v.w;
      } else {
        rb[u][0] = (r < n && c < p) ? b[r * p + c] : T(0);
      }
    }
  };
  auto store_shared = [&](int buf) {
#pragma unroll
    for (int u = 0; u < A_UNITS; ++u) {
      const int unit = tid + u * THREADS;
      const int r = unit / (BK / L), c = unit % (BK / L) * L;
#pragma unroll
      for (int l = 0; l < L; ++l) as[buf][c + l][r] = ra[u][l];
    }
#pragma unroll
    for (int u = 0; u < B_UNITS; ++u) {
      const int unit = tid + u * THREADS;
      const int r = unit / (BN / L), c = unit % (BN / L) * L;
#pragma unroll
      for (int l = 0; l < L; ++l) bs[buf][r][c + l] = rb[u][l];
    }
  };

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  const int64_t ktiles = (n + BK - 1) / BK;
  if (ktiles > 0) {
    load_global(0);
    store_shared(0);
  }
  __syncthreads();
  for (int64_t kt = 0; kt < ktiles; ++kt) {
    const int cur = static_cast<int>(kt & 1);
    if (kt + 1 < ktiles) load_global((kt + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      T fa[TM], fb[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const T* src = &as[cur][k][g * 4 * NTY + ty * 4];
        if constexpr (std::is_same_v<T, float>) {
          const float4 v = *reinterpret_cast<const float4*>(src);
          fa[g * 4] = v.x; fa[g * 4 + 1] = v.y; fa[g * 4 + 2] = v.z; fa[g * 4 + 3] = v.w;
        } else {
#pragma unroll
          for (int l = 0; l < 4; ++l) fa[g * 4 + l] = src[l];
        }
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const T* src = &bs[cur][k][g * 4 * NTX + tx * 4];
        if constexpr (std::is_same_v<T, float>) {
          const float4 v = *reinterpret_cast<const float4*>(src);
          fb[g * 4] = v.x; fb[g * 4 + 1] = v.y; fb[g * 4 + 2] = v.z; fb[g * 4 + 3] = v.w;
        } else {
#pragma unroll
          for (int l = 0; l < 4; ++l) fb[g * 4 + l] = src[l];
        }
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += fa[i] * fb[j];
    }
    if (kt + 1 < ktiles) store_shared(cur ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t r = row0 + (i / 4) * 4 * NTY + ty * 4 + i % 4;
    if (r >= m) continue;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const int64_t c = col0 + g * 4 * NTX + tx * 4;
      T* dst = out + r * p + c;
      if constexpr (VEC) {
        if (c < p)
          *reinterpret_cast<float4*>(dst) =
              make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
      } else {
#pragma unroll
        for (int l = 0; l < 4; ++l)
          if (c + l < p) dst[l] = acc[i][g * 4 + l];
      }
    }
  }
}

namespace {

constexpr int64_t kMaxGridZ = 65535;

template <class T, int BM, int BN, int TM, int TN, bool VEC>
void launch_gemm(const T* a, const T* b, T* out, int64_t batch, int64_t m, int64_t n, int64_t p,
                 const Launch& ctx) {
  constexpr int BK = 16;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  const int64_t tiles = ((m + BM - 1) / BM) * ((p + BN - 1) / BN);
  if (tiles > 0x7fffffff)
    value_error("matmul: ", m, "x", p, " output needs ", tiles, " tiles, more than one launch holds");
  for (int64_t b0 = 0; b0 < batch; b0 += kMaxGridZ) {
    const dim3 grid(static_cast<unsigned>(tiles), 1,
                    static_cast<unsigned>(std::min(kMaxGridZ, batch - b0)));
    matmul_kernel<T, BM, BN, BK, TM, TN, VEC><<<grid, THREADS, 0, ctx.stream>>>(a, b, out, m, n, p, b0);
    check_launch("matmul_kernel", ctx.stream);
  }
}

void gemm(const char* op, const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
          int64_t n, int64_t p) {
  require_same_dtype(op, {&a, &b, &out});
  require_nonneg(op, "batch", batch);
  require_nonneg(op, "m", m);
  require_nonneg(op, "n", n);
  require_nonneg(op, "p", p);
  const int64_t na = checked_mul(checked_mul(batch, m, op), n, op);
  const int64_t nb = checked_mul(checked_mul(batch, n, op), p, op);
  const int64_t no = checked_mul(checked_mul(batch, m, op), p, op);
  if (a.size() < na || b.size() < nb || out.size() < no)
    value_error(op, ": buffers of ", a.size(), ", ", b.size(), " and ", out.size(),
                " elements do not fit batch=", batch, ", m=", m, ", n=", n, ", p=", p);
  const Launch ctx = launch_on(op, {&a, &b, &out});
  if (no == 0) return;
  dispatch_float(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (n == 0) {
      LAMINA_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, static_cast<std::size_t>(no) * sizeof(T),
                                        ctx.stream),
                        op);
      return;
    }
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      const bool vec = n % 4 == 0 && p % 4 == 0;
      const int64_t big_tiles = batch * ((m + 127) / 128) * ((p + 127) / 128);
      const bool big = big_tiles >= 2 * sm_count(ctx.device);
      if (big && vec) launch_gemm<float, 128, 128, 8, 8, true>(pa, pb, po, batch, m, n, p, ctx);
      else if (big) launch_gemm<float, 128, 128, 8, 8, false>(pa, pb, po, batch, m, n, p, ctx);
      else if (vec) launch_gemm<float, 64, 64, 4, 4, true>(pa, pb, po, batch, m, n, p, ctx);
      else launch_gemm<float, 64, 64, 4, 4, false>(pa, pb, po, batch, m, n, p, ctx);
    } else {
      launch_gemm<double, 64, 64, 4, 4, false>(pa, pb, po, batch, m, n, p, ctx);
    }
  });
}

}  // namespace

void matmul(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p) {
  gemm("matmul", a, b, out, 1, m, n, p);
}

void matmul_batched(const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
                    int64_t n, int64_t p) {
  gemm("matmul_batched", a, b, out, batch, m, n, p);
}

}  // namespace lamina_cuda
