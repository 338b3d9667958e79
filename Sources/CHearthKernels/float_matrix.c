// F32 and F16 weight matrices, summed as llama.cpp's CPU backend sums them.
//
// F16 weights take F16 activations there (the activations are rounded to half precision
// first), F32 weights F32 ones. A pass of one row runs ggml_vec_dot_f16/f32: four 8-lane
// accumulators (32 slots, element i into slot i mod 32) over the first n - n % 32 elements,
// reduced as GGML_F32x8_REDUCE does, then the rest added one product at a time: in double for
// F16, fused into the float sum for F32 (as GCC contracts that loop). A
// pass of several rows runs tinyBLAS when n is a multiple of 8: one 8-lane accumulator
// (element i into lane i mod 8), reduced as its hsum does. Here each sequence's run of columns
// gets the order llama.cpp would give a pass of that many rows, so a row's result does not
// depend on the rows beside it.
#include "internal.h"
#include "reduce.h"
#include <math.h>
#include <stdlib.h>
#pragma STDC FP_CONTRACT OFF

static inline float element(int half, const void *p, int64_t i) {
    return half ? hk_fp16_to_fp32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

// The reduced sum of the first `whole` elements plus the rest, as ggml_vec_dot_f16/f32 add them.
static float tail(int half, const void *w, const void *a, int64_t whole, int64_t n, float reduced) {
    if (half) {
        double sum = reduced;
        for (int64_t i = whole; i < n; i++) sum += (double)(element(half, w, i) * element(half, a, i));
        return (float)sum;
    }
    float sum = reduced;
    for (int64_t i = whole; i < n; i++) sum = fmaf(element(half, w, i), element(half, a, i), sum);
    return sum;
}

// One weight row (F16 when `half`, else F32) against one activation row of the same type.
static float dot_portable(int half, const void *w, const void *a, int64_t n, int single) {
    if (single || n % 8 != 0) {
        float slot[32] = {0};
        const int64_t whole = n - n % 32;
        for (int64_t i = 0; i < whole; i++) slot[i & 31] = fmaf(element(half, w, i), element(half, a, i), slot[i & 31]);
        return tail(half, w, a, whole, n, hk_reduce32(slot));
    }
    float lane[8] = {0};
    for (int64_t i = 0; i < n; i++) lane[i & 7] = fmaf(element(half, w, i), element(half, a, i), lane[i & 7]);
    return hk_reduce8(lane);
}

float hk_portable_dot_f16w(const void *w, const void *a, int64_t n) { return dot_portable(1, w, a, n, 1); }
float hk_portable_dot_f32w(const void *w, const void *a, int64_t n) { return dot_portable(0, w, a, n, 1); }

static void matmul_portable(int half, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                            int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    int64_t col = 0;
    for (int64_t i = 0; i < (runs ? n_runs : 1); i++) {
        const int64_t len = runs ? runs[i] : cols;
        for (int64_t c = col; c < col + len; c++)
            for (int64_t r = 0; r < rows; r++)
                out[(size_t)c * out_stride + (size_t)r] =
                    dot_portable(half, w + (size_t)r * row_bytes, a + (size_t)c * a_stride, n, len == 1);
        col += len;
    }
}

void hk_portable_matmul_f16w(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a, size_t as, int64_t cols, int64_t n,
                             const int64_t *runs, int64_t n_runs, float *out, size_t os) {
    matmul_portable(1, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);
}

void hk_portable_matmul_f32w(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a, size_t as, int64_t cols, int64_t n,
                             const int64_t *runs, int64_t n_runs, float *out, size_t os) {
    matmul_portable(0, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);
}

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define HK_FM_AVX2 __attribute__((target("avx2,fma,f16c")))

HK_FM_AVX2 static inline __m256 load8(int half, const void *p, int64_t i) {
    return half ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)))
                : _mm256_loadu_ps((const float *)p + i);
}

HK_FM_AVX2 static float dot_avx2(int half, const void *w, const void *a, int64_t n, int single) {
    if (single || n % 8 != 0) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        const int64_t whole = n - n % 32;
        for (int64_t i = 0; i < whole; i += 32)
            for (int j = 0; j < 4; j++) acc[j] = _mm256_fmadd_ps(load8(half, w, i + 8 * j), load8(half, a, i + 8 * j), acc[j]);
        return tail(half, w, a, whole, n, hk_hsum32(acc[0], acc[1], acc[2], acc[3]));
    }
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(load8(half, w, i), load8(half, a, i), acc);
    return hk_hsum(acc);
}

HK_FM_AVX2 float hk_avx2_dot_f16w_ordered(const void *w, const void *a, int64_t n) { return dot_avx2(1, w, a, n, 1); }
HK_FM_AVX2 float hk_avx2_dot_f32w_ordered(const void *w, const void *a, int64_t n) { return dot_avx2(0, w, a, n, 1); }

