// gemm_bf16.cc: bfloat16 products summed in float32 on the CPU's own bf16
// dot-product instructions, compiled with -mavx512bf16 -mamx-tile -mamx-bf16
// (CMakeLists.txt) and put into the avx512 table only where the CPU has them
// (fill_bf16_gemm). Two kernels share one packing and one blocking:
//
//   amx          Intel AMX (Sapphire Rapids and later): TDPBF16PS multiplies a
//                16 x 32 tile of A by a 32 x 16 tile of B into a 16 x 16 float32
//                tile, 16 times the work of one float32 FMA instruction;
//   avx512_bf16  VDPBF16PS (Zen 4, Cooper Lake and later): 16 lanes, each adding
//                the products of one pair of k (twice an FMA's work on Zen 4
//                by its documented rate; on a Xeon with AMX it ran at about
//                0.6x the float32 GEMM).
//
// Both read A in 16-row panels of 32-k chunks (one AMX tile: 16 rows of 64
// bytes) and B in 16-column panels of k pairs (VNNI order: row kp holds
// B[2kp, j], B[2kp+1, j] for 16 columns j), zero-padded to whole 32 x 32 blocks
// of C, so the kernels never see an edge. The products of bf16 values are exact
// in float32; the sums round to nearest even in an order of their own (pairs of
// k at a time), and both instructions treat subnormal inputs and results as
// zero. The k blocks depend on K alone, so a C element sums the same terms in
// the same order for any thread count. The driver in matmul.cc splits C among
// threads.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "isa_table.h"

namespace lamina_cpu {
namespace avx512 {
namespace {

// k and n blocks: the packed B block (kc x nc, at most kBBlock bytes) stays
// in L2 while each pair of A panels (32 rows x kc) meets all its columns, so
// nc is as wide as kc lets it be. Up to KC = 2048 the whole of k is one block:
// the partial sums between k blocks cost more than the narrower B block
// (1.14x at 1536^3 and 1.05x at 2048^3 the earlier 1024 x 512 blocks; Xeon
// with AMX, family 6 model 207). One pair of A panels at a time (32 rows)
// ran as fast as 64 rows (the best of 64-256 before), and lets their
// products pack the next pair (APacker). (Packing all of A's rows up front,
// before any product, was 0.85-0.9x; packed pair by pair on the first pass
// over the columns and kept for the later ones, it pays: gemm_rows.)
constexpr int64_t KC = 2048, MP = 4096;
constexpr int64_t kBBlock = 1 << 20;
constexpr int64_t kAKeep = 32 << 20;  // bytes of packed A kept between column passes
constexpr int64_t kChunk = 32;  // k per AMX tile
constexpr int64_t kBlock = 32;  // rows and columns of C per kernel call

inline int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// An operand: element (r, c) at p[r * rs + c * cs], as raw bf16 bits.
struct View {
  const uint16_t* p;
  int64_t rs, cs;
  View at(int64_t r, int64_t c) const { return {p + r * rs + c * cs, rs, cs}; }
  uint16_t operator()(int64_t r, int64_t c) const { return p[r * rs + c * cs]; }
};

uint16_t* scratch(int slot, std::size_t n) {
  return static_cast<uint16_t*>(scratch_bytes(slot, n * 2));
}

// Transposes 16 rows of 16 32-bit words in place (r[i][j] <-> r[j][i]).
inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
  }
}

// 16 values of two rows of k as 16 pairs (32-bit words: the first row's value
// low); n < 16 values are real, the rest zeros.
inline __m512i pairs16(const uint16_t* r0, const uint16_t* r1, int64_t n) {
  if (n <= 0) return _mm512_setzero_si512();
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i v0 = r0 ? _mm256_maskz_loadu_epi16(m, r0) : zero;
  const __m256i v1 = r1 ? _mm256_maskz_loadu_epi16(m, r1) : zero;
  return _mm512_or_si512(_mm512_cvtepu16_epi32(v0), _mm512_slli_epi32(_mm512_cvtepu16_epi32(v1), 16));
}

// 32 values along k from p (n < 32 real, the rest zeros) as 16 pairs.
inline __m512i run32(const uint16_t* p, int64_t n) {
  if (n <= 0) return _mm512_setzero_si512();
  return _mm512_maskz_loadu_epi16(n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1, p);
}

// One tile of packed A: rows i0..i0+15 of A[0:mc, 0:kc], k in chunk c, as
// 16 rows of 32 values at d (rows from mc and k from kc on are zeros).
void pack_a_tile(View A, int64_t mc, int64_t kc, int64_t i0, int64_t c, uint16_t* d) {
  const int64_t k0 = c * kChunk;
  if (A.cs == 1) {
    const int64_t n = std::clamp<int64_t>(kc - k0, 0, kChunk);
    const __mmask32 m = n == kChunk ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
    for (int64_t i = 0; i < 16; ++i) {
      __m512i v = _mm512_setzero_si512();
      if (i0 + i < mc) v = _mm512_maskz_loadu_epi16(m, A.p + (i0 + i) * A.rs + k0);
      _mm512_storeu_si512(d + i * kChunk, v);
    }
    return;
  }
  if (A.rs == 1) {
    // A transpose: 16 rows of A are contiguous for each k. Pairs of k as
    // 32-bit words, 16 x 16 of them transposed.
    __m512i r[16];
    for (int p = 0; p < 16; ++p) {
      const int64_t k = k0 + 2 * p;
      const uint16_t* r0 = k < kc ? A.p + k * A.cs + i0 : nullptr;
      const uint16_t* r1 = k + 1 < kc ? A.p + (k + 1) * A.cs + i0 : nullptr;
      r[p] = pairs16(r0, r1, mc - i0);
    }
    transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + i * kChunk, r[i]);
    return;
  }
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t k = 0; k < kChunk; ++k)
      d[i * kChunk + k] = i0 + i < mc && k0 + k < kc ? A(i0 + i, k0 + k) : 0;
}

