// matmul.cu: matmul(a, b, out, m, n, p) and matmul_batched(a, b, out, batch,
// m, n, p): out (m, p) = a (m, n) @ b (n, p), all compact, float32/float64 or
// float16/bfloat16 (below);
// matmul_strided(a, b, out, m, n, p, a_offset, a_rs, a_cs, b_offset, b_rs,
// b_cs): the same product of two strided views (a transpose, a slice with
// steps, a stride-0 broadcast) into a compact out, read in place; and
// matmul_batched_strided, that product for every matrix of a strided batch
// (each matrix's start offsets in a small device array the kernel indexes).
//
// A shared-memory, register-blocked tiled GEMM. A block computes a BM x BN tile
// of out with (BM/TM) x (BN/TN) threads, each owning a TM x TN register tile
// spread as 4-wide strips (rows ty*4 + g*4*NTY, columns tx*4 + g*4*NTX) so its
// shared-memory reads are conflict-free 16-byte loads. K advances in steps of
// BK through two shared buffers: while one is multiplied, the next tile is
// loaded from global memory into registers and then stored into the other,
// one __syncthreads per step. The a tile is stored transposed (k-major) so
// both operands are read along a row of shared memory. When rows are 16-byte
// aligned runs whose length is a multiple of 4 (compact: n and p multiples of
// 4), global loads and stores are 16-byte vectors (VEC); otherwise scalar with
// bounds checks. Tiles are numbered along x in groups of 8 tile rows so
// blocks running together share a tiles in L2. batch is grid z.
// float32 uses 128x128 tiles (8x8 per thread) when there are enough of them to
// fill the GPU, else 64x64 (4x4); float64 always 64x64. Accumulation is in T's
// compute type C (ValueOf, common.cuh): T itself, or float for float16 and
// bfloat16. A 16-bit product runs float32's kernel with float shared tiles,
// registers and accumulators: its loads are scalar (never VEC) and widen each
// element, its stores round each result once to nearest even, and the tile
// sizes and k order are float32's, so it is the float32 fallback's product
// rounded (up to the fused multiply-adds a compiler may form differently).
//
// Global loads go through each operand's (row stride, column stride) and its
// Lay, a template parameter: Row (column stride 1: what matmul and
// matmul_batched pass, as (n, 1) and (p, 1): their loads compute what they did),
// Col (row stride 1: a transpose; consecutive threads then load down a column
// so loads stay coalesced, and b's shared tile is padded against bank
// conflicts) or Any (both strides used: steps, broadcasts; scalar loads; when
// either operand is Any both are, which bounds the instantiations).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "common.cuh"

