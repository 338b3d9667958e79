// Dense F32 matrix products for encoder models (BERT): weights and activations both have K
// contiguous, so each output is a dot product. The AVX2 path computes a tile of 4 weight rows
// by 3 activation columns at once: 7 loads feed 12 FMAs per 8 elements of K, which keeps the
// FMA units rather than the loads busy.
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

static float HK_AVX2 dot_avx2(const float *a, const float *b, int64_t k) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float s = hk_hsum(acc);
    for (; i < k; i++) s += a[i] * b[i];
    return s;
}

static void HK_AVX2 tile_4x3(const float *w, int64_t w_stride, const float *x, int64_t x_stride, int64_t k,
                             float result[4][3]) {
    const float *w0 = w, *w1 = w + w_stride, *w2 = w + 2 * w_stride, *w3 = w + 3 * w_stride;
    const float *x0 = x, *x1 = x + x_stride, *x2 = x + 2 * x_stride;
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
        const __m256 a0 = _mm256_loadu_ps(x0 + i), a1 = _mm256_loadu_ps(x1 + i), a2 = _mm256_loadu_ps(x2 + i);
        __m256 b = _mm256_loadu_ps(w0 + i);
        c00 = _mm256_fmadd_ps(b, a0, c00); c01 = _mm256_fmadd_ps(b, a1, c01); c02 = _mm256_fmadd_ps(b, a2, c02);
        b = _mm256_loadu_ps(w1 + i);
        c10 = _mm256_fmadd_ps(b, a0, c10); c11 = _mm256_fmadd_ps(b, a1, c11); c12 = _mm256_fmadd_ps(b, a2, c12);
        b = _mm256_loadu_ps(w2 + i);
        c20 = _mm256_fmadd_ps(b, a0, c20); c21 = _mm256_fmadd_ps(b, a1, c21); c22 = _mm256_fmadd_ps(b, a2, c22);
        b = _mm256_loadu_ps(w3 + i);
        c30 = _mm256_fmadd_ps(b, a0, c30); c31 = _mm256_fmadd_ps(b, a1, c31); c32 = _mm256_fmadd_ps(b, a2, c32);
    }
    const __m256 acc[4][3] = {{c00, c01, c02}, {c10, c11, c12}, {c20, c21, c22}, {c30, c31, c32}};
    const float *rows[4] = {w0, w1, w2, w3}, *columns[3] = {x0, x1, x2};
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 3; c++) {
            float s = hk_hsum(acc[r][c]);
            for (int64_t j = i; j < k; j++) s += rows[r][j] * columns[c][j];
            result[r][c] = s;
        }
    }
}

static void HK_AVX2 gemm_avx2(const float *w, int64_t w_stride, int64_t r0, int64_t r1, const float *x,
                              int64_t x_stride, int64_t cols, int64_t k, const float *bias, float *out,
                              int64_t out_stride) {
    int64_t c = 0;
    for (; c + 3 <= cols; c += 3) {
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4) {
            float t[4][3];
            tile_4x3(w + r * w_stride, w_stride, x + c * x_stride, x_stride, k, t);
            for (int i = 0; i < 4; i++) {
                const float b = bias ? bias[r + i] : 0;
                for (int j = 0; j < 3; j++) out[(c + j) * out_stride + r + i] = b + t[i][j];
            }
        }
        for (; r < r1; r++) {
            for (int j = 0; j < 3; j++) {
                out[(c + j) * out_stride + r] = (bias ? bias[r] : 0) + dot_avx2(w + r * w_stride, x + (c + j) * x_stride, k);
            }
        }
    }
    for (; c < cols; c++) {
        for (int64_t r = r0; r < r1; r++) {
            out[c * out_stride + r] = (bias ? bias[r] : 0) + dot_avx2(w + r * w_stride, x + c * x_stride, k);
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
