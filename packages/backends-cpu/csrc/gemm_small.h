// gemm_small.h: the unpacked GEMM for tiny products, compiled once per
// instruction set like ewise_loops.h (matmul.cc includes it in namespace
// lamina_cpu::base, gemm_avx2.cc in lamina_cpu::avx2, each after defining
// madd(a, b, c) = a * b + c for its ISA). No include guard on purpose.
//
// C (M x N) = A (M x K) @ B (K x N), all row-major. Four rows of C share each
// load of a B row; the inner loop over N vectorises. Packing would cost as
// much as the product at these sizes.

template <class T>
void gemm_small(const T* A, const T* B, T* C, int64_t M, int64_t K, int64_t N) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) {
    T* __restrict__ c0 = C + i * N;
    T* __restrict__ c1 = c0 + N;
    T* __restrict__ c2 = c1 + N;
    T* __restrict__ c3 = c2 + N;
    for (int64_t j = 0; j < N; ++j) c0[j] = c1[j] = c2[j] = c3[j] = T(0);
    for (int64_t k = 0; k < K; ++k) {
      const T a0 = A[i * K + k], a1 = A[(i + 1) * K + k];
      const T a2 = A[(i + 2) * K + k], a3 = A[(i + 3) * K + k];
      const T* __restrict__ b = B + k * N;
      for (int64_t j = 0; j < N; ++j) {
        const T bj = b[j];
        c0[j] = madd(a0, bj, c0[j]);
        c1[j] = madd(a1, bj, c1[j]);
        c2[j] = madd(a2, bj, c2[j]);
        c3[j] = madd(a3, bj, c3[j]);
      }
    }
  }
  for (; i < M; ++i) {
    T* __restrict__ c = C + i * N;
    for (int64_t j = 0; j < N; ++j) c[j] = T(0);
    for (int64_t k = 0; k < K; ++k) {
      const T a = A[i * K + k];
      const T* __restrict__ b = B + k * N;
      for (int64_t j = 0; j < N; ++j) c[j] = madd(a, b[j], c[j]);
    }
  }
}
