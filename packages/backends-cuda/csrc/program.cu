// program.cu: ewise_program, a chain of elementwise ops run as one kernel.
//
// A captured chain of elementwise kernels (lamina.autograd.compile) reads and
// writes each intermediate's whole buffer once per op. Here one thread takes
// an element through every instruction: temporaries live in the thread's own
// array, and only the values needed after the chain reach memory. Each op is
// the functor its own kernel calls (ewise.cuh), on the same values, so the
// results are those of the unfused kernels, bit for bit (an instruction's
// result is stored before the next reads it, so nothing contracts across two
// of them).
//
// code holds 4 ints per instruction: (op, dst, a, b). op numbers the ops of
// lamina/program_ops.h. An operand >= 0 is a buffer of bufs; -1 - r is
// temporary r. b is the second operand of a Binary op, the index of the value
// in scalars of a Scalar op, unused for a Unary op. The program travels in
// the kernel's parameters, so it has at most kMaxSteps instructions over
// kMaxBuffers buffers; a longer one runs in pieces of whole instructions, its
// temporaries then kept in global scratch between pieces.
#include <lamina/program_ops.h>

#include <algorithm>
#include <vector>

#include "ewise.cuh"

namespace lamina_cuda {
namespace {

// The reversed scalar forms: out = value OP a.
struct Rsub {
  template <class T> __device__ T operator()(T a, T v) const { return Sub{}(v, a); }
};
struct Rdiv {
  template <class T> __device__ T operator()(T a, T v) const { return Div{}(v, a); }
};
struct Rpower {
  template <class T> __device__ T operator()(T a, T v) const { return Power{}(v, a); }
};

enum class Kind { Binary, Scalar, Unary };

#define LAMINA_PROGRAM_ID(NAME, OP, KIND) k_##NAME,
enum OpId : int { LAMINA_PROGRAM_OPS(LAMINA_PROGRAM_ID) kNumOps };
#undef LAMINA_PROGRAM_ID

#define LAMINA_PROGRAM_KIND(NAME, OP, KIND) Kind::KIND,
constexpr Kind kKinds[] = {LAMINA_PROGRAM_OPS(LAMINA_PROGRAM_KIND)};
#undef LAMINA_PROGRAM_KIND

constexpr int kMaxSteps = 48, kMaxBuffers = 32, kMaxTemps = 16;

// One piece of a program, passed by value (under the 4 KiB of kernel parameters).
template <class T>
struct Piece {
  T* bufs[kMaxBuffers + kMaxTemps];  // the buffers, then the temporaries' scratch, if any
  T value[kMaxSteps];
  int op[kMaxSteps], dst[kMaxSteps], a[kMaxSteps], b[kMaxSteps];
  int steps, buffers;
  bool scratch;  // temporaries live in bufs[buffers + r], not in registers
};

template <class T>
__device__ __forceinline__ T* slot(const Piece<T>& p, int x, T* temps, int64_t i) {
  if (x >= 0) return p.bufs[x] + i;
  return p.scratch ? p.bufs[p.buffers - 1 - x] + i : temps + (-1 - x);
}

template <class T>
__global__ void ewise_program_kernel(const Piece<T> p, int64_t n) {
  T temps[kMaxTemps];
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = start; i < n; i += step) {
    for (int k = 0; k < p.steps; ++k) {
      const T x = *slot(p, p.a[k], temps, i);
      T r{};
      switch (p.op[k]) {
#define LAMINA_PROGRAM_CASE(NAME, OP, KIND)                                       \
  case k_##NAME:                                                                  \
    if constexpr (Kind::KIND == Kind::Binary) r = OP{}(x, *slot(p, p.b[k], temps, i)); \
    else if constexpr (Kind::KIND == Kind::Scalar) r = OP{}(x, p.value[k]);      \
    else r = OP{}(x);                                                             \
    break;
        LAMINA_PROGRAM_OPS(LAMINA_PROGRAM_CASE)
#undef LAMINA_PROGRAM_CASE
        default: break;
      }
      *slot(p, p.dst[k], temps, i) = r;
    }
  }
}

struct Instruction {
  int op, dst, a, b;
};

template <class T>
void run(const std::vector<Array*>& bufs, const std::vector<Instruction>& code,
         const std::vector<double>& scalars, int temps, int64_t n, const Launch& ctx) {
  const int buffers = static_cast<int>(bufs.size());
  const bool pieces = static_cast<int>(code.size()) > kMaxSteps;
  // a long program's temporaries, n elements each, between its pieces
  const std::size_t each = static_cast<std::size_t>(n);
  Scratch scratch(ctx.device, pieces ? each * static_cast<std::size_t>(temps) * sizeof(T) : 0);
  Piece<T> p{};
  for (int i = 0; i < buffers; ++i) p.bufs[i] = bufs[static_cast<std::size_t>(i)]->data<T>();
  for (int r = 0; pieces && r < temps; ++r) p.bufs[buffers + r] = scratch.as<T>() + r * each;
  p.buffers = buffers;
  p.scratch = pieces;
  for (std::size_t first = 0; first < code.size(); first += kMaxSteps) {
    const std::size_t last = std::min(code.size(), first + kMaxSteps);
    p.steps = static_cast<int>(last - first);
    for (std::size_t k = first; k < last; ++k) {
      const Instruction& s = code[k];
      const int j = static_cast<int>(k - first);
      p.op[j] = s.op;
      p.dst[j] = s.dst;
      p.a[j] = s.a;
      p.b[j] = s.b;
      // as scalar_OP converts its value
      p.value[j] = kKinds[s.op] == Kind::Scalar ? static_cast<T>(scalars[s.b]) : T(0);
    }
    launch_kernel(&ewise_program_kernel<T>, grid_for(n, ctx.device), kThreads, 0, ctx.stream,
                  p, n);
    check_launch("ewise_program_kernel", ctx.stream);
  }
}

}  // namespace

