// gemm_avx512.cc: the AVX-512 copies of the GEMM kernels (gemm_simd.h with
// 16-float zmm vectors, the tall and the wide tile of gemm.h), of the
// small-product GEMM (gemm_small.h) and of the small-M products
// (gemv_simd.h), compiled with -mavx512f/dq/bw/vl: fill_gemm puts them into
// the avx512 table (isa_table.h).
#include <immintrin.h>

#include <time.h>

#include <cmath>

#include "isa_table.h"

namespace lamina_cpu {

namespace avx512 {
#include "simd.h"
#include "gemm_simd.h"
template <class T>
inline T madd(T a, T b, T c) {
  return std::fma(a, b, c);  // one vfmadd under -mfma
}
#include "gemm_small.h"
#include "gemv_simd.h"

template <class T, Tile K>
IsaGemm<T> tile_kernels() {
  constexpr int MR = TileOf<T, K>::MR, NV = TileOf<T, K>::NR / Vec<T>::L;
  IsaGemm<T> g{&ukernel<T, MR, NV>, &ukernel_direct<T, MR, NV>, &gemm_small<T>, &gemv_dot<T>,
               &gemv_axpy<T>};
  add_edges<T, MR, NV>(g);
  g.edge_lanes = Vec<T>::L;
  return g;
}

// The tall and the wide tile; a C too narrow for both keeps the avx2 tile
// this table inherits.
void fill_gemm(IsaKernels& k) {
  k.f32.gemm[int(Tile::Avx512Tall)] = tile_kernels<float, Tile::Avx512Tall>();
  k.f64.gemm[int(Tile::Avx512Tall)] = tile_kernels<double, Tile::Avx512Tall>();
  k.f32.gemm[int(Tile::Avx512Wide)] = tile_kernels<float, Tile::Avx512Wide>();
  k.f64.gemm[int(Tile::Avx512Wide)] = tile_kernels<double, Tile::Avx512Wide>();
  k.fma_probe = [](double seconds) { return fma_probe(seconds); };
}
}  // namespace avx512

}  // namespace lamina_cpu