namespace lamina_cuda {

// Element (r, c) of a strided operand is at r * rs + c * cs.
struct MatStrides {
  int64_t rs, cs;
};

// Which stride of an operand is 1: Row (cs), Col (rs) or neither (Any).
enum class Lay : int { Row, Col, Any };

template <Lay LAY>
__device__ __forceinline__ int64_t element_at(int64_t r, int64_t c, MatStrides s) {
  if constexpr (LAY == Lay::Row) return r * s.rs + c;
  else if constexpr (LAY == Lay::Col) return r + c * s.cs;
  else return r * s.rs + c * s.cs;
}

// Position (r, c) in an R x C operand tile of load unit `unit` (L elements):
// consecutive units run along the operand's unit-stride direction, along a
// row unless the operand is Col.
template <Lay LAY, int R, int C, int L>
__device__ __forceinline__ void unit_position(int unit, int& r, int& c) {
  if constexpr (LAY == Lay::Col) {
    r = unit % (R / L) * L;
    c = unit / (R / L);
  } else {
    r = unit / (C / L);
    c = unit % (C / L) * L;
  }
}

template <class T, int BM, int BN, int BK, int TM, int TN, bool VEC, Lay LA, Lay LB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                  int64_t m, int64_t n, int64_t p, MatStrides sa, MatStrides sb, int64_t batch0,
                  const int64_t* __restrict__ a_offs, const int64_t* __restrict__ b_offs) {
  constexpr int NTX = BN / TN, NTY = BM / TM, THREADS = NTX * NTY;
  constexpr int L = VEC ? 4 : 1;                       // elements per global load
  constexpr int A_UNITS = BM * BK / (L * THREADS);     // loads per thread per tile
  constexpr int B_UNITS = BK * BN / (L * THREADS);
  constexpr int APAD = 4;                              // keeps transposed stores 2-way at most
  constexpr int BPAD = LB == Lay::Col ? 4 : 0;         // the same for b's column-wise stores
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are 4-wide strips");
  static_assert(A_UNITS * L * THREADS == BM * BK && B_UNITS * L * THREADS == BK * BN,
                "tile loads must divide evenly among threads");
  static_assert(!VEC || (std::is_same_v<T, float> && LA != Lay::Any && LB != Lay::Any),
                "16-byte loads are float4 along a unit stride");
  using C = ValueOf<T>;  // what the tiles hold and the products sum in
  __shared__ __align__(16) C as[2][BK][BM + APAD];
  __shared__ __align__(16) C bs[2][BK][BN + BPAD];

  // Batches are compact (matmul_strided runs one: batch0 = 0, one grid z),
  // or each starts at its a_offs/b_offs entry (matmul_batched_strided).
  const int64_t batch = batch0 + blockIdx.z;
  a += a_offs ? a_offs[batch] : batch * m * n;
  b += b_offs ? b_offs[batch] : batch * n * p;
  out += batch * m * p;

  // Grouped tile order: 8 tile rows sweep the tile columns together.
  const int64_t tiles_x = (p + BN - 1) / BN, tiles_y = (m + BM - 1) / BM;
  const int64_t per_group = 8 * tiles_x, pid = blockIdx.x;
  const int64_t first_y = pid / per_group * 8;
  const int64_t group_rows = tiles_y - first_y < 8 ? tiles_y - first_y : 8;
  const int64_t row0 = (first_y + (pid % per_group) % group_rows) * BM;
  const int64_t col0 = (pid % per_group) / group_rows * BN;

  const int tid = threadIdx.x, tx = tid % NTX, ty = tid / NTX;
  C ra[A_UNITS][L], rb[B_UNITS][L];

  auto load_global = [&](int64_t k0) {
#pragma unroll
    for (int u = 0; u < A_UNITS; ++u) {
      int tr, tc;
      unit_position<LA, BM, BK, L>(tid + u * THREADS, tr, tc);
      const int64_t r = row0 + tr, c = k0 + tc;
      if constexpr (VEC) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < m && c < n) v = *reinterpret_cast<const float4*>(a + element_at<LA>(r, c, sa));
        ra[u][0] = v.x; ra[u][1] = v.y; ra[u][2] = v.z; ra[u][3] = v.w;
      } else {
        ra[u][0] = (r < m && c < n) ? widen(a[element_at<LA>(r, c, sa)]) : C(0);
      }
    }
