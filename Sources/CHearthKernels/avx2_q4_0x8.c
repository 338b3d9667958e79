// Q4_0 as llama.cpp's AVX2 build runs it. There a matrix whose row count is a multiple of 8 is
// repacked at load into block_q4_0x8 (eight rows' blocks interleaved), and its kernels
// (gemv/gemm_q4_b32_8x8_q8_0_lut_avx) reduce each block's 32 products to one integer before a
// single fused multiply-add per block: acc = fma(float(sum_b), d_w * d_a, acc). The weights
// stay here as the file has them; eight rows at a time go through the same arithmetic, each
// row's lane of the accumulator holding that row's chain, so every output has llama.cpp's bits
// whatever the batch.
#include "avx2.h"
#if HK_HAVE_AVX2

// The 32 products of one Q4_0 block with one Q8_0 activation block, as 8 int32 partial sums.
HK_INLINE HK_AVX2 __m256i block_lanes(const uint8_t *wb, __m256i y) {
    const __m256i x = _mm256_sub_epi8(hk_nibbles(wb + 2), _mm256_set1_epi8(8));
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

// Lane r: the sum of v[r]'s eight lanes (exact integers, in any order).
HK_INLINE HK_AVX2 __m256i sum8(const __m256i *v) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

HK_INLINE HK_AVX2 int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// Eight consecutive rows against one activation column of nb Q8_0 blocks: lane r is row r.
HK_INLINE HK_AVX2 __m256 rows8(const uint8_t *w, size_t row_bytes, const uint8_t *a, int64_t nb) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const hk_q8_0 *yb = (const hk_q8_0 *)a + b;
        const __m256i y = hk_load256(yb->qs);
        __m256i lanes[8];
        uint16_t dw[8];
        for (int r = 0; r < 8; r++) {
            const uint8_t *wb = w + (size_t)r * row_bytes + (size_t)b * sizeof(hk_q4_0);
            lanes[r] = block_lanes(wb, y);
            memcpy(&dw[r], wb, 2);
        }
        const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dw)), _mm256_set1_ps(hk_half(&yb->d)));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum8(lanes)), scale, acc);
    }
    return acc;
}

// One row, one column: the same chain in a scalar.
HK_INLINE HK_AVX2 float row1(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        const hk_q8_0 *yb = (const hk_q8_0 *)a + b;
        const uint8_t *wb = w + (size_t)b * sizeof(hk_q4_0);
        const int sum = hsum_i32(block_lanes(wb, hk_load256(yb->qs)));
        acc = hk_fma((float)sum, hk_half(wb) * hk_half(&yb->d), acc);
    }
    return acc;
}

HK_AVX2 float hk_avx2_dot_q4_0x8(const void *w, const void *a, int64_t n) { return row1(w, a, n / QK); }

HK_AVX2 void hk_avx2_matvec_q4_0x8(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) _mm256_storeu_ps(out + r, rows8(w + (size_t)r * row_bytes, row_bytes, a, nb));
    for (; r < rows; r++) out[r] = row1(w + (size_t)r * row_bytes, a, nb);
}

// Rows in chunks that stay in L1 while every column passes over them.
HK_AVX2 void hk_avx2_matmul_q4_0x8(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                   int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    (void)runs;
    (void)n_runs;
    const int64_t nb = n / QK, chunk = 32;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (int64_t c = 0; c < cols; c++) {
            const uint8_t *column = a + (size_t)c * a_stride;
            float *o = out + (size_t)c * out_stride;
            int64_t r = r0;
            for (; r + 8 <= r1; r += 8) _mm256_storeu_ps(o + r, rows8(w + (size_t)r * row_bytes, row_bytes, column, nb));
            for (; r < r1; r++) o[r] = row1(w + (size_t)r * row_bytes, column, nb);
        }
    }
}

#endif