// A[0:mc, 0:kc] (mc <= 32) as two panels of 16 rows, each kcp / 32 tiles
// (dst[((panel * chunks + chunk) * 16 + row) * 32 + k % 32]), a tile at a
// time over `steps` calls of step(), so that the kernel calls on one pair of
// panels ready the next pair while their tile products run: they pack it, or
// where it was packed on an earlier pass over the columns, fetch it into L2.
// rest() does what is left.
class APacker {
 public:
  enum Mode { kPack, kFetch };
  APacker() = default;
  APacker(Mode mode, View A, int64_t mc, int64_t kc, int64_t kcp, uint16_t* dst, int64_t steps)
      : mode_(mode), A_(A), mc_(mc), kc_(kc), chunks_(kcp / kChunk), dst_(dst), tiles_(2 * chunks_),
        steps_(steps) {}
  void step() {
    if (done_ == tiles_) return;
    const int64_t due = tiles_ * ++calls_ / steps_;
    while (done_ < due) tile(done_++);
  }
  void rest() {
    while (done_ < tiles_) tile(done_++);
  }

 private:
  void tile(int64_t t) {
    uint16_t* d = dst_ + t * 16 * kChunk;
    if (mode_ == kPack) {
      pack_a_tile(A_, mc_, kc_, t / chunks_ * 16, t % chunks_, d);
      return;
    }
    for (int64_t row = 0; row < 16; ++row)
      _mm_prefetch(reinterpret_cast<const char*>(d + row * kChunk), _MM_HINT_T1);
  }
  Mode mode_ = kPack;
  View A_{};
  int64_t mc_ = 0, kc_ = 0, chunks_ = 0;
  uint16_t* dst_ = nullptr;
  int64_t tiles_ = 0, steps_ = 1, done_ = 0, calls_ = 0;
};

