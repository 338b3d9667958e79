// Per-token updates of recurrent layers, as llama.cpp's CPU backend computes them.
#include "internal.h"
#include <math.h>
#include "avx2.h"
#pragma STDC FP_CONTRACT OFF

// One row of the state (a column of S): decay, the delta rule with key k, the output against q.
// Each element rounds as ggml_vec_scale_f32 and ggml_vec_mad_f32 round it (a product; a fused
// multiply-add); the dot products take ggml_vec_dot_f32's order, which `dot` gives.
static void delta_row_portable(float *row, const float *q, const float *k, float v, float decay, float beta,
                               float scale, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) row[i] *= decay;
    const float delta = (v - hk_portable_dot_f32w(row, k, n)) * beta;
    for (int64_t i = 0; i < n; i++) row[i] = fmaf(k[i], delta, row[i]);
    *out = hk_portable_dot_f32w(row, q, n) * scale;
}

#if HK_HAVE_AVX2
HK_AVX2 static void delta_row_avx2(float *row, const float *q, const float *k, float v, float decay, float beta,
                                   float scale, int64_t n, float *out) {
    const __m256 vd = _mm256_set1_ps(decay);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, _mm256_mul_ps(_mm256_loadu_ps(row + i), vd));
    for (; i < n; i++) row[i] *= decay;
    const float delta = (v - hk_avx2_dot_f32w_ordered(row, k, n)) * beta;
    const __m256 vdelta = _mm256_set1_ps(delta);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(row + i, _mm256_fmadd_ps(_mm256_loadu_ps(k + i), vdelta, _mm256_loadu_ps(row + i)));
    for (; i < n; i++) row[i] = hk_fma(k[i], delta, row[i]);
    *out = hk_avx2_dot_f32w_ordered(row, q, n) * scale;
}
#endif

void hk_gated_delta_rule(int isa, float *state, const float *q, const float *k, const float *v, float decay, float beta,
                         float scale, float *out, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
#if HK_HAVE_AVX2
        if (isa == HK_ISA_AVX2) {
            delta_row_avx2(state + j * n, q, k, v[j], decay, beta, scale, n, out + j);
            continue;
        }
#endif
        delta_row_portable(state + j * n, q, k, v[j], decay, beta, scale, n, out + j);
    }
}
