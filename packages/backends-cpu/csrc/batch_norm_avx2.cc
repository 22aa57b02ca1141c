// batch_norm_avx2.cc: batch_norm.cc's per-channel loops (batch_norm_loops.h)
// compiled with -mavx2 -mfma, for the avx2 and avx512 paths.
#include "batch_norm.h"

#include <algorithm>
#include <vector>

namespace lamina_cpu::avx2 {

#include "batch_norm_loops.h"

BatchNormLoops<float> batch_norm_loops_f32() { return batch_norm_loops<float>(); }
BatchNormLoops<double> batch_norm_loops_f64() { return batch_norm_loops<double>(); }

}  // namespace lamina_cpu::avx2
