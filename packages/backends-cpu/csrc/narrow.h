// narrow.h: the float16/bfloat16 conversion loops behind ewise_cast (narrow.cc),
// and the block loop that runs a float32 loop on 16-bit operands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common.h"

namespace lamina_cpu {

// o[i] = a[i] converted, for i < n: exactly to float32, or rounded to nearest
// even from it (lamina/narrow_floats.h).
void to_float32(const Half* a, float* o, int64_t n);
void to_float32(const BFloat16* a, float* o, int64_t n);
void from_float32(const float* a, Half* o, int64_t n);
void from_float32(const float* a, BFloat16* o, int64_t n);

// A 16-bit float op (ewise.cc, gelu.cc) runs the op's float32 loop on blocks
// of widened values: each block is converted, computed and rounded while it
// sits in L1, so the op makes one pass over memory, and its result is the
// float32 op's rounded once to nearest even (PyTorch's rule on its CPU), bit
// for bit.
constexpr int64_t kNarrowBlock = 512;

// x[0], x[s], ... x[(n - 1) * s] as float32 into f.
template <class N>
void widen(const N* x, int64_t s, float* f, int64_t n) {
  if (s == 1) return to_float32(x, f, n);
  for (int64_t i = 0; i < n; ++i) f[i] = ::lamina::to_float(x[i * s]);
}

// o[0:n] in blocks: operands(i, len, fa, fb) widens the block's operands,
// loop(fa, fb, out, len) computes it into float32 (rounded into o) or, for a
// comparison's bool o, straight into o.
template <class O, class Operands, class Loop>
void narrow_blocks(O* o, int64_t n, Operands&& operands, Loop&& loop) {
  // the three blocks 64 bytes off a 4 KiB stride from each other: loads of fa[i]
  // and fb[i] must not look like they alias the store to fo[i] (4K aliasing: in
  // a profile of a float16 mul the float32 loop took 29% of the time, 10% after)
  constexpr int64_t kStride = kNarrowBlock + 16;
  alignas(64) float blocks[3 * kStride];
  float *fa = blocks, *fb = blocks + kStride, *fo = blocks + 2 * kStride + 16;
  for (int64_t i = 0; i < n; i += kNarrowBlock) {
    const int64_t len = std::min(kNarrowBlock, n - i);
    operands(i, len, fa, fb);
    if constexpr (std::is_same_v<O, bool>) {
      loop(fa, fb, o + i, len);
    } else {
      loop(fa, fb, fo, len);
      from_float32(fo, o + i, len);
    }
  }
}

}  // namespace lamina_cpu
