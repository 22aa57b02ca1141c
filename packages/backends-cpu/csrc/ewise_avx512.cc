// ewise_avx512.cc: the elementwise loops and float32 exp compiled with
// -mavx512f/dq/bw/vl (ewise_isa.h), called only when active_isa() is avx512.
#define LAMINA_ISA avx512
#include "ewise_isa.h"
