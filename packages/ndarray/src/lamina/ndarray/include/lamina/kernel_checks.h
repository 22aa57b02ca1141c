// lamina/kernel_checks.h: the argument checks every compiled Lamina backend
// makes before a kernel touches memory, written once over plain sizes
// (int64_t, Shape) so that each backend keeps its own Array and DType types.
//
// Shipped by lamina-ndarray, which declares the backend interface these
// checks guard; a backend's build finds it with
//   python -c "import lamina.ndarray; print(lamina.ndarray.get_include())"
// (or the sibling source tree in this repository) and includes it as
// "lamina/kernel_checks.h". Header-only C++17: no pybind11 and no CUDA, so it
// compiles under g++, nvcc (host code) and the HIP-CPU emulated build.
//
// Errors: std::invalid_argument is Python's ValueError (pybind11's default);
// a backend's bindings map IndexError, TypeError and ZeroDivisionError below
// onto the Python types of the same name. Messages name the op first; tests
// match them, so change them only together with those tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace lamina::checks {

using Shape = std::vector<int64_t>;

// Distinct classes so that a kernel file can raise them without pybind11.
struct IndexError : std::out_of_range {
  using std::out_of_range::out_of_range;
};
struct TypeError : std::domain_error {
  using std::domain_error::domain_error;
};
struct ZeroDivisionError : std::domain_error {
  using std::domain_error::domain_error;
};

// One argument of cat appended to s: text as it is, a char as a character,
// integers in decimal and floating point as "%g" (what an ostream writes).
template <class T>
void append_to(std::string& s, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    s += v ? '1' : '0';
  } else if constexpr (std::is_same_v<T, char>) {
    s += v;
  } else if constexpr (std::is_integral_v<T>) {
    s += std::to_string(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    s += buf;
  } else {
    s += std::string_view(v);
  }
}

// The arguments joined into one string: cat(op, ": size ", n). No iostreams:
// on an H100 machine (nvcc 13.0 with GCC 13) the cuda module segfaulted inside
// basic_ostream::_M_insert<long> while building an error message, so every
// bad argument with a number in its message killed the process. The emulated
// and cpu builds never showed it, nor did a small nvcc module streaming a long
// the same way, so the cause inside the module is not pinned down; this form
// touches no locale and ran the whole GPU suite clean there.
template <class... Args>
std::string cat(const Args&... args) {
  std::string s;
  (append_to(s, args), ...);
  return s;
}

template <class... Args>
[[noreturn]] void value_error(const Args&... args) {
  throw std::invalid_argument(cat(args...));
}

// "(2, 3)", "(4,)", "()": a shape or strides as Python prints a tuple.
inline std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// a*b (a+b) with overflow reported as a ValueError naming op. Inline on
// purpose: defined in another file, GCC's link-time optimisation dropped calls
// whose result was unused (a bounds check kept only for its error).
inline int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) value_error(op, ": size ", a, " * ", b, " overflows int64");
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    value_error(op, ": offset ", a, " + ", b, " overflows int64");
  return r;
}

// Product of dims, each >= 0, checked for overflow.
inline int64_t checked_prod(const Shape& dims, const char* op) {
  int64_t r = 1;
  for (int64_t d : dims) {
    if (d < 0) value_error(op, ": negative dimension in ", shape_str(dims));
    r = checked_mul(r, d, op);
  }
  return r;
}

// ValueError naming op and what unless x >= 0.
inline void require_nonneg(const char* op, const char* what, int64_t x) {
  if (x < 0) value_error(op, ": ", what, " must be >= 0, got ", x);
}

// ---------------------------------------------------------------- indexing
// The layout of index_gather, index_scatter_add and index_copy: a buffer of
// buffer_size elements viewed as compact (outer, axis_size, inner), indexed
// along its middle axis by an index buffer of dtype idx_dtype (TypeError
// unless "int64"). Returns outer * axis_size * inner. The values of the
// indices are each backend's check: they live in its memory.
inline int64_t check_index_layout(const char* op, int64_t buffer_size,
                                  const std::string& idx_dtype, int64_t outer,
                                  int64_t axis_size, int64_t inner) {
  if (idx_dtype != "int64") throw TypeError(cat(op, ": indices must be int64, got ", idx_dtype));
  require_nonneg(op, "outer", outer);
  require_nonneg(op, "axis_size", axis_size);
  require_nonneg(op, "inner", inner);
  const int64_t need = checked_mul(checked_mul(outer, axis_size, op), inner, op);
  if (buffer_size < need)
    value_error(op, ": buffer has ", buffer_size, " elements, layout needs ", need);
  return need;
}

