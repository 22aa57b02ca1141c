// reduce_avx512.cc: the column sums of reduce_sum_axis and the row loops of
// softmax_last, layer_norm_last and max/min (reduce_isa.h) compiled with
// -mavx512f/dq/bw/vl, in the avx512 table.
#define LAMINA_ISA avx512
#include "reduce_isa.h"
