// common.h: shared vocabulary of the cpu backend: dtypes, the Array buffer
// type, checked 64-bit size arithmetic and the error helpers every kernel
// uses to validate its arguments before it touches memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lamina_cpu {

enum class DType : int { Float32 = 0, Float64 = 1, Int64 = 2 };

const char* dtype_name(DType dt);
DType parse_dtype(const std::string& name, const char* op);  // throws TypeError
std::size_t dtype_itemsize(DType dt);

// A flat, contiguous buffer: 64-byte aligned from the caching allocator, or
// borrowed memory (wrap_numpy) that `owner` keeps alive and that is never
// returned to the allocator.
class Array {
 public:
  Array(int64_t size, const std::string& dtype);
  Array(void* ptr, int64_t size, DType dtype, std::shared_ptr<void> owner);
  ~Array();
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  std::string dtype_str() const { return dtype_name(dtype_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(size_) * dtype_itemsize(dtype_); }
  template <class T> T* data() { return static_cast<T*>(ptr_); }
  template <class T> const T* data() const { return static_cast<const T*>(ptr_); }
  void* raw() { return ptr_; }
  const void* raw() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  int64_t size_ = 0;
  DType dtype_ = DType::Float32;
  std::shared_ptr<void> owner_;  // set when the memory is borrowed
};

using Shape = std::vector<int64_t>;

// Exceptions that bindings.cc maps onto Python types. index_error and
// type_error are distinct classes so a kernel file need not include pybind11.
struct IndexError : std::out_of_range {
  using std::out_of_range::out_of_range;
};
struct TypeError : std::domain_error {
  using std::domain_error::domain_error;
};

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <class... Args>
[[noreturn]] void value_error(const Args&... args) {
  throw std::invalid_argument(cat(args...));
}

std::string shape_str(const Shape& s);

// a*b (a+b) with overflow reported as a ValueError naming op. Inline on
// purpose: defined in another file, GCC's link-time optimisation dropped calls
// whose result was unused (a bounds check kept only for its error).
inline int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) value_error(op, ": size ", a, " * ", b, " overflows int64");
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) value_error(op, ": offset ", a, " + ", b, " overflows int64");
  return r;
}
// Product of dims, each >= 0, checked for overflow.
int64_t checked_prod(const Shape& dims, const char* op);

// Checks that every array has the same dtype as the first one.
void require_same_dtype(const char* op, std::initializer_list<const Array*> arrays);
// Raises TypeError unless dt is float32 or float64.
void require_float(const char* op, DType dt);
// Raises ValueError unless x >= 0.
void require_nonneg(const char* op, const char* what, int64_t x);

// Calls f with a typed null pointer of the element type of dt
// (float, double or int64_t): `dispatch(dt, [&](auto tag) { using T = ...; })`.
template <class F>
decltype(auto) dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::Float32: return f(static_cast<float*>(nullptr));
    case DType::Float64: return f(static_cast<double*>(nullptr));
    default: return f(static_cast<int64_t*>(nullptr));
  }
}

template <class F>
decltype(auto) dispatch_float(const char* op, DType dt, F&& f) {
  require_float(op, dt);
  if (dt == DType::Float32) return f(static_cast<float*>(nullptr));
  return f(static_cast<double*>(nullptr));
}

template <class P>
using elem_t = std::remove_pointer_t<P>;

}  // namespace lamina_cpu