// B[0:kc, 0:nc] as panels of 16 columns, each kcp / 2 rows of 16 pairs
// (dst[(panel * kcp / 2 + kp) * 32 + 2 * (j % 16) + k % 2]); columns up to a
// multiple of 32 and k up to kcp are zeros.
void pack_b(View B, int64_t kc, int64_t kcp, int64_t nc, uint16_t* dst) {
  const int64_t cols = round_up(nc, kBlock), pairs = kcp / 2;
  auto row = [&](int64_t panel, int64_t kp) { return dst + (panel * pairs + kp) * 32; };
  if (B.cs == 1) {
    // Two rows of k, 16 columns widened to 32 bits and interleaved.
    for (int64_t kp = 0; kp < pairs; ++kp) {
      const int64_t k = 2 * kp;
      for (int64_t j0 = 0; j0 < cols; j0 += 16) {
        const int64_t w = std::clamp<int64_t>(nc - j0, 0, 16);
        const __mmask16 m = w == 16 ? __mmask16(0xffff) : __mmask16((1u << w) - 1);
        const __m256i zero = _mm256_setzero_si256();
        const __m256i r0 = k < kc ? _mm256_maskz_loadu_epi16(m, B.p + k * B.rs + j0) : zero;
        const __m256i r1 = k + 1 < kc ? _mm256_maskz_loadu_epi16(m, B.p + (k + 1) * B.rs + j0) : zero;
        const __m512i v = _mm512_or_si512(_mm512_cvtepu16_epi32(r0),
                                          _mm512_slli_epi32(_mm512_cvtepu16_epi32(r1), 16));
        _mm512_storeu_si512(row(j0 / 16, kp), v);
      }
    }
    return;
  }
  if (B.rs == 1) {
    // A transposed B (x @ W^T): column j's pairs are 32-bit words of W's row
    // j; 16 columns x 16 pairs transposed at a time.
    for (int64_t j0 = 0; j0 < cols; j0 += 16)
      for (int64_t kp0 = 0; kp0 < pairs; kp0 += 16) {
        __m512i r[16];
        for (int j = 0; j < 16; ++j)
          r[j] = j0 + j < nc ? run32(B.p + (j0 + j) * B.cs + 2 * kp0, kc - 2 * kp0)
                             : _mm512_setzero_si512();
        transpose16(r);
        for (int q = 0; q < 16; ++q) _mm512_storeu_si512(row(j0 / 16, kp0 + q), r[q]);
      }
    return;
  }
  for (int64_t kp = 0; kp < pairs; ++kp)
    for (int64_t j = 0; j < cols; ++j)
      for (int t = 0; t < 2; ++t) {
        const int64_t k = 2 * kp + t;
        row(j / 16, kp)[2 * (j % 16) + t] = j < nc && k < kc ? B(k, j) : 0;
      }
}

// Where a kernel's 32 x 32 block of sums goes: before the last k block, a
// 32 x 32 float32 block of partial sums C (row stride ldc; added to after the
// first k block); after it, the bfloat16 out (row stride ldo), rounded once to
// nearest even as every cast rounds, so no float32 pass over all of C follows
// the product.
struct Dest {
  float* C;  // null where the product has one k block
  int64_t ldc;
  ::lamina::BFloat16* out;  // null: leave the sums in C
  int64_t ldo;
  int64_t h, w;  // the part of the block inside out
  bool accumulate;
};

// 16 floats rounded to bfloat16 as lamina/narrow_floats.h's to_bfloat16 does
// (to nearest even; a NaN stays a quiet NaN), the rule of every cast.
inline __m256i round16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i top = _mm512_srli_epi32(u, 16);
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)),
                       _mm512_and_si512(top, _mm512_set1_epi32(1))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_cvtepi32_epi16(
      _mm512_mask_or_epi32(rounded, nan, top, _mm512_set1_epi32(0x40)));
}

// Stores the block's sums blk (32 x 32, the h x w corner real) at d.
void finish(const float* blk, const Dest& d) {
  for (int64_t i = 0; i < d.h; ++i)
    for (int64_t j0 = 0; j0 < d.w; j0 += 16) {
      const __mmask16 m = d.w - j0 >= 16 ? __mmask16(0xffff) : __mmask16((1u << (d.w - j0)) - 1);
      __m512 v = _mm512_load_ps(blk + i * kBlock + j0);
      if (d.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, d.C + i * d.ldc + j0));
      if (d.out) _mm256_mask_storeu_epi16(d.out + i * d.ldo + j0, m, round16(v));
      else _mm512_mask_storeu_ps(d.C + i * d.ldc + j0, m, v);
    }
}