// ---------------------------------------------------------------- matmul
// The arguments of matmul_batched_strided: out (prod(batch), m, p) compact of
// out_size elements; a and b are views with one stride per batch dim plus
// (row, column) strides, all >= 0. Returns prod(batch). Whether the views fit
// their buffers is require_batched_view_fits, once the sizes are known good.
inline int64_t check_batched_strided(const char* op, const Shape& batch, int64_t m, int64_t n,
                                     int64_t p, int64_t a_offset, const Shape& a_strides,
                                     int64_t b_offset, const Shape& b_strides, int64_t out_size) {
  const std::size_t nb = batch.size();
  if (a_strides.size() != nb + 2 || b_strides.size() != nb + 2)
    value_error(op, ": a batch of ", nb, " dims needs ", nb + 2, " strides per operand, got ",
                shape_str(a_strides), " and ", shape_str(b_strides));
  for (int64_t x : {m, n, p, a_offset, b_offset})
    if (x < 0) value_error(op, ": sizes and offsets must be >= 0, got m=", m, ", n=", n, ", p=", p,
                           ", a_offset=", a_offset, ", b_offset=", b_offset);
  for (const Shape* s : {&batch, &a_strides, &b_strides})
    for (int64_t x : *s)
      if (x < 0) value_error(op, ": batch dims and strides must be >= 0, got batch ",
                             shape_str(batch), ", strides ", shape_str(a_strides), " and ",
                             shape_str(b_strides));
  const int64_t count = checked_prod(batch, op);
  if (out_size < checked_mul(checked_mul(count, m, op), p, op))
    value_error(op, ": out has ", out_size, " elements, expected ", count, "x", m, "x", p);
  return count;
}

// ValueError unless the batch of rows x cols matrices of the view (offset;
// strides as check_batched_strided takes them) lies inside a buffer of
// buffer_size elements; `name` ("a", "b") names the view. The last element
// reaches farthest (strides are >= 0); every step of reaching it is checked.
// Call only when the view holds an element (prod(batch), rows, cols > 0).
inline void require_batched_view_fits(const char* op, const char* name, int64_t offset,
                                      const Shape& strides, const Shape& batch, int64_t rows,
                                      int64_t cols, int64_t buffer_size) {
  const std::size_t nb = batch.size();
  int64_t last = offset;
  for (std::size_t k = 0; k < nb; ++k)
    last = checked_add(last, checked_mul(batch[k] - 1, strides[k], op), op);
  last = checked_add(last, checked_mul(rows - 1, strides[nb], op), op);
  last = checked_add(last, checked_mul(cols - 1, strides[nb + 1], op), op);
  if (last >= buffer_size)
    value_error(op, ": ", name, " view (offset ", offset, ", strides ", shape_str(strides),
                ") of ", shape_str(batch), " x ", rows, "x", cols, " does not fit a buffer of ",
                buffer_size);
}

// The offsets of the count = prod(batch) matrices of a view (offset; strides
// as check_batched_strided takes them) into out[0, count), in row-major batch
// order. Call after require_batched_view_fits: every offset then lies in the
// buffer, and the walk never steps past the view, so no sum can overflow.
inline void batch_offsets(const Shape& batch, int64_t count, int64_t offset,
                          const Shape& strides, int64_t* out) {
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t i = 0, at = offset; i < count; ++i) {
    out[i] = at;
    for (std::size_t k = batch.size(); k-- > 0;) {  // an odometer over the batch index
      if (++idx[k] < batch[k]) {
        at += strides[k];
        break;
      }
      at -= strides[k] * (batch[k] - 1);
      idx[k] = 0;
    }
  }
}

// ---------------------------------------------------------------- recurrent cells
// The layout of lstm_cell, gru_cell and their backward kernels: one time step
// `step` of compact per-sequence buffers. Each buffer holds rows of
// cols * hidden elements; RnnRows says how many rows the step reaches: one
// (N, cols*H) block (Step), blocks 0..step of an (L, N, cols*H) buffer
// (Sequence), blocks 0..step+1 of the (L+1, N, cols*H) states (States), or a
// single row without the batch (Bias).
enum class RnnRows { Step, Sequence, States, Bias };

struct RnnBuffer {
  const char* name;
  int64_t size;  // elements in the buffer
  RnnRows rows;
  int64_t cols;  // row width in units of hidden
};

// ValueError naming op unless step, batch and hidden are >= 0 and every
// buffer is large enough for the step (sizes in checked arithmetic).
inline void check_rnn_cell(const char* op, int64_t step, int64_t batch, int64_t hidden,
                           std::initializer_list<RnnBuffer> buffers) {
  require_nonneg(op, "step", step);
  require_nonneg(op, "batch", batch);
  require_nonneg(op, "hidden", hidden);
  for (const RnnBuffer& b : buffers) {
    const int64_t blocks = b.rows == RnnRows::Sequence ? checked_add(step, 1, op)
                           : b.rows == RnnRows::States ? checked_add(step, 2, op) : 1;
    const int64_t row = checked_mul(b.cols, hidden, op);
    const int64_t need = b.rows == RnnRows::Bias
                             ? row : checked_mul(checked_mul(blocks, batch, op), row, op);
    if (b.size < need)
      value_error(op, ": ", b.name, " has ", b.size, " elements, step ", step, " of batch ", batch,
                  " with hidden ", hidden, " needs ", need, " (", blocks, " block(s) of ",
                  b.rows == RnnRows::Bias ? 1 : batch, "x", row, ")");
  }
}

