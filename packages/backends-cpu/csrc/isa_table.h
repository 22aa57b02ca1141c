// isa_table.h: the one instruction-set dispatch mechanism. Every kernel body
// that exists once per instruction set (the elementwise loops, the float32
// exp/tanh/erf, the row loops of the reductions, the GEMM micro-kernels, the
// FMA probe) is reached through a table of function pointers, one table per
// ISA. A table starts as a copy of the one below it and each ISA's
// translation units overwrite the entries they compile (fill_ewise,
// fill_reduce, fill_gemm in namespaces base, avx2 and avx512); isa.cc builds
// the tables once, and isa_kernels() returns the active one. A kernel reads
// its pointers once per call (or per row block), never per element, so the
// hot loops are the same machine code as direct calls.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ewise_ops.h"
#include "gemm.h"
#include "isa.h"

namespace lamina_cpu {

// Elementwise loops; O, the element type of out, is T except for a
// comparison writing bool.
template <class T, class O = T> using BinaryLoop = void (*)(const T*, const T*, O*, int64_t);
template <class T, class O = T> using ScalarLoop = void (*)(const T*, T, O*, int64_t);
template <class T> using UnaryLoop = void (*)(const T*, T*, int64_t);

// The loops of every binary op writing O, by kOpId (ewise_ops.h).
template <class T, class O>
struct BinaryLoops {
  BinaryLoop<T, O> ewise[ops::kBinaryOps] = {};
  ScalarLoop<T, O> scalar[ops::kBinaryOps] = {};
};

// One ISA's kernels for element type T (an entry a dtype lacks stays null).
template <class T>
struct TypeKernels {
  BinaryLoops<T, T> binary;
  BinaryLoops<T, bool> to_bool;  // comparisons writing a bool out
  UnaryLoop<T> unary[ops::kUnaryOps] = {};
  // out[i] = c[i] ? a[i] : b[i], the bool-condition ewise_where (ewise_loops.h)
  void (*where_bool)(const bool* c, const T* a, const T* b, T* o, int64_t n) = nullptr;
  // out[i] = x[i] <= 0 ? 0 : g[i] (ewise_loops.h)
  void (*relu_backward)(const T* x, const T* g, T* o, int64_t n) = nullptr;
  // rows.h and reduce_columns.h (reduce.cc)
  T (*row_max)(const T*, int64_t) = nullptr;
  T (*row_min)(const T*, int64_t) = nullptr;
  void (*sum_columns)(const T* src, T* dst, int64_t rows, int64_t ld, int64_t w) = nullptr;
  void (*softmax_row)(const T* x, T* y, int64_t n) = nullptr;
  void (*layer_norm_row)(const T* x, const T* w, const T* b, T* y, int64_t n, double eps,
                         T* mean, T* rstd) = nullptr;
  void (*layer_norm_backward_row)(const T* g, const T* x, const T* w, T mu, T inv, T* dx,
                                  T* dw, T* db, int64_t n) = nullptr;
  // GELU and its backward in one pass (exp_simd.h), [0] the erf form, [1] the
  // tanh form; float32 only, null below AVX2 (gelu.cc then runs its scalar loop)
  void (*gelu[2])(const T* x, T* out, int64_t n) = {};
  void (*gelu_backward[2])(const T* x, const T* g, T* out, int64_t n) = {};
  // The GEMM kernels of each register tile this ISA runs (gemm.h), by Tile.
  IsaGemm<T> gemm[kTiles] = {};
};

// The float16/bfloat16 conversion loops behind ewise_cast and every native
// 16-bit kernel (narrow.cc; narrow_avx2.cc: F16C and 8-lane AVX2).
struct NarrowLoops {
  void (*half_to_float)(const Half*, float*, int64_t) = nullptr;
  void (*bfloat16_to_float)(const BFloat16*, float*, int64_t) = nullptr;
  void (*float_to_half)(const float*, Half*, int64_t) = nullptr;
  void (*float_to_bfloat16)(const float*, BFloat16*, int64_t) = nullptr;
};

// bfloat16 products summed in float32 on the CPU's bf16 dot-product
// instructions (gemm_bf16.cc), on the calling thread: out[0:M, 0:N] (row
// stride ldo) = A @ B rounded once, with A[i, k] = A[i * ars + k * acs] and
// B[k, j] = B[k * brs + j * bcs]. Float32 names the path without one:
// packing widens the operands for the float32 kernels (matmul.cc).
enum class Bf16Path : int { Float32 = 0, Avx512Bf16 = 1, Amx = 2 };
constexpr int kBf16Paths = 3;
using Bf16Gemm = void (*)(const BFloat16* A, int64_t ars, int64_t acs, const BFloat16* B,
                          int64_t brs, int64_t bcs, BFloat16* out, int64_t M, int64_t K, int64_t N,
                          int64_t ldo);

struct IsaKernels {
  NarrowLoops narrow;
  Bf16Gemm bf16_gemm[kBf16Paths] = {};  // by Bf16Path; null where the CPU lacks it
  TypeKernels<float> f32;
  TypeKernels<double> f64;
  TypeKernels<int64_t> i64;
  TypeKernels<bool> b8;
  double (*fma_probe)(double seconds) = nullptr;  // GFLOP/s of one thread; null: no FMA

  template <class T>
  TypeKernels<T>& of() {
    if constexpr (std::is_same_v<T, float>) return f32;
    else if constexpr (std::is_same_v<T, double>) return f64;
    else if constexpr (std::is_same_v<T, int64_t>) return i64;
    else return b8;
  }
  template <class T>
  const TypeKernels<T>& of() const {
    return const_cast<IsaKernels*>(this)->of<T>();
  }
};

// The table of the active ISA (active_isa()).
const IsaKernels& isa_kernels();

// What each ISA's translation units put into its table.
#define LAMINA_DECLARE_FILLS           \
  void fill_ewise(IsaKernels& k);      \
  void fill_reduce(IsaKernels& k);     \
  void fill_gemm(IsaKernels& k);
namespace base { LAMINA_DECLARE_FILLS }    // ewise.cc, reduce.cc, matmul.cc
namespace avx2 { LAMINA_DECLARE_FILLS }    // ewise_avx2.cc, reduce_avx2.cc, gemm_avx2.cc
namespace avx512 { LAMINA_DECLARE_FILLS }  // and their _avx512 twins
#undef LAMINA_DECLARE_FILLS
namespace base { void fill_narrow(IsaKernels& k); }  // narrow.cc
namespace avx2 { void fill_narrow(IsaKernels& k); }  // narrow_avx2.cc (AVX-512 keeps it)
namespace avx512 { void fill_bf16_gemm(IsaKernels& k); }  // gemm_bf16.cc

}  // namespace lamina_cpu
