// ewise_avx512.cc: the float32 exp, tanh and erf compiled with
// -mavx512f/dq/bw/vl (ewise_isa.h), in the avx512 table.
#define LAMINA_ISA avx512
#include "ewise_isa.h"
