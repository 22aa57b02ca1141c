// ewise.cc: elementwise kernels over compact operands (size = out.size):
// ewise_OP(a, b, out), scalar_OP(a, value, out), unary ewise_OP(a, out),
// ewise_where, relu_backward and ewise_cast; and ewise_strided_OP, a binary
// op over two strided views (broadcast, permuted) into a compact out. The loops
// (ewise_loops.h) exist in a baseline copy and an AVX2 copy, reached through
// the active ISA's table (isa_table.h); float32 exp, tanh and erf use the
// vector polynomials of exp_simd.h (AVX2 or AVX-512). Memory-bound ops use
// threads from 2 x kCopyGrain elements, transcendentals from 2 x 32K: below
// that a woken thread costs more than it saves, above all on a shared, busy
// machine. float16 and bfloat16 run the float32 loops on widened blocks
// (narrow_blocks below).
#include "ewise_ops.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "isa_table.h"
#include "kernels.h"
#include "narrow.h"
#include "threading.h"

namespace lamina_cpu {

namespace base {
#include "ewise_loops.h"

void fill_ewise(IsaKernels& k) { fill_loops<false>(k); }
}  // namespace base

namespace {

template <class Op>
int64_t grain() {
  return ops::kTranscendental<Op> ? kParallelGrain : kCopyGrain;
}

// The active ISA's loops of Op (isa_table.h): its vector copy where the op
// has one for T (its kSimd), the baseline loop otherwise; float32 exp, tanh
// and erf are the polynomials of exp_simd.h at the ISA's width.
template <class T, class O>
const BinaryLoops<T, O>& binary_loops() {
  const TypeKernels<T>& t = isa_kernels().of<T>();
  if constexpr (std::is_same_v<O, T>) return t.binary;
  else return t.to_bool;
}

template <class Op, class T, class O>
BinaryLoop<T, O> binary_fn() {
  return binary_loops<T, O>().ewise[ops::kOpId<Op>];
}

template <class Op, class T, class O>
ScalarLoop<T, O> scalar_fn() {
  return binary_loops<T, O>().scalar[ops::kOpId<Op>];
}

template <class Op, class T>
UnaryLoop<T> unary_fn() {
  return isa_kernels().of<T>().unary[ops::kOpId<Op>];
}

void require_operand(const char* op, int i, const Array& x, const Array& out) {
  if (x.size() < out.size())
    value_error(op, ": operand ", i, " has ", x.size(), " elements, out has ", out.size());
}

// The float32 loop's out type for a narrow op writing O: bool stays bool.
template <class O>
using WideOut = std::conditional_t<std::is_same_v<O, bool>, bool, float>;

// o[i] = fn(a[i * sa], b[i * sb]) for i < n, a and b 16-bit floats, fn an
// op's float32 loop.
template <class N, class O>
void narrow_binary_run(BinaryLoop<float, WideOut<O>> fn, const N* a, int64_t sa, const N* b,
                       int64_t sb, O* o, int64_t n) {
  narrow_blocks(o, n, [&](int64_t i, int64_t len, float* fa, float* fb) {
    widen(a + i * sa, sa, fa, len);
    widen(b + i * sb, sb, fb, len);
  }, [&](const float* fa, const float* fb, WideOut<O>* out, int64_t len) { fn(fa, fb, out, len); });
}

// Calls f with a typed null pointer of out's element type: the operands'
// T, or bool for a comparison writing a bool out (interface v1.1).
template <class Op, class T, class F>
void with_out(const char* op, const Array& out, F&& f) {
  if constexpr (Op::kCompare) {
    if (out.dtype() == DType::Bool) return f(static_cast<bool*>(nullptr));
  }
  if (out.dtype() != dtype_of<T>())
    throw TypeError(cat(op, ": out is ", out.dtype_str(), ", operands are ", dtype_name(dtype_of<T>()),
                        Op::kCompare ? "; out must have their dtype or be bool"
                                     : "; out must have their dtype"));
  f(static_cast<T*>(nullptr));
}

// The int64 divisors (or exponents) b[0:n] are in the op's domain; checked
// before the loop so a kernel raises without having written anything.
template <class Op>
void check_int_domain(const char* op, const int64_t* b, int64_t n) {
  constexpr ops::IntDomain domain = ops::kIntDomain<Op>;
  if constexpr (domain == ops::IntDomain::NonzeroDivisor) {
    bool zero = false;
    for (int64_t i = 0; i < n; ++i) zero |= b[i] == 0;
    if (zero) throw ZeroDivisionError(cat(op, ": integer division by zero; PyTorch raises too, "
                                              "use float operands to get inf or nan"));
  } else if constexpr (domain == ops::IntDomain::NonnegativeExponent) {
    bool negative = false;
    for (int64_t i = 0; i < n; ++i) negative |= b[i] < 0;
    if (negative) value_error(op, ": integers to negative integer powers are not allowed; "
                                  "use a float base or exponent");
  }
}

template <class Op, class T>
void check_domain(const char* op, const T* b, int64_t n) {
  if constexpr (std::is_same_v<T, int64_t>) check_int_domain<Op>(op, b, n);
}

// The 16-bit float bodies of binary, scalar and unary below.
template <class Op, class N, class O>
void narrow_binary(const N* a, const N* b, O* o, int64_t n) {
  const BinaryLoop<float, WideOut<O>> fn = binary_fn<Op, float, WideOut<O>>();
  parallel_for(n, grain<Op>(), [&](int64_t s, int64_t e) {
    narrow_binary_run(fn, a + s, 1, b + s, 1, o + s, e - s);
  });
}

template <class Op, class N, class O>
void narrow_scalar(const N* a, float v, O* o, int64_t n) {
  const ScalarLoop<float, WideOut<O>> fn = scalar_fn<Op, float, WideOut<O>>();
  parallel_for(n, grain<Op>(), [&](int64_t s, int64_t e) {
    narrow_blocks(o + s, e - s, [&](int64_t i, int64_t len, float* fa, float*) {
      to_float32(a + s + i, fa, len);
    }, [&](const float* fa, const float*, WideOut<O>* out, int64_t len) { fn(fa, v, out, len); });
  });
}

template <class Op, class N>
void narrow_unary(const N* a, N* o, int64_t n) {
  const UnaryLoop<float> fn = unary_fn<Op, float>();
  parallel_for(n, grain<Op>(), [&](int64_t s, int64_t e) {
    narrow_blocks(o + s, e - s, [&](int64_t i, int64_t len, float* fa, float*) {
      to_float32(a + s + i, fa, len);
    }, [&](const float* fa, const float*, float* out, int64_t len) { fn(fa, out, len); });
  });
}

template <class Op>
void binary(const char* name, const Array& a, const Array& b, Array& out) {
  require_same_dtype(name, {&a, &b});
  require_operand(name, 0, a, out);
  require_operand(name, 1, b, out);
  dispatch_in<ops::kKernelDtypes<Op>>(name, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    with_out<Op, T>(name, out, [&](auto otag) {
      using O = elem_t<decltype(otag)>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      O* po = out.data<O>();
      if constexpr (::lamina::is_narrow_v<T>) {
        narrow_binary<Op>(pa, pb, po, out.size());
      } else {
        check_domain<Op>(name, pb, out.size());
        const BinaryLoop<T, O> fn = binary_fn<Op, T, O>();
        parallel_for(out.size(), grain<Op>(), [&](int64_t s, int64_t e) { fn(pa + s, pb + s, po + s, e - s); });
      }
    });
  });
}

template <class Op>
void scalar(const char* name, const Array& a, py::handle value, Array& out) {
  require_operand(name, 0, a, out);
  dispatch_in<ops::kKernelDtypes<Op>>(name, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    with_out<Op, T>(name, out, [&](auto otag) {
      using O = elem_t<decltype(otag)>;
      const T* pa = a.data<T>();
      O* po = out.data<O>();
      if constexpr (::lamina::is_narrow_v<T>) {
        // the value stays float32, as on a float32 copy of a
        narrow_scalar<Op>(pa, scalar_as<float>(value, name), po, out.size());
      } else {
        const T v = scalar_as<T>(value, name);
        // value ** a checks the exponents a; a OP value checks value
        if constexpr (std::is_same_v<Op, ops::Rpower>) check_domain<Op>(name, pa, out.size());
        else check_domain<Op>(name, &v, 1);
        const ScalarLoop<T, O> fn = scalar_fn<Op, T, O>();
        parallel_for(out.size(), grain<Op>(), [&](int64_t s, int64_t e) { fn(pa + s, v, po + s, e - s); });
      }
    });
  });
}