#pragma unroll
    for (int u = 0; u < B_UNITS; ++u) {
      int tr, tc;
      unit_position<LB, BK, BN, L>(tid + u * THREADS, tr, tc);
      const int64_t r = k0 + tr, c = col0 + tc;
      if constexpr (VEC) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < n && c < p) v = *reinterpret_cast<const float4*>(b + element_at<LB>(r, c, sb));
        rb[u][0] = v.x; rb[u][1] = v.y; rb[u][2] = v.z; rb[u][3] = v.w;
      } else {
        rb[u][0] = (r < n && c < p) ? widen(b[element_at<LB>(r, c, sb)]) : C(0);
      }
    }
  };
  auto store_shared = [&](int buf) {
#pragma unroll
    for (int u = 0; u < A_UNITS; ++u) {
      int r, c;
      unit_position<LA, BM, BK, L>(tid + u * THREADS, r, c);
      if constexpr (VEC && LA == Lay::Col) {  // 4 rows of one k: one 16-byte store
        *reinterpret_cast<float4*>(&as[buf][c][r]) =
            make_float4(ra[u][0], ra[u][1], ra[u][2], ra[u][3]);
      } else {
#pragma unroll
        for (int l = 0; l < L; ++l) as[buf][c + l][r] = ra[u][l];
      }
    }
#pragma unroll
    for (int u = 0; u < B_UNITS; ++u) {
      int r, c;
      unit_position<LB, BK, BN, L>(tid + u * THREADS, r, c);
#pragma unroll
      for (int l = 0; l < L; ++l) {
        if constexpr (LB == Lay::Col) bs[buf][r + l][c] = rb[u][l];
        else bs[buf][r][c + l] = rb[u][l];
      }
    }
  };

  C acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = C(0);

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
      C fa[TM], fb[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const C* src = &as[cur][k][g * 4 * NTY + ty * 4];
        if constexpr (std::is_same_v<C, float>) {
          const float4 v = *reinterpret_cast<const float4*>(src);
          fa[g * 4] = v.x; fa[g * 4 + 1] = v.y; fa[g * 4 + 2] = v.z; fa[g * 4 + 3] = v.w;
        } else {
#pragma unroll
          for (int l = 0; l < 4; ++l) fa[g * 4 + l] = src[l];
        }
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const C* src = &bs[cur][k][g * 4 * NTX + tx * 4];
        if constexpr (std::is_same_v<C, float>) {
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
          if (c + l < p) dst[l] = round_to<T>(acc[i][g * 4 + l]);
      }
    }
  }
}

