// ewise_avx2.cc: the elementwise loops and the float32 exp and tanh compiled
// with -mavx2 -mfma (ewise_isa.h), called only when active_isa() >= avx2.
#define LAMINA_ISA avx2
#define LAMINA_ISA_LOOPS 1
#include "ewise_isa.h"
