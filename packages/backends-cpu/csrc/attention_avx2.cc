// attention_avx2.cc: attention.cc's row loops (attention_rows.h) compiled
// with -mavx2 -mfma, for the avx2 and avx512 paths.
#include <immintrin.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "attention.h"

namespace lamina_cpu::avx2 {

#include "simd.h"
#include "attention_rows.h"

AttentionRows<float> attention_rows_f32() { return attention_rows<float>(); }
AttentionRows<double> attention_rows_f64() { return attention_rows<double>(); }

}  // namespace lamina_cpu::avx2
