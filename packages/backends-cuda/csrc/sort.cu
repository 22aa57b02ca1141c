// sort.cu: sort_last and multinomial_last (interface v2.1), over the contiguous
// rows of a compact (rows, size) operand.
//
// sort_last(a, values_out, indices_out, size, k, descending) writes the first
// k of each row's stable sort (PyTorch's order: NaN largest, -0.0 == 0.0,
// equal values keep the first index first in either direction) into values_out
// and int64 indices_out, both (rows, k). Each value becomes a uint64 key whose
// integer order is that order (complemented for descending), paired with its
// index: (key, index) pairs are all distinct, so any sort of them is the stable
// sort. One block per row runs a bitonic network over the pairs padded to a
// power of two with sentinels, in shared memory when the row fits (kTile
// pairs), else in global scratch; topk sorts the row and keeps k.
//
// multinomial_last(probs, uniforms, out, size, samples): one thread per row
// writes the row's running sum in double, left to right (the numpy reference's
// order, so the same host uniforms give the same draws), then one thread per
// draw searches it for uniforms[r, j] * total.
// Tested by tests/test_sort_kernels.py (emulated build) against numpy.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common.cuh"

namespace lamina_cuda {

namespace {

constexpr int64_t kTile = 2048;  // pairs of a row sorted in shared memory (32 KiB)

struct Item {
  uint64_t key;
  int64_t index;
};

__device__ __forceinline__ bool item_less(const Item& x, const Item& y) {
  return x.key < y.key || (x.key == y.key && x.index < y.index);
}

// A uint64 whose order is the ascending sort order of the values.
template <class T>
__device__ __forceinline__ uint64_t sort_key(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63);
  } else {
    using U = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
    constexpr U sign = U{1} << (sizeof(U) * 8 - 1);
    if (v != v) return ~uint64_t{0};  // every NaN above +inf
    if (v == T(0)) v = T(0);          // -0.0 ties with 0.0
    U bits;
    memcpy(&bits, &v, sizeof bits);
    return static_cast<uint64_t>((bits & sign) ? U(~bits) : U(bits | sign));
  }
}

// Sorts s[0:n) (n a power of two) with the block's threads.
__device__ void bitonic_sort(Item* s, int64_t n) {
  for (int64_t len = 2; len <= n; len <<= 1) {
    for (int64_t stride = len >> 1; stride > 0; stride >>= 1) {
      for (int64_t i = threadIdx.x; i < n / 2; i += blockDim.x) {
        const int64_t lo = 2 * stride * (i / stride) + i % stride, hi = lo + stride;
        const bool up = (lo & len) == 0;
        const Item x = s[lo], y = s[hi];
        if (item_less(y, x) == up) {
          s[lo] = y;
          s[hi] = x;
        }
      }
      __syncthreads();
    }
  }
}

// Block b sorts rows b, b + gridDim.x, ...; scratch holds n_pad pairs per block
// (unused when SHARED). Every loop bound is block-uniform (barriers inside).
template <class T, bool SHARED>
__global__ void sort_last_kernel(const T* __restrict__ a, T* __restrict__ values,
                                 int64_t* __restrict__ indices, Item* __restrict__ scratch,
                                 int64_t rows, int64_t size, int64_t n_pad, int64_t k,
                                 bool descending) {
  __shared__ Item tile[SHARED ? kTile : 1];
  Item* s = SHARED ? tile : scratch + blockIdx.x * n_pad;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = a + row * size;
    for (int64_t i = threadIdx.x; i < n_pad; i += blockDim.x) {
      const uint64_t key = i < size ? sort_key(x[i]) : 0;
      s[i] = i < size ? Item{descending ? ~key : key, i} : Item{~uint64_t{0}, INT64_MAX};
    }
    __syncthreads();
    bitonic_sort(s, n_pad);
    for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
      const int64_t at = s[j].index;
      indices[row * k + j] = at;
      values[row * k + j] = x[at];
    }
    __syncthreads();  // the next row overwrites s
  }
}

template <class T>
__global__ void running_sum_kernel(const T* __restrict__ probs, double* __restrict__ cdf,
                                   int64_t rows, int64_t size) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double total = 0.0;
    for (int64_t c = 0; c < size; ++c) {
      total += static_cast<double>(probs[r * size + c]);
      cdf[r * size + c] = total;
    }
  }
}

