// buffers.cc: the Array buffer (storage from allocator.cc), the dtype
// helpers and checked size arithmetic from common.h, and the copy-in /
// copy-out kernels from_numpy, to_numpy and fill.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "allocator.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    default: return "bool";
  }
}

DType parse_dtype(const std::string& name, const char* op) {
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  if (name == "int64") return DType::Int64;
  if (name == "bool") return DType::Bool;
  if (name == "float16") return DType::Float16;
  if (name == "bfloat16") return DType::BFloat16;
  throw TypeError(cat(op, ": unsupported dtype '", name, "'; cpu lists ", mask_str(kStoredDtypes)));
}

std::size_t dtype_itemsize(DType dt) {
  return dispatch(dt, [](auto tag) { return sizeof(elem_t<decltype(tag)>); });
}

std::string mask_str(DTypeMask mask) {
  std::vector<const char*> names;
  for (DType dt : kDTypes)
    if (mask & dtype_bit(dt)) names.push_back(dtype_name(dt));
  std::string r;
  for (std::size_t i = 0; i < names.size(); ++i)
    r += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  return r;
}

void require_same_dtype(const char* op, std::initializer_list<const Array*> arrays) {
  const Array* first = *arrays.begin();
  for (const Array* x : arrays)
    if (x->dtype() != first->dtype())
      throw TypeError(cat(op, ": dtypes differ, ", first->dtype_str(), " and ", x->dtype_str(),
                          "; every operand must have the dtype of out"));
}

void require_dtype_in(const char* op, DType dt, DTypeMask accepted) {
  if (!(accepted & dtype_bit(dt)))
    throw TypeError(cat(op, ": dtype ", dtype_name(dt), " is not supported; ", op, " takes ",
                        mask_str(accepted)));
}

Array::Array(int64_t size, const std::string& dtype) {
  dtype_ = parse_dtype(dtype, "Array");
  if (size < 0) value_error("Array: size must be >= 0, got ", size);
  if (size > (int64_t(1) << 60) / 8) value_error("Array: size ", size, " is too large");
  size_ = size;
  ptr_ = cached_alloc(nbytes());
}

Array::Array(void* ptr, int64_t size, DType dtype, std::shared_ptr<void> owner)
    : ptr_(ptr), size_(size), dtype_(dtype), owner_(std::move(owner)) {}

Array::~Array() {
  if (!owner_) cached_free(ptr_, nbytes());
}

template <class T>
T scalar_as(py::handle value, const char* op) {
  if constexpr (std::is_same_v<T, bool>) {
    // numpy's bool(value): any non-zero number is True
    const int truth = PyObject_IsTrue(value.ptr());
    if (truth < 0) throw py::error_already_set();
    return truth != 0;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (PyLong_Check(value.ptr())) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
      if (overflow) value_error(op, ": value ", std::string(py::str(value)), " does not fit int64");
      return static_cast<int64_t>(v);
    }
    double d = py::cast<double>(value);
    if (!std::isfinite(d) || d >= 9.2233720368547758e18 || d < -9.2233720368547758e18)
      value_error(op, ": cannot convert ", d, " to int64");
    return static_cast<int64_t>(d);
  } else {
    return static_cast<T>(py::cast<double>(value));
  }
}
template float scalar_as<float>(py::handle, const char*);
template double scalar_as<double>(py::handle, const char*);
template int64_t scalar_as<int64_t>(py::handle, const char*);
template bool scalar_as<bool>(py::handle, const char*);

namespace {

template <class T>
void copy_in(py::array src, Array& out) {
  auto arr = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(src);
  if (!arr) throw TypeError("from_numpy: cannot convert the source to " + out.dtype_str());
  const T* s = arr.data();
  T* d = out.data<T>();
  parallel_for(out.size(), 1 << 18, [&](int64_t b, int64_t e) {
    std::memcpy(d + b, s + b, sizeof(T) * (e - b));
  });
}

}  // namespace

