// Kernels of BERT-style encoders between the matrix products (their attention is attention.c's).
// The AVX2 and portable paths give the same bits: every sum runs in 8 lanes (lane l takes
// elements l, l + 8, ...), reduced in hk_hsum's order, and elements past the last whole 8 are
// added after that, one by one, in both paths.
#include "hk_encoder.h"
#include "avx2.h"
#include "exp_approx.h"
#include "gelu.h"
#include "reduce.h"
#include <math.h>

#pragma STDC FP_CONTRACT OFF

static void gelu_portable(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hk_gelu_one(x[i]);
}

// ---- Layer norm -----------------------------------------------------------------------------

static void layer_norm_portable(float *row, const float *residual, const float *weight, const float *bias,
                                int64_t n, float epsilon) {
    const int64_t whole = n - n % 8;
    if (residual) for (int64_t i = 0; i < n; i++) row[i] = row[i] + residual[i];
    float lane[8] = {0};
    for (int64_t i = 0; i < whole; i++) lane[i & 7] = lane[i & 7] + row[i];
    float sum = hk_reduce8(lane);
    for (int64_t i = whole; i < n; i++) sum = sum + row[i];
    const float mean = sum / (float)n;
    for (int l = 0; l < 8; l++) lane[l] = 0;
    for (int64_t i = 0; i < whole; i++) {
        const float d = row[i] - mean;
        lane[i & 7] = fmaf(d, d, lane[i & 7]);
    }
    float squares = hk_reduce8(lane);
    for (int64_t i = whole; i < n; i++) {
        const float d = row[i] - mean;
        squares = fmaf(d, d, squares);
    }
    const float inverse = 1.0f / sqrtf(squares / (float)n + epsilon);
    for (int64_t i = 0; i < n; i++) row[i] = fmaf((row[i] - mean) * inverse, weight[i], bias[i]);
}

#if HK_HAVE_AVX2

static void HK_AVX2 gelu_avx2(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, hk_gelu8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) x[i] = hk_gelu_one(x[i]);
}

static void HK_AVX2 layer_norm_avx2(float *row, const float *residual, const float *weight, const float *bias,
                                    int64_t n, float epsilon) {
    const int64_t whole = n - n % 8;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        __m256 x = _mm256_loadu_ps(row + i);
        if (residual) {
            x = _mm256_add_ps(x, _mm256_loadu_ps(residual + i));
            _mm256_storeu_ps(row + i, x);
        }
        acc = _mm256_add_ps(acc, x);
    }
    if (residual) for (int64_t i = whole; i < n; i++) row[i] = row[i] + residual[i];
    float sum = hk_hsum(acc);
    for (int64_t i = whole; i < n; i++) sum = sum + row[i];
    const float mean = sum / (float)n;
    const __m256 m = _mm256_set1_ps(mean);
    acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(row + i), m);
        acc = _mm256_fmadd_ps(d, d, acc);
    }
    float squares = hk_hsum(acc);
    for (int64_t i = whole; i < n; i++) {
        const float d = row[i] - mean;
        squares = fmaf(d, d, squares);
    }
    const float inverse = 1.0f / sqrtf(squares / (float)n + epsilon);
    const __m256 inv = _mm256_set1_ps(inverse);
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 x = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(row + i), m), inv);
        _mm256_storeu_ps(row + i, _mm256_fmadd_ps(x, _mm256_loadu_ps(weight + i), _mm256_loadu_ps(bias + i)));
    }
    for (int64_t i = whole; i < n; i++) row[i] = fmaf((row[i] - mean) * inverse, weight[i], bias[i]);
}

#endif

void hk_gelu_erf_f32(int isa, float *x, int64_t n) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { gelu_avx2(x, n); return; }
#endif
    gelu_portable(x, n);
}

void hk_layer_norm_f32(int isa, float *row, const float *residual, const float *weight, const float *bias,
                       int64_t n, float epsilon) {
    if (n <= 0) return;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { layer_norm_avx2(row, residual, weight, bias, n, epsilon); return; }
#endif
    layer_norm_portable(row, residual, weight, bias, n, epsilon);
}
