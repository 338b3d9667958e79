// The fixed orders in which the kernels reduce partial sums to one float. Every kernel that
// promises "the same bits on every path" or "llama.cpp's bits" reduces through these, so an
// order is written once and a portable loop matches its AVX2 twin.
#pragma once
#include "avx2.h"

// Eight lanes (lane l holding terms l, l + 8, ...) in hk_hsum's order, which is also
// tinyBLAS's: the halves added, then the pairs, then the last two.
static inline float hk_reduce8(const float *l) {
    const float a0 = l[0] + l[4], a1 = l[1] + l[5], a2 = l[2] + l[6], a3 = l[3] + l[7];
    return (a0 + a2) + (a1 + a3);
}

// Eight int32 lanes added in order (exact in any order; one spelling for every kernel).
static inline int32_t hk_total8_i32(const int32_t *l) {
    int32_t s = 0;
    for (int k = 0; k < 8; k++) s += l[k];
    return s;
}

// Eight lanes pairwise, ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)): the order of the
// horizontal adds that reduce eight accumulators at once.
static inline float hk_reduce8_pairs(const float *l) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// 32 slots (slot 8j + l is lane l of accumulator j) as GGML_F32x8_REDUCE reduces the four
// accumulators of ggml_vec_dot_f16/f32.
static inline float hk_reduce32(const float *s) {
    float y[8];
    for (int l = 0; l < 8; l++) y[l] = (s[l] + s[16 + l]) + (s[8 + l] + s[24 + l]);
    const float t0 = y[0] + y[4], t1 = y[1] + y[5], t2 = y[2] + y[6], t3 = y[3] + y[7];
    return (t0 + t1) + (t2 + t3);
}

#if HK_HAVE_AVX2
// hk_reduce32 of the 32 slots held in four 8-lane accumulators (slot 8j + l in lane l of
// accumulator j): the same additions in the same grouping, in vector registers.
HK_INLINE HK_AVX2 float hk_hsum32(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 y = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));     // y[l]
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));  // y[l] + y[l + 4]
    const __m128 u = _mm_hadd_ps(t, t);                                                   // t0 + t1, t2 + t3
    return _mm_cvtss_f32(_mm_hadd_ps(u, u));
}
#endif