// One 32 x 32 block of C (h x w of it in out) from the A panels a, a + ps and
// the B panels b, b + ps (ps: elements per packed panel), chunks chunks of k.
// A block bound for out leaves its sums in a buffer, and the next block's
// chunk loop rounds them into out, a row per chunk, while the tile products
// run (flush() ends the last): reading the sums straight after the tile
// stores stalled on them, and rounding after the loop cost 1.03-1.1x on
// 1024^3-2048^3 (Xeon, AMX). Under kDeferChunks chunks there is too little
// product to hide the rounding in, and it follows the tile stores at once,
// from a block on the stack: 1.1-1.6x the deferred rounding in five of six
// runs at k = 128 (the char-GPT's width), 0.92x in the sixth.
class Amx {
 public:
  Amx() {
    Config c;
    for (int t = 0; t < 8; ++t) {
      c.colsb[t] = 64;
      c.rows[t] = 16;
    }
    _tile_loadconfig(&c);
  }
  ~Amx() { _tile_release(); }  // the OS need not save 8 KiB of tiles on a switch
  Amx(const Amx&) = delete;
  Amx& operator=(const Amx&) = delete;

  void operator()(int64_t chunks, const uint16_t* a, const uint16_t* b, int64_t ps,
                  const Dest& d, APacker& next) {
    const uint16_t *a1 = a + ps, *b1 = b + ps;
    if (d.accumulate) {  // on from the earlier k blocks' partial sums
      _tile_loadd(0, d.C, d.ldc * 4);
      _tile_loadd(1, d.C + 16, d.ldc * 4);
      _tile_loadd(2, d.C + 16 * d.ldc, d.ldc * 4);
      _tile_loadd(3, d.C + 16 * d.ldc + 16, d.ldc * 4);
    } else {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
    }
    const int64_t step = kChunk * 16;  // elements per chunk of a panel
    const int64_t rows = pending_.h;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      // The four loads first, then the four products: 1.02-1.07x the
      // interleaved order on the kernel alone.
      _tile_loadd(4, a + ch * step, 64);
      _tile_loadd(6, b + ch * step, 64);
      _tile_loadd(7, b1 + ch * step, 64);
      _tile_loadd(5, a1 + ch * step, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
      if (ch < rows) round_row(sums_[1 - cur_], pending_, ch);
      next.step();
    }
    for (int64_t i = chunks; i < rows; ++i) round_row(sums_[1 - cur_], pending_, i);
    if (d.out && chunks < kDeferChunks) {
      alignas(64) float blk[kBlock * kBlock];
      _tile_stored(0, blk, kBlock * 4);
      _tile_stored(1, blk + 16, kBlock * 4);
      _tile_stored(2, blk + 16 * kBlock, kBlock * 4);
      _tile_stored(3, blk + 16 * kBlock + 16, kBlock * 4);
      for (int64_t i = 0; i < d.h; ++i) round_row(blk, d, i);
      pending_ = Dest{};
      return;
    }
    float* c = d.out ? sums_[cur_] : d.C;
    const int64_t ld = d.out ? kBlock : d.ldc;
    _tile_stored(0, c, ld * 4);
    _tile_stored(1, c + 16, ld * 4);
    _tile_stored(2, c + 16 * ld, ld * 4);
    _tile_stored(3, c + 16 * ld + 16, ld * 4);
    pending_ = d.out ? d : Dest{};
    if (d.out) cur_ = 1 - cur_;
  }

  // Rounds the last block's sums into out.
  void flush() {
    for (int64_t i = 0; i < pending_.h; ++i) round_row(sums_[1 - cur_], pending_, i);
    pending_ = Dest{};
  }

 private:
  // 8 tiles of 16 rows x 64 bytes: C in 0-3, A in 4-5, B in 6-7.
  struct alignas(64) Config {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  };

  static constexpr int64_t kDeferChunks = 8;