namespace {

constexpr int64_t kMaxGridZ = 65535;

// An operand as the kernels read it: its strides, its Lay, and whether its
// rows allow float4 loads (unit stride, length and start multiples of 4).
struct Operand {
  MatStrides s;
  Lay lay;
  bool vec;
};

// The Operand of a rows x cols view at `offset` with strides (rs, cs). The
// stride of a size-1 dimension is never used, so it need not be 1 for the
// other dimension to count as the unit-stride one.
Operand operand(int64_t rows, int64_t cols, int64_t offset, int64_t rs, int64_t cs) {
  const bool aligned = offset % 4 == 0;
  if (cs == 1 || (rs != 1 && cols == 1))
    return {{rs, cs}, Lay::Row, aligned && cols % 4 == 0 && (rows == 1 || rs % 4 == 0)};
  if (rs == 1 || rows == 1)
    return {{rs, cs}, Lay::Col, aligned && rows % 4 == 0 && (cols == 1 || cs % 4 == 0)};
  return {{rs, cs}, Lay::Any, false};
}

// One GEMM call, validated: `batch` products out (m, p) = a (m, n) @ b (n, p)
// (a and b already advanced to their views' offsets).
template <class T>
struct GemmCall {
  const char* op;
  const T* a;
  const T* b;
  T* out;
  int64_t batch, m, n, p;
  Operand oa, ob;
  // device arrays: where each matrix of a strided batch starts (null: compact)
  const int64_t* a_offs = nullptr;
  const int64_t* b_offs = nullptr;
};

template <Lay L>
using LayC = std::integral_constant<Lay, L>;

// Calls fn(LayC<LA>{}, LayC<LB>{}) with the layouts of a and b: any pair of
// Row and Col, or Any for both when either is Any.
template <class Fn>
void dispatch_lays(Lay la, Lay lb, Fn&& fn) {
  if (la == Lay::Any || lb == Lay::Any) return fn(LayC<Lay::Any>{}, LayC<Lay::Any>{});
  auto with_a = [&](auto ca) {
    if (lb == Lay::Row) fn(ca, LayC<Lay::Row>{});
    else fn(ca, LayC<Lay::Col>{});
  };
  if (la == Lay::Row) with_a(LayC<Lay::Row>{});
  else with_a(LayC<Lay::Col>{});
}

template <class T, int BM, int BN, int TM, int TN, bool VEC, Lay LA, Lay LB>
void launch_gemm(const GemmCall<T>& g, const Launch& ctx) {
  constexpr int BK = 16;
  constexpr int THREADS = (BM / TM) * (BN / TN);
  const int64_t tiles = ((g.m + BM - 1) / BM) * ((g.p + BN - 1) / BN);
  if (tiles > 0x7fffffff)
    value_error(g.op, ": ", g.m, "x", g.p, " output needs ", tiles,
                " tiles, more than one launch holds");
  for (int64_t b0 = 0; b0 < g.batch; b0 += kMaxGridZ) {
    const dim3 grid(static_cast<unsigned>(tiles), 1,
                    static_cast<unsigned>(std::min(kMaxGridZ, g.batch - b0)));
    launch_kernel(&matmul_kernel<T, BM, BN, BK, TM, TN, VEC, LA, LB>, grid, THREADS, 0, ctx.stream,
                  g.a, g.b, g.out, g.m, g.n, g.p, g.oa.s, g.ob.s, b0, g.a_offs, g.b_offs);
    check_launch("matmul_kernel", ctx.stream);
  }
}

// Queues g on ctx: zeros when n == 0, else the kernel for its dtype, size
// (float32 and the 16-bit floats: 128x128 tiles when they fill the GPU), VEC
// (float32 only) and layouts.
template <class T>
void run_gemm(const GemmCall<T>& g, const Launch& ctx) {
  const int64_t no = g.batch * g.m * g.p;
  if (no == 0) return;
  if (g.n == 0) {
    LAMINA_CUDA_CHECK(
        cudaMemsetAsync(g.out, 0, static_cast<std::size_t>(no) * sizeof(T), ctx.stream), g.op);
    return;
  }
  dispatch_lays(g.oa.lay, g.ob.lay, [&](auto ca, auto cb) {
    constexpr Lay LA = decltype(ca)::value, LB = decltype(cb)::value;
    if constexpr (std::is_same_v<ValueOf<T>, float>) {
      const int64_t big_tiles = g.batch * ((g.m + 127) / 128) * ((g.p + 127) / 128);
      const bool big = big_tiles >= 2 * sm_count(ctx.device);
      if constexpr (std::is_same_v<T, float> && LA != Lay::Any) {
        if (g.oa.vec && g.ob.vec && g.p % 4 == 0) {
          if (big) launch_gemm<float, 128, 128, 8, 8, true, LA, LB>(g, ctx);
          else launch_gemm<float, 64, 64, 4, 4, true, LA, LB>(g, ctx);
          return;
        }
      }
      if (big) launch_gemm<T, 128, 128, 8, 8, false, LA, LB>(g, ctx);
      else launch_gemm<T, 64, 64, 4, 4, false, LA, LB>(g, ctx);
    } else {
      launch_gemm<double, 64, 64, 4, 4, false, LA, LB>(g, ctx);
    }
  });
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
  static_assert(kernel_dtypes::matmul == kernel_dtypes::matmul_batched);
  dispatch<kernel_dtypes::matmul>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    run_gemm<T>({op, a.data<T>(), b.data<T>(), out.data<T>(), batch, m, n, p,
                 operand(m, n, 0, n, 1), operand(n, p, 0, p, 1)},
                ctx);
  });
}

// ValueError unless the rows x cols view (offset; rs, cs) of buf, rows and
// cols > 0, lies inside buf; its last element is the farthest it reaches.
void require_view_fits(const char* op, const char* name, const Array& buf, int64_t offset,
                       int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  int64_t last = 0;
  const bool overflow =
      __builtin_add_overflow(offset, checked_mul(rows - 1, rs, op), &last) ||
      __builtin_add_overflow(last, checked_mul(cols - 1, cs, op), &last);
  if (overflow || last >= buf.size())
    value_error(op, ": ", name, " view (offset ", offset, ", strides ", rs, ", ", cs, ") of ",
                rows, "x", cols, " does not fit a buffer of ", buf.size(), " elements");
}

}  // namespace

void matmul(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p) {
  gemm("matmul", a, b, out, 1, m, n, p);
}

void matmul_batched(const Array& a, const Array& b, Array& out, int64_t batch, int64_t m,
                    int64_t n, int64_t p) {
  gemm("matmul_batched", a, b, out, batch, m, n, p);
}

