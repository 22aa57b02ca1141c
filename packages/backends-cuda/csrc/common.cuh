// common.cuh: shared vocabulary of the cuda backend, for host and device code:
// dtypes and the dtype sets of every kernel (kernel_dtypes.h), the Array buffer
// type, the error types bindings.cc maps onto Python exceptions, the CUDA
// checking macro, launch helpers, the one dtype dispatcher, wrapping integer
// arithmetic, and the StridedLayout every strided kernel receives by value.
//
// Built by CMakeLists.txt into the extension lamina_backend_cuda._core; tested
// by tests/ (import and availability everywhere, kernels with -m cuda on a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernel_dtypes.h"
#include "lamina/kernel_checks.h"
#include "lamina/narrow_floats.h"
#include "runtime.cuh"

namespace lamina_cuda {

namespace checks = ::lamina::checks;

enum class DType : int { Float32 = 0, Float64 = 1, Int64 = 2, Bool = 3, Float16 = 4, BFloat16 = 5 };

// The 16-bit floats (interface v2.2): their element types
// (lamina/narrow_floats.h) hold bits and have no arithmetic, so a kernel that
// takes them computes in float32 (ValueOf), widening each element it loads and
// rounding each value it stores once, to nearest even: the float32 fallback's
// result (lamina.ndarray._narrow) bit for bit where it computes as float32 does.
using ::lamina::BFloat16;
using ::lamina::Half;

// The type a kernel on T computes in (and an elementwise kernel's scalar value
// has): float for the 16-bit floats, T otherwise.
template <class T>
using ValueOf = std::conditional_t<::lamina::is_narrow_v<T>, float, T>;

// A float32 result r as the 16-bit float N (a comparison's bool stays bool).
template <class N, class R>
__host__ __device__ __forceinline__ auto narrow_result(R r) {
  if constexpr (std::is_same_v<R, bool>) return r;
  else if constexpr (std::is_same_v<N, Half>) return ::lamina::to_half(r);
  else return ::lamina::to_bfloat16(r);
}

// An element of T as its compute type: exact (x itself unless T is 16-bit).
template <class T>
__host__ __device__ __forceinline__ ValueOf<T> widen(T x) {
  if constexpr (::lamina::is_narrow_v<T>) return ::lamina::to_float(x);
  else return x;
}

// A computed value v (of T's compute type or its accumulator, double for a
// float32 sum) as an element of T: a cast, or for a 16-bit T the float32 value
// (a double rounds to float first, as the float32 kernel's result does)
// rounded to nearest even.
template <class T, class V>
__host__ __device__ __forceinline__ T round_to(V v) {
  if constexpr (::lamina::is_narrow_v<T>) return narrow_result<T>(static_cast<float>(v));
  else return static_cast<T>(v);
}

const char* dtype_name(DType dt);
DType parse_dtype(const std::string& name, const char* op);  // throws TypeError
std::size_t dtype_itemsize(DType dt);
constexpr DTypes dtype_bit(DType dt) { return 1u << static_cast<int>(dt); }
// "float32, float64" for a dtype set, for error messages.
std::string dtype_list(DTypes set);

// The exceptions bindings.cc maps onto Python types (std::invalid_argument ->
// ValueError, std::runtime_error -> RuntimeError: pybind11's defaults), cat,
// value_error and the checked size arithmetic: lamina/kernel_checks.h (from
// lamina-ndarray), shared with the cpu backend.
using checks::cat;
using checks::checked_mul;
using checks::IndexError;
using checks::require_nonneg;
using checks::shape_str;
using checks::TypeError;
using checks::value_error;

// ---------------------------------------------------------------- CUDA checks
// Every CUDA runtime call goes through LAMINA_CUDA_CHECK; `what` names the
// kernel or function on whose behalf the call was made.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* call);

#define LAMINA_CUDA_CHECK(call, what)                                   \
  do {                                                                  \
    cudaError_t lamina_err_ = (call);                                   \
    if (lamina_err_ != cudaSuccess)                                     \
      ::lamina_cuda::throw_cuda_error(lamina_err_, (what), #call);      \
  } while (0)

// After every launch: reports launch errors (bad configuration, no kernel
// image for this GPU) and, with LAMINA_CUDA_SYNC=1, waits for the kernel so a
// fault is attributed to the kernel that caused it.
void check_launch(const char* kernel, cudaStream_t stream);

// ---------------------------------------------------------------- devices
bool is_available();
std::string unavailable_reason();
void require_available(const char* op);  // throws RuntimeError with the reason
int device_count();                       // 0 when unavailable
void synchronize();                       // every device this process used
int sm_count(int device);
cudaStream_t device_stream(int device);   // the one stream all work of a device runs on
void set_device(int device, const char* op);

// ---------------------------------------------------------------- memory
// The caching allocator (allocator.cc). Blocks are 256-byte aligned, so every
// buffer may be read with 16-byte vector loads from element 0.
void* cached_alloc(int device, std::size_t bytes, std::size_t* granted);
void cached_free(int device, void* ptr, std::size_t granted) noexcept;
void empty_cache();  // returns every cached block of every device to the driver
// allocated, reserved, peak, cached (bytes) and cuda_malloc_calls,
// cuda_free_calls, cache_hits (counts) of one device.
std::map<std::string, std::size_t> memory_stats(int device);

// Scratch device memory for one kernel call, returned to the cache on scope exit.
class Scratch {
 public:
  Scratch(int device, std::size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  int device_;
  void* ptr_ = nullptr;
  std::size_t granted_ = 0;
};

// ---------------------------------------------------------------- buffers
// A flat, contiguous device buffer of one dtype on one device.
class Array {
 public:
  Array(int64_t size, const std::string& dtype, int device);
  ~Array();
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  std::string dtype_str() const { return dtype_name(dtype_); }
  int device() const { return device_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(size_) * dtype_itemsize(dtype_); }
  template <class T> T* data() const { return static_cast<T*>(ptr_); }
  void* raw() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  std::size_t granted_ = 0;
  int64_t size_ = 0;
  DType dtype_ = DType::Float32;
  int device_ = 0;
};

// A Python number as given to fill/scalar_* kernels; converted to the
// buffer's dtype like numpy's `dtype.type(value)` (ints stay exact for int64).
struct Scalar {
  double f = 0.0;
  int64_t i = 0;
  bool is_int = false;
  template <class T> T as() const {
    if constexpr (std::is_same_v<T, int64_t>) {
      if (is_int) return i;
      if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
        throw std::invalid_argument(cat("cannot convert the value ", f, " to int64"));
      return static_cast<int64_t>(f);
    } else if constexpr (::lamina::is_narrow_v<T>) {
      return round_to<T>(as<float>());  // as the float32 fallback: to float32, then rounded
    } else {
      return is_int ? static_cast<T>(i) : static_cast<T>(f);
    }
  }
};

using Shape = checks::Shape;

// The device and stream a kernel call runs on: checks that every operand is on
// one device (ValueError naming the op otherwise) and makes it current.
struct Launch {
  int device;
  cudaStream_t stream;
};
Launch launch_on(const char* op, std::initializer_list<const Array*> arrays);

void require_same_dtype(const char* op, std::initializer_list<const Array*> arrays);
// TypeError naming the op, dt and the dtypes it takes unless dt is in set.
void require_dtype(const char* op, DType dt, DTypes set);

// ---------------------------------------------------------------- launch helpers
constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill the GPU, no more.
inline unsigned grid_for(int64_t n, int device, int threads = kThreads) {
  int64_t blocks = (n + threads - 1) / threads;
  int64_t cap = static_cast<int64_t>(sm_count(device)) * 16;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// The one dtype dispatch: calls fn(T{}) with T the C++ type of dt (bool for
// Bool), instantiating fn only for the dtypes of Set; TypeError for the others.
// Set is the kernel's entry of kernel_dtypes.h, so what a kernel compiles for
// and what Python's kernel_dtypes says are the same list.
template <DTypes Set, class Fn>
void dispatch(const char* op, DType dt, Fn&& fn) {
  require_dtype(op, dt, Set);
  switch (dt) {
    case DType::Float32: if constexpr ((Set & dtype_bit(DType::Float32)) != 0) fn(float{}); return;
    case DType::Float64: if constexpr ((Set & dtype_bit(DType::Float64)) != 0) fn(double{}); return;
    case DType::Int64: if constexpr ((Set & dtype_bit(DType::Int64)) != 0) fn(int64_t{}); return;
    case DType::Bool: if constexpr ((Set & dtype_bit(DType::Bool)) != 0) fn(bool{}); return;
    case DType::Float16: if constexpr ((Set & dtype_bit(DType::Float16)) != 0) fn(Half{}); return;
    case DType::BFloat16:
      if constexpr ((Set & dtype_bit(DType::BFloat16)) != 0) fn(BFloat16{});
      return;
  }
}

// ---------------------------------------------------------------- integer arithmetic
// int64 arithmetic wraps around on overflow, as numpy's and PyTorch's do; in
// C++ signed overflow is undefined (and UBSan, nox -s sanitize, reports it), so
// it is done on the unsigned type. Floats and bool use the plain operators
// (bool: the int result converts back, so + is or and * is and).
template <class T>
__host__ __device__ __forceinline__ T add_wrap(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return static_cast<T>(a + b);
}
template <class T>
__host__ __device__ __forceinline__ T sub_wrap(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return static_cast<T>(a - b);
}
template <class T>
__host__ __device__ __forceinline__ T mul_wrap(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return static_cast<T>(a * b);
}
template <class T>
__host__ __device__ __forceinline__ T neg_wrap(T a) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
  else return -a;
}

// ---------------------------------------------------------------- strided layouts
constexpr int kMaxDims = 8;

// A view (shape, strides, offset) in elements, with size-1 dims dropped and
// contiguous neighbours merged, passed to kernels by value.
struct StridedLayout {
  int ndim;
  int64_t size;
  int64_t offset;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
};

// ValueError unless every element of a view with at least one element lies in
// [0, buffer_size); a view whose reach overflows int64 lies outside too. `what`
// names the view in the message ("view", "a view").
void require_view_inside(const char* op, const char* what, const Shape& shape, const Shape& strides,
                         int64_t offset, int64_t buffer_size);

// stride * n, or INT64_MIN (a step no view can take) when that overflows: for
// deciding whether dims merge, whose product may exceed what the view reaches.
int64_t step_over(int64_t stride, int64_t n);

// Validates the view against a buffer of buffer_size elements (ValueError if it
// reaches outside, or has more than kMaxDims dims after merging) and simplifies it.
StridedLayout make_layout(const char* op, const Shape& shape, const Shape& strides,
                          int64_t offset, int64_t buffer_size);

// True when the simplified view is one contiguous run starting at l.offset.
inline bool is_contiguous(const StridedLayout& l) {
  return l.ndim == 0 || (l.ndim == 1 && l.strides[0] == 1);
}

// Queues out[i] = a[view position of i] for the l.size elements of a view of a
// (strided.cu); out is device memory of a's dtype and device. Used by to_numpy.
void compact_into(const Array& a, void* out, const StridedLayout& l, const Launch& ctx);

// Buffer position of logical (row-major) element i of the view. I is the type
// the divisions run in: 32-bit when the view is small enough, 64-bit otherwise.
template <class I>
__device__ __forceinline__ int64_t view_position(const StridedLayout& l, I i) {
  int64_t pos = l.offset;
  for (int k = l.ndim - 1; k >= 0; --k) {
    const I n = static_cast<I>(l.shape[k]);
    const I q = i / n;
    pos += static_cast<int64_t>(i - q * n) * l.strides[k];
    i = q;
  }
  return pos;
}

// The position of the first of the n int64 values at x (device memory) outside
// [lo, hi], or -1 when all are inside; *value gets that value. Runs a check
// kernel and waits for it (index.cu): the index kernels and integer powers
// raise from the call that got a bad value, before anything is written.
int64_t find_outside(const char* op, const int64_t* x, int64_t n, int64_t lo, int64_t hi,
                     const Launch& ctx, int64_t* value);

}  // namespace lamina_cuda
