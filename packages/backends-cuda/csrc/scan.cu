// scan.cu: cumsum_last(a, out, size), the running sum along each contiguous
// row of a compact (rows, size) operand: out[r, k] = a[r, 0] + ... + a[r, k].
// float32, float64 and int64 (wrapping), accumulated in the dtype itself.
//
// A warp scans a run of a row 128 elements at a time: each lane sums its 4
// consecutive elements, a butterfly of xor shuffles gives every lane the sum
// of the lanes before it and the warp's total, which carries into the next
// 128. Rows of up to kWarpRowMax elements, or enough rows to fill the GPU,
// get one warp each; otherwise rows are split into chunks: a first launch of
// the same kernel sums each chunk into a scratch buffer, the second scans
// each chunk starting from the sum of the chunks before it. Float sums thus
// differ from a left-to-right sum in rounding only.
#include <cstdint>
#include <type_traits>

#include "common.cuh"

namespace lamina_cuda {

namespace {

constexpr int kLanes = 32;
constexpr int kPerLane = 4;                          // consecutive elements per lane
constexpr int64_t kStep = kLanes * kPerLane;         // elements a warp scans per step
constexpr int64_t kWarpRowMax = 512;                 // rows this long are never split
constexpr int64_t kMinChunk = 8192;                  // a split row gives each warp at least this

template <class T>
__device__ __forceinline__ T shuffle_xor(T v, int mask) {
  if constexpr (std::is_same_v<T, int64_t>)  // int64_t is long; CUDA overloads long long
    return static_cast<int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(v), mask));
  else return __shfl_xor_sync(0xffffffffu, v, mask);
}

// *before = sum of v over the lanes below this one; returns the sum over the warp
// (the same value in every lane: each step adds the same two numbers).
template <class T>
__device__ __forceinline__ T warp_scan(T v, int lane, T* before) {
  T total = v, below = T(0);
#pragma unroll
  for (int m = 1; m < kLanes; m <<= 1) {
    const T other = shuffle_xor(total, m);
    if (lane & m) below = add_wrap(other, below);
    total = add_wrap(total, other);
  }
  *before = below;
  return total;
}

}  // namespace

// Task t = (row, chunk) is a[row, chunk * chunk_len : ...] (up to the row's end),
// taken by one warp. SCAN: writes the running sums of the task's run to out,
// starting from the sum of partials[row, :chunk] (partials null: from 0).
// Otherwise writes the run's total to partials[t]. The loops that shuffle are
// block-uniform (HIP-CPU builds shuffles on block barriers): a warp without a
// task, or past its run's end, takes part with zeros.
template <class T, bool SCAN>
__global__ void __launch_bounds__(kThreads)
    cumsum_last_kernel(const T* __restrict__ a, T* __restrict__ out, T* __restrict__ partials,
                       int64_t rows, int64_t size, int64_t chunks, int64_t chunk_len) {
  constexpr int kWarps = kThreads / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int64_t tasks = rows * chunks;
  for (int64_t t0 = blockIdx.x * static_cast<int64_t>(kWarps); t0 < tasks;
       t0 += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t t = t0 + threadIdx.x / kLanes;
    const bool active = t < tasks;
    const int64_t row = active ? t / chunks : 0, chunk = active ? t % chunks : 0;
    const int64_t begin = chunk * chunk_len;
    const int64_t end = !active ? begin : begin + chunk_len < size ? begin + chunk_len : size;
    const T* p = a + row * size;
    T carry = T(0);
    if (SCAN && partials != nullptr) {
      T s = T(0);
      for (int64_t c = lane; c < chunk; c += kLanes) s = add_wrap(s, partials[row * chunks + c]);
      T unused;
      carry = warp_scan(s, lane, &unused);
    }
    for (int64_t step = 0; step < chunk_len; step += kStep) {
      const int64_t first = begin + step + lane * kPerLane;
      T run[kPerLane];
      T sum = T(0);
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {
        if (first + j < end) sum = add_wrap(sum, p[first + j]);
        run[j] = sum;
      }
      T before;
      const T total = warp_scan(sum, lane, &before);
      if (SCAN) {
        const T base = add_wrap(carry, before);
#pragma unroll
        for (int j = 0; j < kPerLane; ++j)
          if (first + j < end) out[row * size + first + j] = add_wrap(base, run[j]);
      }
      carry = add_wrap(carry, total);
    }
    if (!SCAN && active && lane == 0) partials[t] = carry;
  }
}

void cumsum_last(const Array& a, Array& out, int64_t size) {
  const char* op = "cumsum_last";
  require_same_dtype(op, {&a, &out});
  require_dtype(op, a.dtype(), kernel_dtypes::cumsum_last);
  require_nonneg(op, "size", size);
  if (a.size() < out.size())
    value_error(op, ": input has ", a.size(), " elements, out has ", out.size());
  if (size == 0 ? out.size() != 0 : out.size() % size != 0)
    value_error(op, ": out has ", out.size(), " elements, not a multiple of size ", size);
  const Launch ctx = launch_on(op, {&a, &out});
  if (out.size() == 0) return;
  const int64_t rows = out.size() / size;
  const int64_t want = static_cast<int64_t>(sm_count(ctx.device)) * kLanes;  // warps to fill it
  int64_t chunks = size <= kWarpRowMax || rows >= want ? 1 : (want + rows - 1) / rows;
  const int64_t most = (size + kMinChunk - 1) / kMinChunk;
  if (chunks > most) chunks = most;
  if (chunks > kWarpRowMax) chunks = kWarpRowMax;
  const int64_t chunk_len = (size + chunks - 1) / chunks;
  const unsigned grid = grid_for((rows * chunks + 7) / 8, ctx.device, 1);
  dispatch<kernel_dtypes::cumsum_last>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (chunks == 1) {
      launch_kernel(&cumsum_last_kernel<T, true>, grid, kThreads, 0, ctx.stream, a.data<T>(),
                    out.data<T>(), nullptr, rows, size, 1, size);
      check_launch("cumsum_last_kernel", ctx.stream);
      return;
    }
    Scratch partials(ctx.device, static_cast<std::size_t>(rows * chunks) * sizeof(T));
    launch_kernel(&cumsum_last_kernel<T, false>, grid, kThreads, 0, ctx.stream, a.data<T>(),
                  out.data<T>(), partials.as<T>(), rows, size, chunks, chunk_len);
    check_launch("cumsum_last_kernel", ctx.stream);
    launch_kernel(&cumsum_last_kernel<T, true>, grid, kThreads, 0, ctx.stream, a.data<T>(),
                  out.data<T>(), partials.as<T>(), rows, size, chunks, chunk_len);
    check_launch("cumsum_last_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
