// gemm_avx2.cc: the AVX2/FMA copy of the GEMM kernels (gemm_simd.h with
// 8-float ymm vectors, tile TileOf<T, Tile::Avx2>), of the small-product
// GEMM (gemm_small.h) and of the small-M products (gemv_simd.h), compiled
// with -mavx2 -mfma: fill_gemm puts them into the avx2 table (isa_table.h).
#include <immintrin.h>

#include <time.h>

#include <cmath>

#include "isa_table.h"

namespace lamina_cpu {

namespace avx2 {
#include "simd.h"
#include "gemm_simd.h"
template <class T>
inline T madd(T a, T b, T c) {
  return std::fma(a, b, c);  // one vfmadd under -mfma
}
#include "gemm_small.h"
#include "gemv_simd.h"

template <class T>
IsaGemm<T> tile_kernels() {
  constexpr int MR = TileOf<T, Tile::Avx2>::MR, NV = TileOf<T, Tile::Avx2>::NR / Vec<T>::L;
  IsaGemm<T> g{&ukernel<T, MR, NV>, &ukernel_direct<T, MR, NV>, &gemm_small<T>, &gemv_dot<T>,
               &gemv_axpy<T>};
  add_edges<T, MR, NV>(g);
  g.edge_lanes = Vec<T>::L;
  return g;
}

void fill_gemm(IsaKernels& k) {
  k.f32.gemm[int(Tile::Avx2)] = tile_kernels<float>();
  k.f64.gemm[int(Tile::Avx2)] = tile_kernels<double>();
  k.fma_probe = [](double seconds) { return fma_probe(seconds); };
}
}  // namespace avx2

}  // namespace lamina_cpu
