// ewise_avx512.cc: the float32 exp and tanh compiled with -mavx512f/dq/bw/vl
// (ewise_isa.h), called only when active_isa() is avx512.
#define LAMINA_ISA avx512
#include "ewise_isa.h"