  // Row i of a block's sums (32 x 32 at sums) into its out, rounded.
  static void round_row(const float* sums, const Dest& d, int64_t i) {
    const float* r = sums + i * kBlock;
    BFloat16* o = d.out + i * d.ldo;
    for (int64_t j0 = 0; j0 < d.w; j0 += 16) {
      const int64_t n = d.w - j0;
      const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
      // VCVTNEPS2BF16 rounds as round16 does but for subnormals, which it
      // flushes; TDPBF16PS flushes them already, so no tile holds one.
      _mm256_mask_storeu_epi16(o + j0, m, (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(r + j0)));
    }
  }

  alignas(64) float sums_[2][kBlock * kBlock];  // this block's, the pending one's
  int cur_ = 0;
  Dest pending_{};  // h == 0: none
};

struct DotBf16 {
  void flush() const {}
  // 8 rows x 32 columns at a time: 16 accumulators, 2 B vectors and 8
  // broadcast A pairs per k pair.
  void operator()(int64_t chunks, const uint16_t* a, const uint16_t* b, int64_t ps,
                  const Dest& d, APacker&) const {  // the driver packs the next A at the end
    const uint16_t* b1 = b + ps;
    const int64_t pairs = chunks * 16;
    alignas(64) float blk[kBlock * kBlock];
    for (int64_t r0 = 0; r0 < d.h; r0 += 8) {
      const uint16_t* ap = a + (r0 / 16) * ps + (r0 % 16) * kChunk;
      __m512 acc[8][2];
      for (int i = 0; i < 8; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
      for (int64_t kp = 0; kp < pairs; ++kp) {
        const __m512bh b0v = (__m512bh)_mm512_loadu_si512(b + kp * 32);
        const __m512bh b1v = (__m512bh)_mm512_loadu_si512(b1 + kp * 32);
        // pair kp of row i: chunk kp / 16, word kp % 16 of the row's 64 bytes
        const uint16_t* ak = ap + (kp / 16) * kChunk * 16 + (kp % 16) * 2;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          int32_t pair;
          std::memcpy(&pair, ak + i * kChunk, 4);
          const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
          acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0v);
          acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1v);
        }
      }
      for (int i = 0; i < 8; ++i) {
        _mm512_store_ps(blk + (r0 + i) * kBlock, acc[i][0]);
        _mm512_store_ps(blk + (r0 + i) * kBlock + 16, acc[i][1]);
      }
    }
    finish(blk, d);
  }
};

