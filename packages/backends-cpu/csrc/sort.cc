// sort.cc: sort_last and multinomial_last (interface v2.1), both over the
// contiguous rows of a compact (rows, size) operand, rows split across threads.
//
// sort_last writes the first k of each row's stable sort (PyTorch's order: NaN
// largest, -0.0 == 0.0, equal values keep the first index first in either
// direction). Each value becomes an unsigned key whose integer order is that
// order (reversed for descending), paired with its index; (key, index) pairs
// compare lexicographically, so any sort of them is the stable one. A full row
// is std::sort-ed; a small k selects with nth_element and sorts only k pairs.
//
// multinomial_last searches each row's running sum, accumulated in double
// from left to right exactly as the numpy reference (np.cumsum) does, so the
// same host uniforms give the same draws on every backend.
// Tested by tests/test_sort_kernels.py against the numpy reference backend.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

namespace {

template <class T>
using Key = std::conditional_t<std::is_same_v<T, float>, uint32_t,
                               std::conditional_t<std::is_same_v<T, bool>, uint8_t, uint64_t>>;

// An unsigned key whose order is the ascending sort order of the values.
template <class T>
Key<T> sort_key(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint8_t>(v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63);
  } else {
    using K = Key<T>;
    constexpr K sign = K{1} << (sizeof(K) * 8 - 1);
    if (v != v) return ~K{0};  // every NaN above +inf (whose key is below ~0)
    if (v == T(0)) v = T(0);   // -0.0 ties with 0.0
    K bits;
    std::memcpy(&bits, &v, sizeof bits);
    return (bits & sign) ? ~bits : (bits | sign);
  }
}

template <class K>
struct Item {
  K key;
  int64_t index;
  bool operator<(const Item& o) const { return key < o.key || (key == o.key && index < o.index); }
};

// The first k of row x's stable sort into values[0:k], indices[0:k]; items is scratch.
template <class T>
void sort_row(const T* x, int64_t n, int64_t k, bool descending, std::vector<Item<Key<T>>>& items,
              T* values, int64_t* indices) {
  items.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Key<T> key = sort_key(x[i]);
    items[i] = {descending ? static_cast<Key<T>>(~key) : key, i};
  }
  const auto first = items.begin(), kth = first + k;
  if (k < n / 8) {  // selection: O(n + k log k) instead of O(n log n)
    std::nth_element(first, kth, items.end());
    std::sort(first, kth);
  } else {
    std::sort(first, items.end());
  }
  for (int64_t j = 0; j < k; ++j) {
    indices[j] = items[j].index;
    values[j] = x[items[j].index];
  }
}

// Calls f(begin, end) over chunks of rows, each thread getting enough work.
template <class F>
void over_rows(int64_t rows, int64_t work_per_row, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work_per_row, 1));
  parallel_for(rows, grain, f, 1);
}

// Rows of the outputs (out_size elements, per_row to a row), checked against
// an input of in_size elements holding rows x size.
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
  dispatch_in<kSortDtypes>(op, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    T* pv = values_out.data<T>();
    int64_t* pi = indices_out.data<int64_t>();
    over_rows(rows, size * 16, [&](int64_t b, int64_t e) {
      std::vector<Item<Key<T>>> items;  // one scratch row per thread
      for (int64_t r = b; r < e; ++r)
        sort_row(pa + r * size, size, k, descending, items, pv + r * k, pi + r * k);
    });
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
  dispatch_in<kMultinomialDtypes>(op, probs.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pp = probs.data<T>();
    const double* pu = uniforms.data<double>();
    int64_t* po = out.data<int64_t>();
    over_rows(rows, size + samples * 16, [&](int64_t b, int64_t e) {
      std::vector<double> cdf(static_cast<std::size_t>(size));
      for (int64_t r = b; r < e; ++r) {
        double total = 0.0;
        for (int64_t c = 0; c < size; ++c) cdf[c] = total += static_cast<double>(pp[r * size + c]);
        // A target rounded up to the total takes the last category with weight:
        // the first whose running sum reaches the total.
        const int64_t last = std::lower_bound(cdf.begin(), cdf.end(), total) - cdf.begin();
        for (int64_t j = 0; j < samples; ++j) {
          const double t = pu[r * samples + j] * total;
          const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), t) - cdf.begin();
          po[r * samples + j] = std::min(c, last);
        }
      }
    });
  });
}

}  // namespace lamina_cpu