template <class Op>
void unary(const char* name, const Array& a, Array& out) {
  require_same_dtype(name, {&out, &a});
  require_operand(name, 0, a, out);
  dispatch_in<ops::kKernelDtypes<Op>>(name, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    if constexpr (::lamina::is_narrow_v<T>) {
      narrow_unary<Op>(pa, po, out.size());
    } else {
      const UnaryLoop<T> fn = unary_fn<Op, T>();
      parallel_for(out.size(), grain<Op>(), [&](int64_t s, int64_t e) { fn(pa + s, po + s, e - s); });
    }
  });
}

template <class C, class T>
void where_typed(const C* c, const T* a, const T* b, T* o, int64_t n) {
  if constexpr (std::is_same_v<C, bool> && std::is_floating_point_v<T>) {
    const auto loop = isa_kernels().of<T>().where_bool;  // the active ISA's vector loop
    parallel_for(n, kCopyGrain, [&](int64_t s, int64_t e) { loop(c + s, a + s, b + s, o + s, e - s); });
    return;
  }
  parallel_for(n, kCopyGrain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) o[i] = c[i] != C(0) ? a[i] : b[i];
  });
}

template <class From, class To>
To convert(From x) {
  // a 16-bit float converts through float, as PyTorch's (float64 -> float32 -> bfloat16)
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<float, To>(::lamina::to_float(x));
  } else if constexpr (std::is_same_v<To, Half>) {
    return ::lamina::to_half(convert<From, float>(x));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return ::lamina::to_bfloat16(convert<From, float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);  // NaN is True, as numpy's astype(bool)
  } else if constexpr (std::is_same_v<To, int64_t> && std::is_floating_point_v<From>) {
    // numpy's astype on x86-64: NaN and out-of-range values become INT64_MIN.
    if (!(x >= From(-9.2233720368547758e18) && x < From(9.2233720368547758e18)))
      return INT64_MIN;
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// One dim of both views after coalescing: extent and each operand's stride.
struct Dim {
  int64_t n, sa, sb;
};

// Drops size-1 dims and merges neighbours that both views walk as one dim:
// BatchNorm's (C,) broadcast over NCHW, strides (0, 1, 0, 0), becomes
// (N, C, H*W). Returns at least one dim (a scalar is one element).
std::vector<Dim> coalesce(const Shape& shape, const Shape& sa, const Shape& sb) {
  std::vector<Dim> dims;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (!dims.empty() && dims.back().sa == sa[k] * shape[k] && dims.back().sb == sb[k] * shape[k]) {
      dims.back() = {dims.back().n * shape[k], sa[k], sb[k]};
    } else {
      dims.push_back({shape[k], sa[k], sb[k]});
    }
  }
  if (dims.empty()) dims.push_back({1, 0, 0});
  return dims;
}

