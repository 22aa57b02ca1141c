// common.h: shared vocabulary of the cpu backend: dtypes, the Array buffer
// type, checked 64-bit size arithmetic and the error helpers every kernel
// uses to validate its arguments before it touches memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lamina/kernel_checks.h"
#include "lamina/narrow_floats.h"

namespace lamina_cpu {

namespace checks = ::lamina::checks;

enum class DType : int { Float32 = 0, Float64 = 1, Int64 = 2, Bool = 3, Float16 = 4, BFloat16 = 5 };

// The 16-bit floats are stored and converted only (interface v2.2): their
// element types (lamina/narrow_floats.h) have no arithmetic, so only the
// storage kernels (Array, compact, ewise_setitem, ewise_cast) take them.
using ::lamina::BFloat16;
using ::lamina::Half;

// Sets of dtypes, one bit per DType: what a kernel accepts (interface v1.1's
// kernel_dtypes is built from these, in bindings.cc).
using DTypeMask = unsigned;
constexpr DTypeMask dtype_bit(DType dt) { return 1u << static_cast<int>(dt); }
constexpr DTypeMask kFloats = dtype_bit(DType::Float32) | dtype_bit(DType::Float64);
constexpr DTypeMask kNumbers = kFloats | dtype_bit(DType::Int64);
constexpr DTypeMask kIntegral = dtype_bit(DType::Int64) | dtype_bit(DType::Bool);
constexpr DTypeMask kAllDtypes = kNumbers | dtype_bit(DType::Bool);  // all but the narrow ones
constexpr DTypeMask kNarrow = dtype_bit(DType::Float16) | dtype_bit(DType::BFloat16);
constexpr DTypeMask kStoredDtypes = kAllDtypes | kNarrow;  // what `dtypes` lists
constexpr DType kDTypes[] = {DType::Float32, DType::Float64, DType::Int64, DType::Bool,
                             DType::Float16, DType::BFloat16};

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

using Shape = checks::Shape;

// The exceptions bindings.cc maps onto Python types, cat, value_error and
// the checked size arithmetic: lamina/kernel_checks.h (from lamina-ndarray),
// shared with the cuda backend.
using checks::cat;
using checks::checked_add;
using checks::checked_mul;
using checks::checked_prod;
using checks::IndexError;
using checks::require_nonneg;
using checks::shape_str;
using checks::TypeError;
using checks::value_error;
using checks::ZeroDivisionError;

// Checks that every array has the same dtype as the first one.
void require_same_dtype(const char* op, std::initializer_list<const Array*> arrays);
// Raises TypeError naming op unless dt is in accepted.
void require_dtype_in(const char* op, DType dt, DTypeMask accepted);
inline void require_float(const char* op, DType dt) { require_dtype_in(op, dt, kFloats); }
// "float32, float64 or int64": the dtypes of a mask, for messages.
std::string mask_str(DTypeMask mask);

// Calls f with a typed null pointer of the element type of dt (float,
// double, int64_t, bool, Half or BFloat16; a bool buffer is numpy's: one
// byte, 0 or 1). Kernels that compute use dispatch_in, which leaves out the
// narrow types:
// `dispatch(dt, [&](auto tag) { using T = elem_t<decltype(tag)>; ... })`.
template <class F>
decltype(auto) dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::Float32: return f(static_cast<float*>(nullptr));
    case DType::Float64: return f(static_cast<double*>(nullptr));
    case DType::Int64: return f(static_cast<int64_t*>(nullptr));
    case DType::Float16: return f(static_cast<Half*>(nullptr));
    case DType::BFloat16: return f(static_cast<BFloat16*>(nullptr));
    default: return f(static_cast<bool*>(nullptr));
  }
}

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, Half>) return DType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
  else return DType::Bool;
}

// dispatch over the dtypes of Accepted only (the others raise TypeError naming
// op), so a kernel body is compiled for exactly the dtypes it takes.
template <DTypeMask Accepted, class F>
void dispatch_in(const char* op, DType dt, F&& f) {
  require_dtype_in(op, dt, Accepted);
  dispatch(dt, [&](auto tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr ((Accepted & dtype_bit(dtype_of<T>())) != 0) f(tag);
  });
}

template <class F>
void dispatch_float(const char* op, DType dt, F&& f) {
  dispatch_in<kFloats>(op, dt, std::forward<F>(f));
}

// Integer arithmetic that wraps like numpy's and PyTorch's (two's complement)
// instead of overflowing into undefined behaviour; other types as they are.
template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<int64_t>(uint64_t(a) + uint64_t(b));
  else return static_cast<T>(a + b);
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<int64_t>(uint64_t(a) * uint64_t(b));
  else return static_cast<T>(a * b);
}

template <class P>
using elem_t = std::remove_pointer_t<P>;

}  // namespace lamina_cpu