// The first index of c[0:n) whose value is > t (strict) or >= t (!strict).
__device__ __forceinline__ int64_t search(const double* c, int64_t n, double t, bool strict) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (strict ? !(c[mid] > t) : c[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

__global__ void multinomial_search_kernel(const double* __restrict__ cdf,
                                          const double* __restrict__ uniforms,
                                          int64_t* __restrict__ out, int64_t rows, int64_t size,
                                          int64_t samples) {
  const int64_t total_draws = rows * samples;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total_draws;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double* c = cdf + (t / samples) * size;
    const double total = c[size - 1];
    // A target rounded up to the total takes the last category with weight:
    // the first whose running sum reaches the total.
    const int64_t picked = search(c, size, uniforms[t] * total, true);
    const int64_t last = search(c, size, total, false);
    out[t] = picked < last ? picked : last;
  }
}

// Rows of outputs of out_size elements, per_row to a row, checked against an
// input of in_size elements holding rows x size.
int64_t output_rows(const char* op, int64_t out_size, int64_t per_row, int64_t size,
                    int64_t in_size) {
  require_nonneg(op, "size", size);
  if (per_row == 0) return 0;
  if (out_size % per_row)
    value_error(op, ": out has ", out_size, " elements, not a whole number of rows of ", per_row);
  const int64_t rows = out_size / per_row;
  if (in_size < checked_mul(rows, size, op))
    value_error(op, ": input has ", in_size, " elements, expected ", rows, "x", size);
  return rows;
}

}  // namespace

void sort_last(const Array& a, Array& values_out, Array& indices_out, int64_t size, int64_t k,
               bool descending) {
  const char* op = "sort_last";
  if (values_out.dtype() != a.dtype() || indices_out.dtype() != DType::Int64)
    throw TypeError(cat(op, ": expected values_out of the input's dtype ", a.dtype_str(),
                        " and int64 indices_out, got ", values_out.dtype_str(), " and ",
                        indices_out.dtype_str()));
  if (k < 0 || k > size) value_error(op, ": k=", k, " is out of range for rows of size ", size);
  if (values_out.size() != indices_out.size())
    value_error(op, ": values_out has ", values_out.size(), " elements, indices_out ",
                indices_out.size(), "; both need rows x k");
  const int64_t rows = output_rows(op, values_out.size(), k, size, a.size());
  const Launch ctx = launch_on(op, {&a, &values_out, &indices_out});
  if (rows == 0) return;
  int64_t n_pad = 1;
  while (n_pad < size) n_pad <<= 1;
  const int threads = n_pad >= 2 * kThreads ? kThreads : n_pad >= 64 ? int(n_pad / 2) : 32;
  const int64_t most_blocks = static_cast<int64_t>(sm_count(ctx.device)) * 8;
  const int64_t blocks = rows < most_blocks ? rows : most_blocks;  // rows of a block: grid-stride
  dispatch<kernel_dtypes::sort_last>(op, a.dtype(), [&](auto t) {
    using T = decltype(t);
    if (n_pad <= kTile) {
      launch_kernel(&sort_last_kernel<T, true>, unsigned(blocks), threads, 0, ctx.stream,
                    a.data<T>(), values_out.data<T>(), indices_out.data<int64_t>(), nullptr,
                    rows, size, n_pad, k, descending);
      check_launch("sort_last_kernel", ctx.stream);
      return;
    }
    const std::size_t bytes = static_cast<std::size_t>(checked_mul(
        checked_mul(blocks, n_pad, op), static_cast<int64_t>(sizeof(Item)), op));
    Scratch scratch(ctx.device, bytes);
    launch_kernel(&sort_last_kernel<T, false>, unsigned(blocks), threads, 0, ctx.stream,
                  a.data<T>(), values_out.data<T>(), indices_out.data<int64_t>(),
                  scratch.as<Item>(), rows, size, n_pad, k, descending);
    check_launch("sort_last_kernel", ctx.stream);
  });
}

void multinomial_last(const Array& probs, const Array& uniforms, Array& out, int64_t size,
                      int64_t samples) {
  const char* op = "multinomial_last";
  if (uniforms.dtype() != DType::Float64 || out.dtype() != DType::Int64)
    throw TypeError(cat(op, ": expected float64 uniforms and int64 out, got ",
                        uniforms.dtype_str(), " and ", out.dtype_str()));
  if (size < 1) value_error(op, ": size must be >= 1, got ", size);
  require_nonneg(op, "samples", samples);
  const int64_t rows = output_rows(op, out.size(), samples, size, probs.size());
  if (uniforms.size() < out.size())
    value_error(op, ": uniforms has ", uniforms.size(), " elements, out has ", out.size());
  const Launch ctx = launch_on(op, {&probs, &uniforms, &out});
  if (rows == 0) return;
  dispatch<kernel_dtypes::multinomial_last>(op, probs.dtype(), [&](auto t) {
    using T = decltype(t);
    Scratch cdf(ctx.device, static_cast<std::size_t>(checked_mul(
                                checked_mul(rows, size, op), int64_t(sizeof(double)), op)));
    launch_kernel(&running_sum_kernel<T>, grid_for(rows, ctx.device), kThreads, 0, ctx.stream,
                  probs.data<T>(), cdf.as<double>(), rows, size);
    check_launch("running_sum_kernel", ctx.stream);
    launch_kernel(&multinomial_search_kernel, grid_for(rows * samples, ctx.device), kThreads, 0,
                  ctx.stream, cdf.as<double>(), uniforms.data<double>(), out.data<int64_t>(),
                  rows, size, samples);
    check_launch("multinomial_search_kernel", ctx.stream);
  });
}

}  // namespace lamina_cuda
