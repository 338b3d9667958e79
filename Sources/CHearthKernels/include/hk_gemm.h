#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Dense float matrix product with bias, for encoder models kept in F32:
/// out[c * out_stride + r] = bias[r] + sum_k w[r * w_stride + k] * x[c * x_stride + k]
/// for r in r0..<r1 and c in 0..<cols. `bias` may be NULL.
void hk_gemm_f32(int isa, const float *w, int64_t w_stride, int64_t r0, int64_t r1,
                 const float *x, int64_t x_stride, int64_t cols, int64_t k,
                 const float *bias, float *out, int64_t out_stride);

#ifdef __cplusplus
}
#endif