void ewise_program(const std::vector<Array*>& bufs, const std::vector<int64_t>& code,
                   const std::vector<double>& scalars, int64_t n) {
  if (bufs.empty()) value_error("ewise_program: no buffers");
  if (code.size() % 4)
    value_error("ewise_program: code has ", code.size(), " ints, not 4 per instruction");
  if (n < 0) value_error("ewise_program: n must be >= 0, got ", n);
  if (static_cast<int64_t>(bufs.size()) > kMaxBuffers)
    value_error("ewise_program: ", bufs.size(), " buffers; a program takes at most ",
                kMaxBuffers);
  const DType dtype = bufs[0]->dtype();
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    if (bufs[i]->dtype() != dtype)
      throw TypeError(cat("ewise_program: buffer ", i, " is ", bufs[i]->dtype_str(),
                          ", buffer 0 is ", bufs[0]->dtype_str(), "; a program runs on one dtype"));
    if (bufs[i]->size() < n)
      value_error("ewise_program: buffer ", i, " has ", bufs[i]->size(),
                  " elements, the program ", n);
    if (bufs[i]->device() != bufs[0]->device())
      value_error("ewise_program: buffers are on different devices, cuda:", bufs[0]->device(),
                  " (buffer 0) and cuda:", bufs[i]->device(), " (buffer ", i, ")");
  }
  if (dtype != DType::Float32 && dtype != DType::Float64)
    throw TypeError(cat("ewise_program: buffers are ", bufs[0]->dtype_str(),
                        "; programs run on float32 and float64"));
  const int64_t buffers = static_cast<int64_t>(bufs.size());
  int temps = 0;
  std::vector<Instruction> steps;
  auto operand = [&](int64_t x, const char* what, std::size_t i) {
    if (x >= buffers || x < -kMaxTemps)
      value_error("ewise_program: instruction ", i / 4, ": ", what, " ", x, " is neither a "
                  "buffer (0..", buffers - 1, ") nor a temporary (-1..-", kMaxTemps, ")");
    if (x < 0) temps = std::max(temps, static_cast<int>(-x));
    return static_cast<int>(x);
  };
  for (std::size_t i = 0; i < code.size(); i += 4) {
    const int64_t op = code[i];
    if (op < 0 || op >= kNumOps)
      value_error("ewise_program: instruction ", i / 4, ": op ", op, " is out of range (0..",
                  kNumOps - 1, ")");
    Instruction s{static_cast<int>(op), operand(code[i + 1], "destination", i),
                  operand(code[i + 2], "operand", i), 0};
    const Kind kind = kKinds[op];
    if (kind == Kind::Binary) {
      s.b = operand(code[i + 3], "operand", i);
    } else if (kind == Kind::Scalar) {
      const int64_t v = code[i + 3];
      if (v < 0 || v >= static_cast<int64_t>(scalars.size()))
        value_error("ewise_program: instruction ", i / 4, ": value ", v, " is out of range "
                    "for ", scalars.size(), " scalars");
      s.b = static_cast<int>(v);
    }
    steps.push_back(s);
  }
  const Launch ctx = launch_on("ewise_program", {bufs[0]});
  if (n == 0 || steps.empty()) return;
  if (dtype == DType::Float32) run<float>(bufs, steps, scalars, temps, n, ctx);
  else run<double>(bufs, steps, scalars, temps, n, ctx);
}

}  // namespace lamina_cuda
