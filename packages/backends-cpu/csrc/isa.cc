// isa.cc: the instruction-set path (see isa.h). AVX2 means AVX2 + FMA;
// AVX-512 means F + DQ + BW + VL (Skylake-X / Zen 4 and later), the subsets
// the -mavx512* translation units are compiled for.
#include "isa.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "isa_table.h"
#include "threading.h"

namespace lamina_cpu {
namespace {

Isa detect() {
#if (defined(LAMINA_HAVE_AVX2_TU) || defined(LAMINA_HAVE_AVX512_TU)) && \
    (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  Isa best = Isa::Generic;
#if defined(LAMINA_HAVE_AVX2_TU)
  // (every AVX2 CPU has F16C, which the float16 conversions use; checked anyway)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    best = Isa::Avx2;
#endif
#if defined(LAMINA_HAVE_AVX512_TU)
  if (best == Isa::Avx2 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    best = Isa::Avx512;
#endif
  return best;
#else
  return Isa::Generic;
#endif
}

bool parse(const std::string& name, Isa* out) {
  for (Isa i : {Isa::Generic, Isa::Avx2, Isa::Avx512})
    if (name == isa_name(i)) {
      *out = i;
      return true;
    }
  return false;
}

std::mutex warn_mu;
std::string& warnings() {
  static std::string w;
  return w;
}

Isa initial() {
  const Isa best = cpu_isa();
  const char* env = std::getenv("LAMINA_CPU_ISA");
  if (env == nullptr || env[0] == '\0') return best;
  Isa want;
  if (!parse(env, &want)) {
    add_env_warning(std::string("LAMINA_CPU_ISA='") + env +
                    "' is not one of generic, avx2, avx512; using " + isa_name(best));
    return best;
  }
  if (want > best) {
    add_env_warning(std::string("LAMINA_CPU_ISA=") + env + " is more than this CPU (or build) " +
                    "supports; using " + isa_name(best));
    return best;
  }
  return want;
}

std::atomic<int>& current() {
  static std::atomic<int> isa{static_cast<int>(initial())};
  return isa;
}

// The table of isa: the baseline kernels, overwritten by those of each ISA up
// to isa, so an entry an ISA does not compile keeps the one below it.
IsaKernels build_table(Isa isa) {
  IsaKernels k;
  base::fill_narrow(k);
  base::fill_ewise(k);
  base::fill_reduce(k);
  base::fill_gemm(k);
#if defined(LAMINA_HAVE_AVX2_TU)
  if (isa >= Isa::Avx2) {
    avx2::fill_narrow(k);
    avx2::fill_ewise(k);
    avx2::fill_reduce(k);
    avx2::fill_gemm(k);
  }
#endif
#if defined(LAMINA_HAVE_AVX512_TU)
  if (isa >= Isa::Avx512) {
    avx512::fill_ewise(k);
    avx512::fill_reduce(k);
    avx512::fill_gemm(k);
#if defined(LAMINA_HAVE_BF16_TU)
    avx512::fill_bf16_gemm(k);
#endif
  }
#endif
  (void)isa;
  return k;
}

}  // namespace

const IsaKernels& isa_kernels() {
  // Built once, and only for the ISAs this CPU runs: a fill function is
  // compiled with its ISA's flags and may use its instructions itself.
  static const std::array<IsaKernels, 3> tables = [] {
    std::array<IsaKernels, 3> t{};
    for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512})
      if (isa <= cpu_isa()) t[static_cast<int>(isa)] = build_table(isa);
    return t;
  }();
  return tables[static_cast<int>(active_isa())];
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "generic";
  }
}

Isa cpu_isa() {
  static const Isa best = detect();
  return best;
}

Isa active_isa() { return static_cast<Isa>(current().load(std::memory_order_relaxed)); }

void set_isa(const std::string& name) {
  Isa want;
  if (!parse(name, &want))
    throw std::invalid_argument("set_isa: unknown ISA '" + name +
                                "'; expected generic, avx2 or avx512");
  if (want > cpu_isa())
    throw std::invalid_argument(std::string("set_isa: this CPU (or build) supports up to ") +
                                isa_name(cpu_isa()) + ", cannot run " + name);
  current().store(static_cast<int>(want), std::memory_order_relaxed);
}

std::string env_warnings() {
  active_isa();  // parse LAMINA_CPU_ISA, LAMINA_NUM_THREADS, LAMINA_SPIN_US, LAMINA_YIELD_US now
  num_threads();
  spin_microseconds();
  yield_microseconds();
  std::lock_guard<std::mutex> lock(warn_mu);
  return warnings();
}

void add_env_warning(const std::string& line) {
  std::lock_guard<std::mutex> lock(warn_mu);
  if (!warnings().empty()) warnings() += "\n";
  warnings() += line;
}

}  // namespace lamina_cpu
