// ewise_avx2.cc: the elementwise loops and the float32 exp, tanh and erf
// compiled with -mavx2 -mfma (ewise_isa.h), in the avx2 table.
#define LAMINA_ISA avx2
#define LAMINA_ISA_LOOPS 1
#include "ewise_isa.h"