void from_numpy(py::array src, Array& out) {
  if (src.size() != out.size())
    value_error("from_numpy: source has ", src.size(), " elements, out has ", out.size());
  char kind = src.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    throw TypeError(cat("from_numpy: cannot copy a numpy array of kind '", kind, "' into ",
                        out.dtype_str()));
  if (out.dtype() == DType::Int64 && kind == 'f')
    throw TypeError("from_numpy: cannot copy floating-point data into an int64 buffer; "
                    "convert it with astype first");
  if (out.dtype() == DType::Bool && kind != 'b')
    throw TypeError(cat("from_numpy: cannot copy numpy data of kind '", kind,
                        "' into a bool buffer; convert it with astype(bool) first"));
  if (out.size() == 0) return;
  dispatch_in<kAllDtypes>("from_numpy", out.dtype(),
                          [&](auto tag) { copy_in<elem_t<decltype(tag)>>(src, out); });
}

std::unique_ptr<Array> wrap_numpy(py::object src) {
  if (!py::isinstance<py::array>(src))
    throw TypeError(cat("wrap_numpy: expected a numpy.ndarray, got ",
                        std::string(py::str(py::type::of(src).attr("__name__")))));
  auto arr = py::reinterpret_borrow<py::array>(src);
  DType dt;
  if (arr.dtype().equal(py::dtype::of<float>())) dt = DType::Float32;
  else if (arr.dtype().equal(py::dtype::of<double>())) dt = DType::Float64;
  else if (arr.dtype().equal(py::dtype::of<int64_t>())) dt = DType::Int64;
  else if (arr.dtype().equal(py::dtype::of<bool>())) dt = DType::Bool;
  else
    throw TypeError(cat("wrap_numpy: unsupported dtype ", std::string(py::str(arr.dtype())),
                        "; wrap_numpy takes ", mask_str(kAllDtypes), " in native byte order"));
  auto item = static_cast<py::ssize_t>(dtype_itemsize(dt));
  if (arr.ndim() != 1 || (arr.size() > 1 && arr.strides(0) != item))
    value_error("wrap_numpy: expected a 1-D contiguous array, got shape ",
                shape_str(Shape(arr.shape(), arr.shape() + arr.ndim())), " with byte strides ",
                shape_str(Shape(arr.strides(), arr.strides() + arr.ndim())),
                "; pass a flat contiguous array (np.ascontiguousarray(x).ravel())");
  if (!arr.writeable())
    value_error("wrap_numpy: the array is read-only and cpu buffers are writable; copy it "
                "with from_numpy instead");
  void* ptr = arr.mutable_data();
  if (reinterpret_cast<std::uintptr_t>(ptr) % item != 0)
    value_error("wrap_numpy: the data is not aligned to its ", item,
                "-byte elements; copy it with from_numpy instead");
  // The Array holds a reference to src; dropping it needs the GIL.
  std::shared_ptr<void> owner(new py::object(src), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return std::make_unique<Array>(ptr, arr.size(), dt, std::move(owner));
}

py::array to_numpy(const Array& a, const Shape& shape, const Shape& strides, int64_t offset) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  // Validate before allocating the result (gather_view validates again, cheaply).
  if (shape.size() != strides.size())
    value_error("to_numpy: shape ", shape_str(shape), " and strides ", shape_str(strides),
                " differ in length");
  checked_prod(shape, "to_numpy");
  py::array result;
  dispatch_in<kAllDtypes>("to_numpy", a.dtype(), [&](auto tag) {
    result = py::array_t<elem_t<decltype(tag)>>(dims);
  });
  gather_view(a, result.mutable_data(), shape, strides, offset, "to_numpy");
  return result;
}

void fill(Array& out, py::handle value) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    T v;
    if constexpr (std::is_same_v<T, Half>) v = ::lamina::to_half(scalar_as<float>(value, "fill"));
    else if constexpr (std::is_same_v<T, BFloat16>) v = ::lamina::to_bfloat16(scalar_as<float>(value, "fill"));
    else v = scalar_as<T>(value, "fill");
    T* d = out.data<T>();
    parallel_for(out.size(), kCopyGrain, [&](int64_t b, int64_t e) {
      if constexpr (::lamina::is_narrow_v<T>) {
        // as 16-bit integers: the loop over the struct did not vectorise (5x
        // float32's time for half the bytes)
        std::fill(reinterpret_cast<uint16_t*>(d) + b, reinterpret_cast<uint16_t*>(d) + e, v.bits);
      } else {
        for (int64_t i = b; i < e; ++i) d[i] = v;
      }
    });
  });
}

}  // namespace lamina_cpu