// Rows are the outer dims, each a run of the innermost dim.
template <class Op, class T, class O>
void strided_rows(const T* pa, const T* pb, O* po, const std::vector<Dim>& dims,
                  int64_t a_offset, int64_t b_offset) {
  const Dim inner = dims.back();
  const int lead = static_cast<int>(dims.size()) - 1;
  int64_t rows = 1;
  for (int k = 0; k < lead; ++k) rows *= dims[k].n;
  // One row: the vectorised contiguous loop, the scalar loop (b broadcast along
  // it) or a strided loop; 16-bit floats widen the row in blocks.
  using L = std::conditional_t<::lamina::is_narrow_v<T>, float, T>;
  using LO = std::conditional_t<::lamina::is_narrow_v<T>, WideOut<O>, O>;
  const BinaryLoop<L, LO> contiguous = binary_fn<Op, L, LO>();
  [[maybe_unused]] const ScalarLoop<L, LO> broadcast_b = scalar_fn<Op, L, LO>();
  auto row = [&](const T* a, const T* b, O* o) {
    if constexpr (::lamina::is_narrow_v<T>) {
      narrow_binary_run(contiguous, a, inner.sa, b, inner.sb, o, inner.n);
    } else if (inner.sa == 1 && inner.sb == 1) {
      contiguous(a, b, o, inner.n);
    } else if (inner.sa == 1 && inner.sb == 0) {
      broadcast_b(a, *b, o, inner.n);
    } else {
      for (int64_t i = 0; i < inner.n; ++i)
        o[i] = ops::to_out<O>(Op::f(a[i * inner.sa], b[i * inner.sb]));
    }
  };
  const int64_t grain_rows = std::max<int64_t>(1, grain<Op>() / inner.n);
  if constexpr (!::lamina::is_narrow_v<T>) {
    // A short row vector broadcast over the rows of a compact operand (a bias
    // of 16 over (32768, 16)): rows merge into runs of up to kRun elements
    // against the vector repeated, so each call of the loop sees a long run
    // (a call per 16-element row ran at a fifth of the speed).
    constexpr int64_t kRun = 1024;
    const bool rep_b = dims.size() == 2 && dims[0].sb == 0 && dims[0].sa == inner.n;
    const bool rep_a = dims.size() == 2 && dims[0].sa == 0 && dims[0].sb == inner.n;
    if ((rep_a || rep_b) && inner.sa == 1 && inner.sb == 1 && inner.n <= kRun / 4) {
      const int64_t n = inner.n, per = kRun / n;
      parallel_for(rows, grain_rows, [&](int64_t rb, int64_t re) {
        T rep[kRun];
        const T* vec = rep_b ? pb + b_offset : pa + a_offset;
        for (int64_t i = 0; i < per; ++i) std::copy(vec, vec + n, rep + i * n);
        for (int64_t r = rb; r < re; r += per) {
          const int64_t m = std::min(per, re - r);
          if (rep_b) contiguous(pa + a_offset + r * n, rep, po + r * n, m * n);
          else contiguous(rep, pb + b_offset + r * n, po + r * n, m * n);
        }
      });
      return;
    }
  }
  parallel_for(rows, grain_rows, [&](int64_t rb, int64_t re) {
    std::vector<int64_t> idx(lead, 0);
    int64_t ia = a_offset, ib = b_offset, rem = rb;
    for (int k = lead - 1; k >= 0; --k) {
      idx[k] = rem % dims[k].n;
      rem /= dims[k].n;
      ia += idx[k] * dims[k].sa;
      ib += idx[k] * dims[k].sb;
    }
    for (int64_t r = rb; r < re; ++r) {
      row(pa + ia, pb + ib, po + r * inner.n);
      for (int k = lead - 1; k >= 0; --k) {  // odometer step to the next row
        ia += dims[k].sa;
        ib += dims[k].sb;
        if (++idx[k] < dims[k].n) break;
        ia -= dims[k].sa * dims[k].n;
        ib -= dims[k].sb * dims[k].n;
        idx[k] = 0;
      }
    }
  });
}

