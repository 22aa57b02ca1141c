// isa.h: which instruction set the kernels run on. The CPU's best path is
// found once (__builtin_cpu_supports); LAMINA_CPU_ISA=generic|avx2|avx512
// asks for a lower one (a higher one than the CPU has is capped, with a
// warning), and set_isa switches at run time (tests run every path in one
// process). Kernels reach the per-ISA code through the active ISA's table
// (isa_table.h's isa_kernels()), read once per call.
#pragma once

#include <string>

namespace lamina_cpu {

enum class Isa : int { Generic = 0, Avx2 = 1, Avx512 = 2 };

// "generic", "avx2" or "avx512".
const char* isa_name(Isa isa);
// The best path this build and this CPU support.
Isa cpu_isa();
// The path the kernels take now.
Isa active_isa();
// Switches the path; ValueError for an unknown name or one the CPU lacks.
void set_isa(const std::string& name);
// Why LAMINA_CPU_ISA (or LAMINA_NUM_THREADS) was not honoured as written, or
// "": the Python package turns it into a RuntimeWarning at import.
std::string env_warnings();
// Adds a line to env_warnings() (threading.cc uses it for LAMINA_NUM_THREADS).
void add_env_warning(const std::string& line);

}  // namespace lamina_cpu