// ---------------------------------------------------------------- row kernels
// log_softmax_backward_last(g, out, grad_a, size): grad_a holds whole rows of
// size elements (none when size is 0), g and out at least as many. Returns the
// number of rows.
inline int64_t check_log_softmax_backward(const char* op, int64_t g_size, int64_t out_size,
                                          int64_t grad_size, int64_t size) {
  require_nonneg(op, "size", size);
  const int64_t rows = size ? grad_size / size : 0;
  if ((size && grad_size % size) || (!size && grad_size))
    value_error(op, ": grad_a has ", grad_size, " elements, not a multiple of size ", size);
  if (g_size < rows * size || out_size < rows * size)
    value_error(op, ": g and out have ", g_size, " and ", out_size, " elements, expected ", rows,
                "x", size);
  return rows;
}

// ---------------------------------------------------------------- batch norm
// The layout of batch_norm_stats, batch_norm_apply and batch_norm_backward:
// buffers read from element 0 as compact (n, c, s) (full) or (c,) (per channel).
struct BatchNormBuffer {
  const char* name;
  int64_t size;  // elements in the buffer
  bool full;     // (n, c, s), else (c,)
};

// ValueError naming op unless n, c and s are >= 0 and every buffer holds its
// part of the layout; returns n * c * s (checked arithmetic).
inline int64_t check_batch_norm(const char* op, int64_t n, int64_t c, int64_t s,
                                std::initializer_list<BatchNormBuffer> buffers) {
  require_nonneg(op, "n", n);
  require_nonneg(op, "c", c);
  require_nonneg(op, "s", s);
  const int64_t total = checked_mul(checked_mul(n, c, op), s, op);
  for (const BatchNormBuffer& b : buffers) {
    const int64_t need = b.full ? total : c;
    if (b.size < need)
      value_error(op, ": ", b.name, " has ", b.size, " elements, (", n, ", ", c, ", ", s,
                  ") needs ", need);
  }
  return total;
}

// ----------------------------------------------------------------- attention
// The layout of attention and attention_backward (lamina.ndarray._numpy_attention):
// buffers read from element 0 as compact (batch, rows, cols) blocks.
enum class AttentionLayout { LE, SE, SV, LV, L, Mask };

struct AttentionBuffer {
  const char* name;
  int64_t size;  // elements in the buffer
  AttentionLayout layout;
};

// ValueError naming op unless batch, L, S, E and Ev are >= 0, mask_batch is 0
// (no mask: the mask buffer is not read), 1 or batch, and every buffer holds
// its layout: LE (batch, L, E), SE (batch, S, E), SV (batch, S, Ev), LV
// (batch, L, Ev), L (batch, L), Mask (mask_batch, L, S). Checked arithmetic.
inline void check_attention(const char* op, int64_t batch, int64_t L, int64_t S, int64_t E,
                            int64_t Ev, int64_t mask_batch,
                            std::initializer_list<AttentionBuffer> buffers) {
  require_nonneg(op, "batch", batch);
  require_nonneg(op, "L", L);
  require_nonneg(op, "S", S);
  require_nonneg(op, "E", E);
  require_nonneg(op, "Ev", Ev);
  if (mask_batch != 0 && mask_batch != 1 && mask_batch != batch)
    value_error(op, ": mask_batch must be 0 (no mask), 1 or batch (", batch, "), got ",
                mask_batch);
  for (const AttentionBuffer& b : buffers) {
    int64_t blocks = batch, rows = L, cols = E;
    switch (b.layout) {
      case AttentionLayout::LE: break;
      case AttentionLayout::SE: rows = S; break;
      case AttentionLayout::SV: rows = S; cols = Ev; break;
      case AttentionLayout::LV: cols = Ev; break;
      case AttentionLayout::L: cols = 1; break;
      case AttentionLayout::Mask: blocks = mask_batch; cols = S; break;
    }
    const int64_t need = checked_mul(checked_mul(blocks, rows, op), cols, op);
    if (b.size < need)
      value_error(op, ": ", b.name, " has ", b.size, " elements, (batch ", batch, ", L ", L,
                  ", S ", S, ", E ", E, ", Ev ", Ev, ") needs ", need);
  }
}

}  // namespace lamina::checks