template <class Op>
void binary_strided(const char* name, const Array& a, const Array& b, Array& out,
                    const Shape& shape, const Shape& a_strides, int64_t a_offset,
                    const Shape& b_strides, int64_t b_offset) {
  require_same_dtype(name, {&a, &b});
  const int64_t size = check_view_bounds(name, a.size(), shape, a_strides, a_offset);
  check_view_bounds(name, b.size(), shape, b_strides, b_offset);
  if (out.size() < size) value_error(name, ": out has ", out.size(), " elements, shape ", shape_str(shape), " needs ", size);
  dispatch_in<ops::kKernelDtypes<Op>>(name, a.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    with_out<Op, T>(name, out, [&](auto otag) {
      using O = elem_t<decltype(otag)>;
      if (size == 0) return;
      if constexpr (std::is_same_v<T, int64_t> && ops::kIntDomain<Op> != ops::IntDomain::Any) {
        std::vector<int64_t> divisors(static_cast<std::size_t>(size));
        gather_view(b, divisors.data(), shape, b_strides, b_offset, name);
        check_domain<Op>(name, divisors.data(), size);
      }
      strided_rows<Op, T, O>(a.data<T>(), b.data<T>(), out.data<O>(), coalesce(shape, a_strides, b_strides),
                             a_offset, b_offset);
    });
  });
}

}  // namespace

// ewise_strided_NAME: one kernel per binary op (interface v2), resolved when
// the module is loaded; no op name is looked at per call. (check_view_bounds
// checks each stride list against shape's length.)
#define LAMINA_STRIDED(OP, NAME)                                                               \
  void ewise_strided_##NAME(const Array& a, const Array& b, Array& out, const Shape& shape,    \
                            const Shape& a_strides, int64_t a_offset, const Shape& b_strides, \
                            int64_t b_offset) {                                               \
    binary_strided<ops::OP>("ewise_strided_" #NAME, a, b, out, shape, a_strides, a_offset,    \
                            b_strides, b_offset);                                             \
  }