// out[0:M, 0:N] (row stride ldo) = A @ B rounded to bfloat16, on the calling
// thread, for at most MP rows.
template <class Kernel>
void gemm_rows(View A, View B, BFloat16* out, int64_t M, int64_t K, int64_t N, int64_t ldo) {
  // Even k blocks (784 runs as 2 x 392, not 512 + 272), each a whole number of chunks.
  const int64_t kblocks = (K + KC - 1) / KC;
  const int64_t kc_max = round_up((K + kblocks - 1) / kblocks, kChunk);
  // Even passes over the columns, as the k blocks are (768 runs as 3 x 256,
  // not 320 + 320 + 128).
  const int64_t nc_cap = std::max(8 * kBlock, kBBlock / (2 * kc_max) / kBlock * kBlock);
  const int64_t passes = (N + nc_cap - 1) / nc_cap;
  const int64_t nc_max = round_up((N + passes - 1) / passes, kBlock);
  uint16_t* bpack = scratch(0, static_cast<std::size_t>(kc_max * nc_max));
  // The packed A: where there is more than one pass over the columns and it
  // fits kAKeep, all of it, packed on the first pass and read on the later
  // ones (1.05-1.1x at 1536^3 and 2048^3, where A was packed once per pass);
  // otherwise two pairs of panels, the one in use and the next.
  const int64_t m_pad = round_up(M, kBlock);
  const bool keep = N > nc_max && kblocks * m_pad * kc_max * 2 <= kAKeep;
  uint16_t* apacks =
      scratch(1, static_cast<std::size_t>(keep ? kblocks * m_pad * kc_max : 2 * kBlock * kc_max));
  // Partial sums between k blocks, block by block (each 32 x 32 block 4 KiB in
  // a row): tile loads and stores then read whole lines, where C's own rows
  // (8 KiB apart at 2048 columns) fell on a few cache sets; 1.14-1.17x at
  // 1536^3 and 2048^3.
  const int64_t row_blocks = (nc_max + kBlock - 1) / kBlock, block = kBlock * kBlock;
  float* part = kblocks > 1 ? static_cast<float*>(scratch_bytes(
                                  2, static_cast<std::size_t>(round_up(M, kBlock) * nc_max) * 4))
                            : nullptr;
  Kernel kernel;
  for (int64_t jc = 0; jc < N; jc += nc_max) {
    const int64_t nc = std::min(nc_max, N - jc);
    for (int64_t pc = 0; pc < K; pc += kc_max) {
      const int64_t kc = std::min(kc_max, K - pc), kcp = round_up(kc, kChunk);
      const int64_t ps = 16 * kcp;  // elements per 16-row (16-column) panel
      const int64_t steps = (nc + kBlock - 1) / kBlock * (kcp / kChunk);  // kernel chunks per pair
      const bool last = pc + kc == K;
      pack_b(B.at(pc, jc), kc, kcp, nc, bpack);
      // The pair of panels of rows ic (which: the pair's slot of two).
      uint16_t* kept = apacks + pc / kc_max * m_pad * kc_max;
      auto pair = [&](int64_t ic, int64_t which) {
        return keep ? kept + ic * kc_max : apacks + which * kBlock * kc_max;
      };
      const APacker::Mode mode = keep && jc > 0 ? APacker::kFetch : APacker::kPack;
      if (mode == APacker::kPack)
        APacker(mode, A.at(0, pc), std::min(kBlock, M), kc, kcp, pair(0, 0), 1).rest();
      // A pair of A panels stays in L1 while the B panels stream past it
      // from L2: 1.15-1.3x the other order on 2048^3 (Xeon, AMX).
      for (int64_t ic = 0, which = 0; ic < M; ic += kBlock, which = 1 - which) {
        const uint16_t* apack = pair(ic, which);
        APacker next;
        if (ic + kBlock < M)
          next = APacker(mode, A.at(ic + kBlock, pc), std::min(kBlock, M - ic - kBlock), kc, kcp,
                         pair(ic + kBlock, 1 - which), steps);
        for (int64_t jr = 0; jr < nc; jr += kBlock) {
          float* c = part ? part + (ic / kBlock * row_blocks + jr / kBlock) * block : nullptr;
          const Dest d{c, kBlock, last ? out + ic * ldo + jc + jr : nullptr, ldo,
                       std::min(kBlock, M - ic), std::min(kBlock, nc - jr), pc > 0};
          kernel(kcp / kChunk, apack, bpack + jr * kcp, ps, d, next);
        }
        next.rest();
      }
    }
  }
  kernel.flush();
}

// out = A @ B (Bf16Gemm, isa_table.h), MP rows at a time, so that the partial
// sums of one (MP x nc floats, at most 8 MiB: k blocks > 1 means nc <= 512)
// bound the scratch.
template <class Kernel>
void gemm(const BFloat16* a, int64_t ars, int64_t acs, const BFloat16* b, int64_t brs,
          int64_t bcs, BFloat16* out, int64_t M, int64_t K, int64_t N, int64_t ldo) {
  const View A{reinterpret_cast<const uint16_t*>(a), ars, acs};
  const View B{reinterpret_cast<const uint16_t*>(b), brs, bcs};
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(out + i * ldo, out + i * ldo + N, BFloat16{0});
    return;
  }
  for (int64_t i0 = 0; i0 < M; i0 += MP)
    gemm_rows<Kernel>(A.at(i0, 0), B, out + i0 * ldo, std::min(MP, M - i0), K, N, ldo);
}

// Linux hands out AMX's 8 KiB of tile state only to a process that asks.
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
  return false;
#endif
}

}  // namespace

void fill_bf16_gemm(IsaKernels& k) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) k.bf16_gemm[int(Bf16Path::Avx512Bf16)] = &gemm<DotBf16>;
  static const bool amx = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
                          amx_permitted();
  if (amx) k.bf16_gemm[int(Bf16Path::Amx)] = &gemm<Amx>;
}

}  // namespace avx512
}  // namespace lamina_cpu
