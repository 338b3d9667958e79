// GELU with the error function, one float or eight at a time (the same bits lane for lane),
// shared by the encoder's standalone GELU and the matrix product that applies it to its outputs.
#pragma once
#include "exp_approx.h"
#include <math.h>

#pragma STDC FP_CONTRACT OFF

// erfc(a) for a >= 0 by Abramowitz and Stegun 7.1.26: t (A1 + t (A2 + ... + t A5)) e^(-a^2)
// with t = 1 / (1 + P a). GELU is x/2 (1 + erf(z)), z = x / sqrt 2; for x < 0 that is
// x/2 erfc(|z|), taken directly rather than as 1 + erf, where the sum would cancel to 0.
// The formula's error is absolute: below 1.5e-7 in erf, so below 7.5e-8 |x| in GELU.
#define HK_GELU_P 0.3275911f
#define HK_GELU_A1 0.254829592f
#define HK_GELU_A2 -0.284496736f
#define HK_GELU_A3 1.421413741f
#define HK_GELU_A4 -1.453152027f
#define HK_GELU_A5 1.061405429f
#define HK_GELU_SQRT1_2 0.70710678118654752f
// erfc(10) is 2e-45: past it the result no longer changes, and e^(-a^2) stays finite.
#define HK_GELU_A_MAX 10.0f

static inline float hk_gelu_one(float x) {
    const float a = fminf(fabsf(x) * HK_GELU_SQRT1_2, HK_GELU_A_MAX);
    const float t = 1.0f / fmaf(HK_GELU_P, a, 1.0f);
    const float poly = t * fmaf(fmaf(fmaf(fmaf(HK_GELU_A5, t, HK_GELU_A4), t, HK_GELU_A3), t, HK_GELU_A2), t, HK_GELU_A1);
    const float q = poly * hk_exp_approx(-(a * a));
    const float twice_phi = x < 0 ? q : 2.0f - q;
    return 0.5f * x * twice_phi;
}

#if HK_HAVE_AVX2
#include <immintrin.h>

__attribute__((target("avx2,fma"), always_inline))
static inline __m256 hk_gelu8(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    const __m256 a = _mm256_min_ps(_mm256_mul_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(HK_GELU_SQRT1_2)),
                                   _mm256_set1_ps(HK_GELU_A_MAX));
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(HK_GELU_P), a, one));
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(HK_GELU_A5), t, _mm256_set1_ps(HK_GELU_A4));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(HK_GELU_A3));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(HK_GELU_A2));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(HK_GELU_A1));
    p = _mm256_mul_ps(t, p);
    const __m256 q = _mm256_mul_ps(p, hk_exp_approx8(_mm256_xor_ps(sign, _mm256_mul_ps(a, a))));
    const __m256 twice_phi = _mm256_blendv_ps(_mm256_sub_ps(two, q), q, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), twice_phi);
}

#endif
