// reduce_avx2.cc: the column sums of reduce_sum_axis and the row loops of
// softmax_last, layer_norm_last and max/min (reduce_isa.h) compiled with
// -mavx2 -mfma, in the avx2 table.
#define LAMINA_ISA avx2
#include "reduce_isa.h"
