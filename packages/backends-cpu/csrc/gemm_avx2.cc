// gemm_avx2.cc: the AVX2/FMA copy of the GEMM kernels (gemm_simd.h with
// 8-float ymm vectors, tile TileOf<T, Tile::Avx2>), of the small-product
// GEMM (gemm_small.h) and of the small-M products (gemv_simd.h), compiled
// with -mavx2 -mfma and called only when active_isa() >= avx2.
#include <immintrin.h>

#include <time.h>

#include <cmath>

#include "gemm.h"

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
}  // namespace avx2

template <class T>
IsaGemm<T> avx2_gemm() {
  constexpr int MR = TileOf<T, Tile::Avx2>::MR, NV = TileOf<T, Tile::Avx2>::NR / avx2::Vec<T>::L;
  return {&avx2::ukernel<T, MR, NV>, &avx2::ukernel_direct<T, MR, NV>, &avx2::gemm_small<T>,
          &avx2::gemv_dot<T>, &avx2::gemv_axpy<T>};
}
template IsaGemm<float> avx2_gemm<float>();
template IsaGemm<double> avx2_gemm<double>();

double fma_probe_avx2(double seconds) { return avx2::fma_probe(seconds); }

}  // namespace lamina_cpu
