// program.cc: ewise_program, a chain of elementwise ops run as one pass.
//
// A captured chain of elementwise kernels (lamina.autograd.compile) reads and
// writes each intermediate's whole buffer once per op. Here the chain runs
// block by block: each block of kBlock elements goes through every op while
// it sits in cache, intermediates live in block-sized temporaries, and only
// the values needed after the chain are written to their buffers. Each op
// calls the same loop (isa_table.h) as its own kernel, on a block, so the
// results are those of the unfused kernels, bit for bit.
//
// code holds 4 ints per instruction: (op, dst, a, b). op numbers the ops of
// lamina/program_ops.h. An operand >= 0 is a buffer of bufs; -1 - r is
// temporary r. b is the second operand of a Binary op, the index of the value
// in scalars of a Scalar op, unused for a Unary op.
#include <lamina/program_ops.h>

#include <algorithm>
#include <vector>

#include "isa_table.h"
#include "kernels.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

enum class Kind { Binary, Scalar, Unary };

struct ProgramOp {
  const char* name;
  Kind kind;
  int id;  // kOpId of the op: a slot of the ISA table's binary or unary loops
};

#define LAMINA_PROGRAM_ENTRY(NAME, OP, KIND) {#NAME, Kind::KIND, ops::kOpId<ops::OP>},
constexpr ProgramOp kProgramOps[] = {LAMINA_PROGRAM_OPS(LAMINA_PROGRAM_ENTRY)};
#undef LAMINA_PROGRAM_ENTRY
constexpr int64_t kNumOps = sizeof(kProgramOps) / sizeof(kProgramOps[0]);
constexpr int64_t kBlock = 1024;  // elements: 8 float32 temporaries fill 32 KiB
constexpr int64_t kMaxTemps = 16;

// One instruction with its loop resolved for the element type.
template <class T>
struct Step {
  BinaryLoop<T, T> binary = nullptr;
  ScalarLoop<T, T> scalar = nullptr;
  UnaryLoop<T> unary = nullptr;
  int64_t dst, a, b;
  T value{};
};

template <class T>
std::vector<Step<T>> resolve(const Code& code, const Scalars& scalars, int64_t buffers,
                             int64_t* temps) {
  const TypeKernels<T>& k = isa_kernels().of<T>();
  std::vector<Step<T>> steps;
  *temps = 0;
  auto operand = [&](int64_t x, const char* what, std::size_t i) {
    if (x >= buffers || x < -kMaxTemps)
      value_error("ewise_program: instruction ", i / 4, ": ", what, " ", x, " is neither a "
                  "buffer (0..", buffers - 1, ") nor a temporary (-1..-", kMaxTemps, ")");
    if (x < 0) *temps = std::max(*temps, -x);
    return x;
  };
  const std::size_t size = static_cast<std::size_t>(code.size());
  for (std::size_t i = 0; i < size; i += 4) {
    const int64_t op = code.at(i);
    if (op < 0 || op >= kNumOps)
      value_error("ewise_program: instruction ", i / 4, ": op ", op, " is out of range (0..",
                  kNumOps - 1, ")");
    const ProgramOp& p = kProgramOps[op];
    Step<T> s;
    s.dst = operand(code.at(i + 1), "destination", i);
    s.a = operand(code.at(i + 2), "operand", i);
    if (p.kind == Kind::Binary) {
      s.b = operand(code.at(i + 3), "operand", i);
      s.binary = k.binary.ewise[p.id];
    } else if (p.kind == Kind::Scalar) {
      const int64_t v = code.at(i + 3);
      if (v < 0 || v >= static_cast<int64_t>(scalars.size()))
        value_error("ewise_program: instruction ", i / 4, ": value ", v, " is out of range "
                    "for ", scalars.size(), " scalars");
      s.value = static_cast<T>(scalars.at(v));  // as scalar_OP converts its value
      s.scalar = k.binary.scalar[p.id];
    } else {
      s.unary = k.unary[p.id];
    }
    if (!s.binary && !s.scalar && !s.unary)
      throw TypeError(cat("ewise_program: ", p.name, " has no ", dtype_name(dtype_of<T>()),
                          " kernel"));
    steps.push_back(s);
  }
  return steps;
}

template <class T>
void run(const std::vector<Step<T>>& steps, const std::vector<Array*>& bufs, int64_t temps,
         int64_t n) {
  std::vector<T*> data;
  for (Array* b : bufs) data.push_back(b->data<T>());
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int64_t width = std::min(n, kBlock);  // a temporary's length: one block at most
  parallel_for(blocks, std::max<int64_t>(1, 16384 / kBlock), [&](int64_t b0, int64_t b1) {
    std::vector<T> scratch(static_cast<std::size_t>(std::max<int64_t>(temps, 1) * width));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t start = blk * kBlock, len = std::min(kBlock, n - start);
      auto at = [&](int64_t x) {
        return x >= 0 ? data[static_cast<std::size_t>(x)] + start : scratch.data() + (-1 - x) * width;
      };
      for (const Step<T>& s : steps) {
        if (s.binary) s.binary(at(s.a), at(s.b), at(s.dst), len);
        else if (s.scalar) s.scalar(at(s.a), s.value, at(s.dst), len);
        else s.unary(at(s.a), at(s.dst), len);
      }
    }
  }, 1);
}

}  // namespace

void ewise_program(const std::vector<Array*>& bufs, const Code& code, const Scalars& scalars,
                   int64_t n) {
  if (bufs.empty()) value_error("ewise_program: no buffers");
  if (code.size() % 4) value_error("ewise_program: code has ", code.size(), " ints, not 4 per instruction");
  if (n < 0) value_error("ewise_program: n must be >= 0, got ", n);
  const DType dtype = bufs[0]->dtype();
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    if (bufs[i]->dtype() != dtype)
      throw TypeError(cat("ewise_program: buffer ", i, " is ", bufs[i]->dtype_str(), ", buffer 0 is ",
                          bufs[0]->dtype_str(), "; a program runs on one dtype"));
    if (bufs[i]->size() < n)
      value_error("ewise_program: buffer ", i, " has ", bufs[i]->size(), " elements, the program ", n);
  }
  int64_t temps = 0;
  if (dtype == DType::Float32) {
    const auto steps = resolve<float>(code, scalars, static_cast<int64_t>(bufs.size()), &temps);
    if (n) run<float>(steps, bufs, temps, n);
  } else if (dtype == DType::Float64) {
    const auto steps = resolve<double>(code, scalars, static_cast<int64_t>(bufs.size()), &temps);
    if (n) run<double>(steps, bufs, temps, n);
  } else {
    throw TypeError(cat("ewise_program: buffers are ", bufs[0]->dtype_str(), "; programs run on "
                        "float32 and float64"));
  }
}

}  // namespace lamina_cpu
