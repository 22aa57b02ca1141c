// gemm_avx512.cc: the AVX-512 copies of the GEMM kernels (gemm_simd.h with
// 16-float zmm vectors, the tall and the wide tile of gemm.h), of the
// small-product GEMM (gemm_small.h) and of the small-M products
// (gemv_simd.h), compiled with -mavx512f/dq/bw/vl and called only when
// active_isa() is avx512.
#include <immintrin.h>

#include <time.h>

#include <cmath>

#include "gemm.h"

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
}  // namespace avx512

template <class T, Tile K>
IsaGemm<T> avx512_gemm() {
  constexpr int MR = TileOf<T, K>::MR, NV = TileOf<T, K>::NR / avx512::Vec<T>::L;
  return {&avx512::ukernel<T, MR, NV>, &avx512::ukernel_direct<T, MR, NV>, &avx512::gemm_small<T>,
          &avx512::gemv_dot<T>, &avx512::gemv_axpy<T>};
}
template IsaGemm<float> avx512_gemm<float, Tile::Avx512Tall>();
template IsaGemm<double> avx512_gemm<double, Tile::Avx512Tall>();
template IsaGemm<float> avx512_gemm<float, Tile::Avx512Wide>();
template IsaGemm<double> avx512_gemm<double, Tile::Avx512Wide>();

double fma_probe_avx512(double seconds) { return avx512::fma_probe(seconds); }

}  // namespace lamina_cpu
