// Shared helpers for the AVX2 + FMA + F16C kernels. Each function carries the target
// attribute, so the target needs no compiler flags and other CPUs never execute these.
#pragma once
#include <stdlib.h>
#include "internal.h"
#if HK_HAVE_AVX2
#include <immintrin.h>

#define HK_AVX2 __attribute__((target("avx2,fma,f16c")))

// cpu.c: which byte dot products the CPU has, unless they were turned off (hk_use_vnni(0)).
enum { HK_NO_VNNI = 0, HK_AVX_VNNI = 1, HK_AVX512_VNNI = 2 };
int hk_vnni_kind(void);
#define HK_INLINE static inline __attribute__((always_inline))

HK_INLINE HK_AVX2 float hk_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Sum of the eight int32 lanes (exact, in any order).
HK_INLINE HK_AVX2 int hk_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

HK_INLINE HK_AVX2 float hk_half(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// a * b + c rounded once.
HK_INLINE HK_AVX2 float hk_fma(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

HK_INLINE HK_AVX2 __m256i hk_load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// Q6_K's 6-bit values (0 to 63) of one half-block: the low four bits from the 64 bytes at `ql`,
// the top two from the 32 at `qh`, as four vectors of 32 in the block's order.
HK_INLINE HK_AVX2 void hk_q6k_unpack(const uint8_t *ql, const uint8_t *qh, __m256i q[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    const __m256i l0 = hk_load256(ql), l1 = hk_load256(ql + 32), h = hk_load256(qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(h, bits45));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                           _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
}

// 16 bytes of packed nibbles to 32 bytes: low nibbles first, then high nibbles (the order of
// elements in GGML's 32-element blocks).
HK_INLINE HK_AVX2 __m256i hk_nibbles(const uint8_t *p) {
    // One broadcast load and a per-lane shift: cheaper than shift + insert.
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    return _mm256_and_si256(_mm256_srlv_epi64(t, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
}

// 32 bits to 32 bytes: byte i is 0xFF when bit i is set.
HK_INLINE HK_AVX2 __m256i hk_bit_mask32(const uint8_t *p) {
    uint32_t h;
    memcpy(&h, p, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// Eight int32 sums of adjacent pairs of int16 lanes, as floats.
HK_INLINE HK_AVX2 __m256 hk_pairs_to_float(__m256i p) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

// float_matrix.c
float hk_avx2_dot_f16w_ordered(const void *w, const void *a, int64_t n);
float hk_avx2_dot_f32w_ordered(const void *w, const void *a, int64_t n);
void hk_avx2_matmul_f16w(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_f32w(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);

// avx2_q4_0x8.c
float hk_avx2_dot_q4_0x8(const void *w, const void *a, int64_t n);
void hk_avx2_matvec_q4_0x8(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q4_0x8(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matvec_q8_0x16p(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q8_0x16p(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matvec_q4_Kx16p(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q4_Kx16p(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matvec_q6_Kx16p(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q6_Kx16p(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matvec_q4_0x8p(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q4_0x8p(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);

// avx2_q32.c
float hk_avx2_dot_q4_0(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q4_1(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q5_0(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q5_1(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q8_0(const void *w, const void *a, int64_t n);
void hk_avx2_matvec_q4_0(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matvec_q4_1(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matvec_q5_0(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matvec_q5_1(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matvec_q8_0(const uint8_t *, size_t, int64_t, const void *, int64_t, float *);
void hk_avx2_matmul_q4_0(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q4_1(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q5_0(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q5_1(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q8_0(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);

// avx2_kquants.c
float hk_avx2_dot_q4_K(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q4_K_plain(const void *w, const void *a, int64_t n);
void hk_avx2_matmul_q4_K_plain(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
float hk_avx2_dot_q5_K(const void *w, const void *a, int64_t n);
float hk_avx2_dot_q6_K(const void *w, const void *a, int64_t n);
void hk_avx2_matmul_q4_K(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q5_K(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_avx2_matmul_q6_K(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);

// avx2_float.c
float hk_avx2_dot_bf16(const void *w, const void *a, int64_t n);

#endif