void matmul_strided(const Array& a, const Array& b, Array& out, int64_t m, int64_t n, int64_t p,
                    int64_t a_offset, int64_t a_rs, int64_t a_cs, int64_t b_offset, int64_t b_rs,
                    int64_t b_cs) {
  const char* op = "matmul_strided";
  require_same_dtype(op, {&a, &b, &out});
  require_dtype(op, a.dtype(), kernel_dtypes::matmul_strided);
  require_nonneg(op, "m", m);
  require_nonneg(op, "n", n);
  require_nonneg(op, "p", p);
  require_nonneg(op, "a_offset", a_offset);
  require_nonneg(op, "a_rs", a_rs);
  require_nonneg(op, "a_cs", a_cs);
  require_nonneg(op, "b_offset", b_offset);
  require_nonneg(op, "b_rs", b_rs);
  require_nonneg(op, "b_cs", b_cs);
  if (out.size() < checked_mul(m, p, op))
    value_error(op, ": out has ", out.size(), " elements, fewer than m*p = ", m, "*", p);
  const bool a_read = m > 0 && n > 0, b_read = n > 0 && p > 0;
  if (a_read) require_view_fits(op, "a", a, a_offset, m, n, a_rs, a_cs);
  if (b_read) require_view_fits(op, "b", b, b_offset, n, p, b_rs, b_cs);
  const Launch ctx = launch_on(op, {&a, &b, &out});
  dispatch<kernel_dtypes::matmul_strided>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    run_gemm<T>({op, a.data<T>() + (a_read ? a_offset : 0), b.data<T>() + (b_read ? b_offset : 0),
                 out.data<T>(), 1, m, n, p, operand(m, n, a_offset, a_rs, a_cs),
                 operand(n, p, b_offset, b_rs, b_cs)},
                ctx);
  });
}

void matmul_batched_strided(const Array& a, const Array& b, Array& out, const Shape& batch,
                            int64_t m, int64_t n, int64_t p, int64_t a_offset,
                            const Shape& a_strides, int64_t b_offset, const Shape& b_strides) {
  const char* op = "matmul_batched_strided";
  require_same_dtype(op, {&a, &b, &out});
  require_dtype(op, a.dtype(), kernel_dtypes::matmul_batched_strided);
  const std::size_t nb = batch.size();
  const int64_t count = checks::check_batched_strided(op, batch, m, n, p, a_offset, a_strides,
                                                      b_offset, b_strides, out.size());
  const Launch ctx = launch_on(op, {&a, &b, &out});
  if (count == 0 || m == 0 || p == 0) return;
  if (n > 0) {
    checks::require_batched_view_fits(op, "a", a_offset, a_strides, batch, m, n, a.size());
    checks::require_batched_view_fits(op, "b", b_offset, b_strides, batch, n, p, b.size());
  }
  // Each matrix's offset into a, then into b.
  std::vector<int64_t> offs(static_cast<std::size_t>(2 * count));
  checks::batch_offsets(batch, count, a_offset, a_strides, offs.data());
  checks::batch_offsets(batch, count, b_offset, b_strides, offs.data() + count);
  bool aligned = true;
  for (int64_t o : offs) aligned = aligned && o % 4 == 0;
  const int64_t ars = a_strides[nb], acs = a_strides[nb + 1];
  const int64_t brs = b_strides[nb], bcs = b_strides[nb + 1];
  Scratch dev(ctx.device, offs.size() * sizeof(int64_t));
  // From pageable memory the call returns once offs is staged, so it may go.
  LAMINA_CUDA_CHECK(cudaMemcpyAsync(dev.as<int64_t>(), offs.data(), offs.size() * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, ctx.stream),
                    op);
  dispatch<kernel_dtypes::matmul_batched_strided>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    GemmCall<T> g{op, a.data<T>(), b.data<T>(), out.data<T>(), count, m, n, p,
                  operand(m, n, aligned ? 0 : 1, ars, acs), operand(n, p, aligned ? 0 : 1, brs, bcs)};
    g.a_offs = dev.as<int64_t>();
    g.b_offs = dev.as<int64_t>() + count;
    run_gemm<T>(g, ctx);
  });
}

}  // namespace lamina_cuda
