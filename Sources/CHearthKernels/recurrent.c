// Per-token updates of recurrent layers, as llama.cpp's CPU backend computes them.
#include "internal.h"
#include <math.h>
#include "avx2.h"
#include "reduce.h"
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

// One row of a Mamba-2 head's state: each value decays by dA and takes B·x_dt, one fused
// multiply-add over the rounded product B·x_dt (as GCC contracts ssm_scan's multiply and add);
// the output is the row read with C. Slot i mod 32 of the first `whole` values is lane i mod 8
// of accumulator (i mod 32) / 8, as ssm_scan's vector loop keeps them; the rest add one at a
// time.
static float scan_row_portable(float *row, const float *B, const float *C, float x_dt, float dA, int64_t n) {
    const int64_t whole = n & ~(int64_t)31;
    float slot[32] = {0};
    for (int64_t i = 0; i < whole; i++) {
        const float s = fmaf(row[i], dA, B[i] * x_dt);
        slot[i & 31] = fmaf(s, C[i], slot[i & 31]);
        row[i] = s;
    }
    float sum = hk_reduce32(slot);
    for (int64_t i = whole; i < n; i++) {
        const float s = fmaf(row[i], dA, B[i] * x_dt);
        sum = fmaf(s, C[i], sum);
        row[i] = s;
    }
    return sum;
}

#if HK_HAVE_AVX2
HK_AVX2 static float scan_row_avx2(float *row, const float *B, const float *C, float x_dt, float dA, int64_t n) {
    const int64_t whole = n & ~(int64_t)31;
    const __m256 vdA = _mm256_set1_ps(dA), vxdt = _mm256_set1_ps(x_dt);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < whole; i += 32) {
        for (int j = 0; j < 4; j++) {
            const int64_t k = i + 8 * j;
            const __m256 s = _mm256_fmadd_ps(_mm256_loadu_ps(row + k), vdA, _mm256_mul_ps(_mm256_loadu_ps(B + k), vxdt));
            acc[j] = _mm256_fmadd_ps(s, _mm256_loadu_ps(C + k), acc[j]);
            _mm256_storeu_ps(row + k, s);
        }
    }
    float sum = hk_hsum32(acc[0], acc[1], acc[2], acc[3]);
    for (int64_t i = whole; i < n; i++) {
        const float s = hk_fma(row[i], dA, B[i] * x_dt);
        sum = hk_fma(s, C[i], sum);
        row[i] = s;
    }
    return sum;
}
#endif

void hk_mamba2_scan(int isa, float *state, const float *x, const float *B, const float *C, float dt, float dA, float *out,
                    int64_t dim, int64_t n) {
    for (int64_t i = 0; i < dim; i++) {
        const float x_dt = x[i] * dt;
#if HK_HAVE_AVX2
        if (isa == HK_ISA_AVX2) {
            out[i] = scan_row_avx2(state + i * n, B, C, x_dt, dA, n);
            continue;
        }
#endif
        out[i] = scan_row_portable(state + i * n, B, C, x_dt, dA, n);
    }
}
