// Dense F32 matrix products for encoder models (BERT): weights and activations both have K
// contiguous, so each output is a dot product. The AVX2 path computes a tile of 4 weight rows
// by up to 3 activation rows at once: 7 loads feed 12 FMAs per 8 elements of K, which keeps the
// FMA units rather than the loads busy. Tiles run block by block (see BLOCK_BYTES) so that the
// rows they read come from the L2 cache.
#include "avx2.h"
#include "hk_gemm.h"

static float dot_portable(const float *a, const float *b, int64_t k) {
    float s = 0;
    for (int64_t i = 0; i < k; i++) s += a[i] * b[i];
    return s;
}

static void gemm_portable(const float *w, int64_t w_stride, int64_t r0, int64_t r1, const float *x,
                          int64_t x_stride, int64_t cols, int64_t k, const float *bias, float *out,
                          int64_t out_stride) {
    for (int64_t c = 0; c < cols; c++) {
        for (int64_t r = r0; r < r1; r++) {
            out[c * out_stride + r] = (bias ? bias[r] : 0) + dot_portable(w + r * w_stride, x + c * x_stride, k);
        }
    }
}

#if HK_HAVE_AVX2

// Weight rows and activation rows are taken in blocks of about this many bytes each: one block
// of each stays in L2 (512 KiB a core on the machines measured) while every tile of one meets
// every tile of the other. Unblocked, a weight matrix larger than L2 was read again from L3 for
// every 3 activation rows, which at a batch of 32 sentences cost more than the arithmetic.
#define BLOCK_BYTES (128 * 1024)

static float HK_AVX2 dot_avx2(const float *a, const float *b, int64_t k) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float s = hk_hsum(acc);
    for (; i < k; i++) s += a[i] * b[i];
    return s;
}

// The sums of four accumulators, one per lane, in one __m128.
HK_INLINE HK_AVX2 __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// out[(c0 + j) * out_stride + r0 + i] = bias + row i · column j for 4 rows and `n` (1 to 3)
// columns. Inlined with a constant n, the loops over columns unroll and the accumulators stay
// in registers.
HK_INLINE HK_AVX2 void tile_4xn(const float *w, int64_t w_stride, const float *x, int64_t x_stride, int64_t k,
                                 const int n, const float *bias, float *out, int64_t out_stride) {
    const float *w0 = w, *w1 = w + w_stride, *w2 = w + 2 * w_stride, *w3 = w + 3 * w_stride;
    __m256 acc[4][3];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < n; j++) acc[r][j] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
        __m256 a[3];
        for (int j = 0; j < n; j++) a[j] = _mm256_loadu_ps(x + j * x_stride + i);
        __m256 b = _mm256_loadu_ps(w0 + i);
        for (int j = 0; j < n; j++) acc[0][j] = _mm256_fmadd_ps(b, a[j], acc[0][j]);
        b = _mm256_loadu_ps(w1 + i);
        for (int j = 0; j < n; j++) acc[1][j] = _mm256_fmadd_ps(b, a[j], acc[1][j]);
        b = _mm256_loadu_ps(w2 + i);
        for (int j = 0; j < n; j++) acc[2][j] = _mm256_fmadd_ps(b, a[j], acc[2][j]);
        b = _mm256_loadu_ps(w3 + i);
        for (int j = 0; j < n; j++) acc[3][j] = _mm256_fmadd_ps(b, a[j], acc[3][j]);
    }
    const __m128 base = bias ? _mm_loadu_ps(bias) : _mm_setzero_ps();
    for (int j = 0; j < n; j++) {
        __m128 s = _mm_add_ps(base, hsum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
        if (i < k) {
            // K not a multiple of 8: the last elements one by one.
            float rest[4];
            const float *rows[4] = {w0, w1, w2, w3};
            for (int r = 0; r < 4; r++) {
                float t = 0;
                for (int64_t e = i; e < k; e++) t += rows[r][e] * x[j * x_stride + e];
                rest[r] = t;
            }
            s = _mm_add_ps(s, _mm_loadu_ps(rest));
        }
        _mm_storeu_ps(out + j * out_stride, s);
    }
}

// Rows rb..<re against activation rows cb..<ce.
static void HK_AVX2 gemm_block(const float *w, int64_t w_stride, int64_t rb, int64_t re, const float *x,
                               int64_t x_stride, int64_t cb, int64_t ce, int64_t k, const float *bias, float *out,
                               int64_t out_stride) {
    int64_t r = rb;
    for (; r + 4 <= re; r += 4) {
        const float *wr = w + r * w_stride, *br = bias ? bias + r : NULL;
        int64_t c = cb;
        for (; c + 3 <= ce; c += 3) tile_4xn(wr, w_stride, x + c * x_stride, x_stride, k, 3, br, out + c * out_stride + r, out_stride);
        if (ce - c == 2) tile_4xn(wr, w_stride, x + c * x_stride, x_stride, k, 2, br, out + c * out_stride + r, out_stride);
        if (ce - c == 1) tile_4xn(wr, w_stride, x + c * x_stride, x_stride, k, 1, br, out + c * out_stride + r, out_stride);
    }
    for (; r < re; r++) {
        for (int64_t c = cb; c < ce; c++) {
            out[c * out_stride + r] = (bias ? bias[r] : 0) + dot_avx2(w + r * w_stride, x + c * x_stride, k);
        }
    }
}

static void HK_AVX2 gemm_avx2(const float *w, int64_t w_stride, int64_t r0, int64_t r1, const float *x,
                              int64_t x_stride, int64_t cols, int64_t k, const float *bias, float *out,
                              int64_t out_stride) {
    const int64_t per_block = BLOCK_BYTES / (4 * (k > 0 ? k : 1));
    const int64_t row_block = per_block < 8 ? 4 : per_block / 4 * 4;
    const int64_t col_block = per_block < 6 ? 3 : per_block / 3 * 3;
    for (int64_t rb = r0; rb < r1; rb += row_block) {
        const int64_t re = rb + row_block < r1 ? rb + row_block : r1;
        for (int64_t cb = 0; cb < cols; cb += col_block) {
            const int64_t ce = cb + col_block < cols ? cb + col_block : cols;
            gemm_block(w, w_stride, rb, re, x, x_stride, cb, ce, k, bias, out, out_stride);
        }
    }
}

#endif

void hk_gemm_f32(int isa, const float *w, int64_t w_stride, int64_t r0, int64_t r1, const float *x,
                 int64_t x_stride, int64_t cols, int64_t k, const float *bias, float *out, int64_t out_stride) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) {
        gemm_avx2(w, w_stride, r0, r1, x, x_stride, cols, k, bias, out, out_stride);
        return;
    }
#endif
    gemm_portable(w, w_stride, r0, r1, x, x_stride, cols, k, bias, out, out_stride);
}
