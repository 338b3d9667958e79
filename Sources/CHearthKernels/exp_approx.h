// The constants of hk_exp_approx and its AVX2 form, shared by the kernels that use it.
#pragma once
#include "internal.h"

// Constants of the approximation: 1.5 * 2^23 rounds to an integer when added, log2(e),
// ln(2) split in a high and a low part, and the polynomial's coefficients.
#define HK_EXP_SHIFT 0x1.8p23f
#define HK_EXP_LOG2E 0x1.715476p+0f
#define HK_EXP_LN2_HI 0x1.62e4p-1f
#define HK_EXP_LN2_LO 0x1.7f7d1cp-20f
#define HK_EXP_C1 0x1.ffffecp-1f
#define HK_EXP_C2 0x1.fffdb6p-2f
#define HK_EXP_C3 0x1.555e66p-3f
#define HK_EXP_C4 0x1.573e2ep-5f
#define HK_EXP_C5 0x1.0e4020p-7f

static inline uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

#if HK_HAVE_AVX2
#include <immintrin.h>

// Eight lanes of hk_exp_approx, giving the same bits lane for lane.
__attribute__((target("avx2,fma")))
static inline __m256 hk_exp_approx8(__m256 x) {
    const __m256 shift = _mm256_set1_ps(HK_EXP_SHIFT);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(HK_EXP_LOG2E), shift);
    const __m256 n = _mm256_sub_ps(z, shift);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(HK_EXP_LN2_LO), _mm256_fnmadd_ps(n, _mm256_set1_ps(HK_EXP_LN2_HI), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(HK_EXP_C5), b, _mm256_set1_ps(HK_EXP_C4)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(HK_EXP_C3), b, _mm256_set1_ps(HK_EXP_C2))),
        u, _mm256_mul_ps(_mm256_set1_ps(HK_EXP_C1), b));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 big = _mm256_cmp_ps(absn, _mm256_set1_ps(126), _CMP_GT_OQ);
    const __m256 normal = _mm256_fmadd_ps(j, k, k);
    if (!_mm256_movemask_ps(big)) return normal;
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256 huge = _mm256_cmp_ps(absn, _mm256_set1_ps(192), _CMP_GT_OQ);
    const __m256 scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1);
    const __m256 r = _mm256_blendv_ps(normal, scaled, big);
    return _mm256_blendv_ps(r, _mm256_mul_ps(s1, s1), huge);
}

#endif