LAMINA_EWISE_BINARY_LIST(LAMINA_STRIDED)
#undef LAMINA_STRIDED

#define LAMINA_EWISE(OP, NAME)                                   \
  void ewise_##NAME(const Array& a, const Array& b, Array& out) { \
    binary<ops::OP>("ewise_" #NAME, a, b, out);                  \
  }
LAMINA_EWISE_BINARY_LIST(LAMINA_EWISE)
#undef LAMINA_EWISE

#define LAMINA_SCALAR(OP, NAME)                                      \
  void scalar_##NAME(const Array& a, py::handle value, Array& out) { \
    scalar<ops::OP>("scalar_" #NAME, a, value, out);                 \
  }
LAMINA_SCALAR_BINARY_LIST(LAMINA_SCALAR)
#undef LAMINA_SCALAR

#define LAMINA_UNARY(OP, NAME) \
  void ewise_##NAME(const Array& a, Array& out) { unary<ops::OP>("ewise_" #NAME, a, out); }
LAMINA_EWISE_UNARY_LIST(LAMINA_UNARY)
#undef LAMINA_UNARY

void relu_backward(const Array& x, const Array& g, Array& out) {
  const char* op = "relu_backward";
  require_same_dtype(op, {&x, &g, &out});
  require_dtype_in(op, out.dtype(), kFloats);
  require_operand(op, 0, x, out);
  require_operand(op, 1, g, out);
  dispatch_in<kFloats>(op, out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    const T* xs = x.data<T>();
    const T* gs = g.data<T>();
    T* o = out.data<T>();
    const auto loop = isa_kernels().of<T>().relu_backward;
    parallel_for(out.size(), kCopyGrain,
                 [&](int64_t s, int64_t e) { loop(xs + s, gs + s, o + s, e - s); });
  });
}

void ewise_where(const Array& cond, const Array& a, const Array& b, Array& out) {
  require_same_dtype("ewise_where", {&out, &a, &b});
  if (cond.dtype() != out.dtype() && cond.dtype() != DType::Int64 && cond.dtype() != DType::Bool)
    throw TypeError(cat("ewise_where: condition dtype ", cond.dtype_str(), " must be bool, int64 or ",
                        out.dtype_str()));
  require_operand("ewise_where", 0, cond, out);
  require_operand("ewise_where", 1, a, out);
  require_operand("ewise_where", 2, b, out);
  dispatch_in<kAllDtypes>("ewise_where", out.dtype(), [&](auto tag) {
    using T = elem_t<decltype(tag)>;
    dispatch_in<kAllDtypes>("ewise_where", cond.dtype(), [&](auto ctag) {
      using C = elem_t<decltype(ctag)>;
      where_typed<C, T>(cond.data<C>(), a.data<T>(), b.data<T>(), out.data<T>(), out.size());
    });
  });
}

void ewise_cast(const Array& a, Array& out) {
  require_operand("ewise_cast", 0, a, out);
  dispatch(a.dtype(), [&](auto ftag) {
    using From = elem_t<decltype(ftag)>;
    dispatch(out.dtype(), [&](auto ttag) {
      using To = elem_t<decltype(ttag)>;
      const From* pa = a.data<From>();
      To* po = out.data<To>();
      if constexpr (std::is_same_v<From, To>) {
        if (static_cast<const void*>(pa) != static_cast<void*>(po) && out.size())
          std::memcpy(po, pa, sizeof(To) * out.size());
      } else if constexpr ((::lamina::is_narrow_v<From> && std::is_same_v<To, float>) ||
                           (std::is_same_v<From, float> && ::lamina::is_narrow_v<To>)) {
        // the conversions every float16/bfloat16 op makes: vectorised loops
        parallel_for(out.size(), kCopyGrain, [&](int64_t s, int64_t e) {
          if constexpr (std::is_same_v<To, float>) to_float32(pa + s, po + s, e - s);
          else from_float32(pa + s, po + s, e - s);
        });
      } else {
        parallel_for(out.size(), kCopyGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) po[i] = convert<From, To>(pa[i]);
        });
      }
    });
  });
}

}  // namespace lamina_cpu
