// ewise_avx2.cc: the elementwise loops and float32 exp compiled with -mavx2
// -mfma (ewise_isa.h), called only when active_isa() >= avx2.
#define LAMINA_ISA avx2
#include "ewise_isa.h"
