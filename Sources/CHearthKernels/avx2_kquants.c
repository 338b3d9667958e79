// AVX2 dot products of the 256-element super-block formats with Q8_K activations.
//
// Quants are unpacked to unsigned bytes and multiplied with the activations by vpmaddubsw;
// per-sub-block scales are applied with vpmaddwd, so a whole super-block sums in int32
// before one float multiply. Offsets (Q4_K/Q5_K mins, Q6_K's -32) come from the activation
// block sums (bsums) instead of the quants.
#include "avx2.h"
#if HK_HAVE_AVX2

HK_INLINE void scales_mins(const uint8_t *packed, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 8; j++) hk_scale_min_k4(j, packed, &sc[j], &mn[j]);
}

HK_INLINE int mins_dot(const uint8_t mn[8], const int16_t bsums[16]) {
    int s = 0;
    for (int j = 0; j < 8; j++) s += mn[j] * (bsums[2 * j] + bsums[2 * j + 1]);
    return s;
}

HK_AVX2 float hk_avx2_dot_q4_K(const void *w, const void *a, int64_t n) {
    const hk_q4_K *x = w;
    const hk_q8_K *y = a;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float acc_min = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        scales_mins(x[i].scales, sc, mn);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = hk_load256(x[i].qs + 32 * j);
            const __m256i lo = _mm256_and_si256(q, low4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            const __m256i p0 = _mm256_maddubs_epi16(lo, hk_load256(y[i].qs + 64 * j));
            const __m256i p1 = _mm256_maddubs_epi16(hi, hk_load256(y[i].qs + 64 * j + 32));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * j])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * j + 1])));
        }
        const float dy = y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dy * hk_half(&x[i].d)), _mm256_cvtepi32_ps(sumi), acc);
        acc_min += dy * hk_half(&x[i].dmin) * (float)mins_dot(mn, y[i].bsums);
    }
    return hk_hsum(acc) - acc_min;
}

HK_AVX2 float hk_avx2_dot_q5_K(const void *w, const void *a, int64_t n) {
    const hk_q5_K *x = w;
    const hk_q8_K *y = a;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float acc_min = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        scales_mins(x[i].scales, sc, mn);
        // Bit 2j of qh[l] is the fifth bit of element 64j + l, bit 2j+1 that of 64j + 32 + l;
        // shifting right by 2 per chunk brings them to bits 0 and 1.
        __m256i h = hk_load256(x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = hk_load256(x[i].qs + 32 * j);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, low4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 4), bit4));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 3), bit4));
            h = _mm256_srli_epi16(h, 2);
            const __m256i p0 = _mm256_maddubs_epi16(lo, hk_load256(y[i].qs + 64 * j));
            const __m256i p1 = _mm256_maddubs_epi16(hi, hk_load256(y[i].qs + 64 * j + 32));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * j])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * j + 1])));
        }
        const float dy = y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dy * hk_half(&x[i].d)), _mm256_cvtepi32_ps(sumi), acc);
        acc_min += dy * hk_half(&x[i].dmin) * (float)mins_dot(mn, y[i].bsums);
    }
    return hk_hsum(acc) - acc_min;
}

HK_AVX2 float hk_avx2_dot_q6_K(const void *w, const void *a, int64_t n) {
    const hk_q6_K *x = w;
    const hk_q8_K *y = a;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    // Spread int16 scale pair k of a 128-bit lane: scale 2k over the low lane, 2k+1 the high.
    const __m256i pick[4] = {
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3),
        _mm256_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7),
        _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11),
        _mm256_setr_epi8(12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15),
    };
    __m256 acc = _mm256_setzero_ps();
    float acc_offset = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = x[i].ql + 64 * half, *qh = x[i].qh + 32 * half;
            const int8_t *v = y[i].qs + 128 * half;
            const __m128i sc8 = _mm_loadl_epi64((const __m128i *)(x[i].scales + 8 * half));
            const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc8));
            const __m256i l0 = hk_load256(ql), l1 = hk_load256(ql + 32), h = hk_load256(qh);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(h, bits45));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                   _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
            for (int k = 0; k < 4; k++) {
                const __m256i p = _mm256_maddubs_epi16(q[k], hk_load256(v + 32 * k));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc16, pick[k])));
            }
        }
        int offset = 0;
        for (int g = 0; g < 16; g++) offset += x[i].scales[g] * y[i].bsums[g];
        const float d = y[i].d * hk_half(&x[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        acc_offset += d * (float)(32 * offset);
    }
    return hk_hsum(acc) - acc_offset;
}

#endif