// 4 weight rows against 3 activation rows (n a multiple of 8), twelve sums at once: each is one
// 8-lane accumulator over the elements in order, so each equals dot_avx2's multi-row sum, bit
// for bit; the twelve independent chains keep the FMA units busy instead of waiting on one.
HK_FM_AVX2 static void tile4x3_avx2(int half, const uint8_t *w, size_t row_bytes, const uint8_t *a, size_t a_stride,
                                    int64_t n, float *out, size_t out_stride) {
    __m256 acc[4][3];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) acc[r][c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
        const __m256 x0 = load8(half, a, i), x1 = load8(half, a + a_stride, i), x2 = load8(half, a + 2 * a_stride, i);
        for (int r = 0; r < 4; r++) {
            const __m256 y = load8(half, w + (size_t)r * row_bytes, i);
            acc[r][0] = _mm256_fmadd_ps(y, x0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(y, x1, acc[r][1]);
            acc[r][2] = _mm256_fmadd_ps(y, x2, acc[r][2]);
        }
    }
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 4; r++) out[(size_t)c * out_stride + (size_t)r] = hk_hsum(acc[r][c]);
}

// F16 rows widened to F32 (exactly: every half is a float), `count` rows of n, `stride` bytes apart.
HK_FM_AVX2 static void widen_f16(const uint8_t *src, size_t stride, int64_t count, int64_t n, float *dst) {
    for (int64_t k = 0; k < count; k++) {
        const uint16_t *row = (const uint16_t *)(src + (size_t)k * stride);
        for (int64_t i = 0; i < n; i += 8)
            _mm256_storeu_ps(dst + k * n + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + i))));
    }
}

HK_FM_AVX2 static void matmul_avx2(int half, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a,
                                   size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                                   float *out, size_t out_stride) {
    // Rows in chunks that stay in L1 while every column passes over them.
    const int64_t chunk = 16;
    // A run of several rows sums each output in one 8-lane chain, twelve at a time. F16 weights
    // and activations are widened once (a chunk of weight rows, three activation rows) rather
    // than in every tile; the values, and so the sums, are the same.
    float *wide_w = NULL, *wide_a = NULL;
    if (half && n % 8 == 0) {
        wide_w = malloc(sizeof(float) * (size_t)(chunk * n));
        wide_a = malloc(sizeof(float) * (size_t)(3 * n));
        if (!wide_w || !wide_a) { free(wide_w); free(wide_a); wide_w = wide_a = NULL; }
    }
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
        int widened = 0;
        int64_t col = 0;
        for (int64_t i = 0; i < (runs ? n_runs : 1); i++) {
            const int64_t len = runs ? runs[i] : cols;
            int64_t c = col;
            if (len > 1 && n % 8 == 0 && (!half || wide_w)) {
                const uint8_t *wc = w + (size_t)r0 * row_bytes;
                size_t wc_bytes = row_bytes;
                if (half) {
                    if (!widened) widen_f16(wc, row_bytes, r1 - r0, n, wide_w);
                    widened = 1;
                    wc = (const uint8_t *)wide_w;
                    wc_bytes = sizeof(float) * (size_t)n;
                }
                for (; c + 3 <= col + len; c += 3) {
                    const uint8_t *ac = a + (size_t)c * a_stride;
                    size_t ac_bytes = a_stride;
                    if (half) {
                        widen_f16(ac, a_stride, 3, n, wide_a);
                        ac = (const uint8_t *)wide_a;
                        ac_bytes = sizeof(float) * (size_t)n;
                    }
                    int64_t r = r0;
                    for (; r + 4 <= r1; r += 4)
                        tile4x3_avx2(0, wc + (size_t)(r - r0) * wc_bytes, wc_bytes, ac, ac_bytes, n,
                                     out + (size_t)c * out_stride + (size_t)r, out_stride);
                    for (; r < r1; r++)
                        for (int64_t k = 0; k < 3; k++)
                            out[(size_t)(c + k) * out_stride + (size_t)r] =
                                dot_avx2(0, wc + (size_t)(r - r0) * wc_bytes, ac + (size_t)k * ac_bytes, n, 0);
                }
            }
            for (; c < col + len; c++)
                for (int64_t r = r0; r < r1; r++)
                    out[(size_t)c * out_stride + (size_t)r] =
                        dot_avx2(half, w + (size_t)r * row_bytes, a + (size_t)c * a_stride, n, len == 1);
            col += len;
        }
    }
    free(wide_w);
    free(wide_a);
}

HK_FM_AVX2 void hk_avx2_matmul_f16w(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a, size_t as, int64_t cols,
                                    int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t os) {
    matmul_avx2(1, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);
}

HK_FM_AVX2 void hk_avx2_matmul_f32w(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a, size_t as, int64_t cols,
                                    int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t os) {
    matmul_avx2(0, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);
}
#endif
