// Half-precision weight rows times a float vector, with float products and sums: the weights
// stay at 2 bytes each in memory (half the bytes of float weights) and every product is the
// one float weights give. Both paths give the same bits: each row sums in 8 lanes (lane l takes
// elements l, l + 8, ...) by fused multiply-adds, reduced in hk_hsum's order, then the elements
// past the last whole 8 added one by one, then the bias.
#include "CHearthKernels.h"
#include "hk_audio.h"
#include "avx2.h"
#include "reduce.h"
#include <math.h>

#pragma STDC FP_CONTRACT OFF

static float row_portable(const uint16_t *w, const float *x, int64_t n) {
    float lanes[8] = {0};
    const int64_t whole = n - n % 8;
    for (int64_t i = 0; i < whole; i += 8)
        for (int l = 0; l < 8; l++) lanes[l] = fmaf(hk_fp16_to_fp32(w[i + l]), x[i + l], lanes[l]);
    float sum = hk_reduce8(lanes);
    for (int64_t i = whole; i < n; i++) sum = fmaf(hk_fp16_to_fp32(w[i]), x[i], sum);
    return sum;
}

#if HK_HAVE_AVX2
static HK_AVX2 void rows_avx2(const uint16_t *w, int64_t r0, int64_t r1, int64_t n, const float *x, float *out) {
    const int64_t whole = n - n % 8;
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
        const uint16_t *p[4] = {w + r * n, w + (r + 1) * n, w + (r + 2) * n, w + (r + 3) * n};
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int64_t i = 0; i < whole; i += 8) {
            const __m256 xv = _mm256_loadu_ps(x + i);
            // The rows a few blocks ahead: one thread alone keeps more of memory's bandwidth busy.
            if ((i & 31) == 0)
                for (int k = 0; k < 4; k++) _mm_prefetch((const char *)(p[k] + i) + 512, _MM_HINT_T0);
            for (int k = 0; k < 4; k++)
                acc[k] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p[k] + i))), xv, acc[k]);
        }
        for (int k = 0; k < 4; k++) {
            float sum = hk_hsum(acc[k]);
            for (int64_t i = whole; i < n; i++) sum = fmaf(hk_fp16_to_fp32(p[k][i]), x[i], sum);
            out[r + k] = sum;
        }
    }
    for (; r < r1; r++) {
        __m256 acc = _mm256_setzero_ps();
        const uint16_t *p = w + r * n;
        for (int64_t i = 0; i < whole; i += 8)
            acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i))), _mm256_loadu_ps(x + i), acc);
        float sum = hk_hsum(acc);
        for (int64_t i = whole; i < n; i++) sum = fmaf(hk_fp16_to_fp32(p[i]), x[i], sum);
        out[r] = sum;
    }
}
#endif

#if HK_HAVE_AVX2
// Up to 8 vectors against each row: the row's weights are read and widened once for all of
// them; each vector's sum is the one rows_avx2 gives it alone. Inlined for each count of
// vectors, so that the sums stay in registers.
static inline __attribute__((always_inline)) HK_AVX2 void columns_body(const uint16_t *w, int64_t r0, int64_t r1, int64_t n,
                                                                       const float *x, int64_t x_stride, const int cols,
                                                                       float *out, int64_t out_stride) {
    const int64_t whole = n - n % 8;
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *p = w + r * n;
        __m256 acc[8];
        for (int c = 0; c < cols; c++) acc[c] = _mm256_setzero_ps();
        for (int64_t i = 0; i < whole; i += 8) {
            const __m256 wv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i)));
            for (int c = 0; c < cols; c++) acc[c] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + c * x_stride + i), acc[c]);
        }
        for (int c = 0; c < cols; c++) {
            float sum = hk_hsum(acc[c]);
            for (int64_t i = whole; i < n; i++) sum = fmaf(hk_fp16_to_fp32(p[i]), x[c * x_stride + i], sum);
            out[c * out_stride + r] = sum;
        }
    }
}

static HK_AVX2 void columns_avx2(const uint16_t *w, int64_t r0, int64_t r1, int64_t n, const float *x, int64_t x_stride,
                                 int cols, float *out, int64_t out_stride) {
    switch (cols) {
    case 2: columns_body(w, r0, r1, n, x, x_stride, 2, out, out_stride); break;
    case 3: columns_body(w, r0, r1, n, x, x_stride, 3, out, out_stride); break;
    case 4: columns_body(w, r0, r1, n, x, x_stride, 4, out, out_stride); break;
    case 5: columns_body(w, r0, r1, n, x, x_stride, 5, out, out_stride); break;
    case 6: columns_body(w, r0, r1, n, x, x_stride, 6, out, out_stride); break;
    case 7: columns_body(w, r0, r1, n, x, x_stride, 7, out, out_stride); break;
    default: columns_body(w, r0, r1, n, x, x_stride, 8, out, out_stride); break;
    }
}
#endif

void hk_matmul_f16w_f32(int isa, const uint16_t *w, int64_t r0, int64_t r1, int64_t n, const float *x, int64_t x_stride,
                        int64_t cols, const float *bias, float *out, int64_t out_stride) {
    for (int64_t c0 = 0; c0 < cols; c0 += 8) {
        const int group = (int)(cols - c0 < 8 ? cols - c0 : 8);
#if HK_HAVE_AVX2
        if (isa == HK_ISA_AVX2 && group == 1) {
            rows_avx2(w, r0, r1, n, x + c0 * x_stride, out + c0 * out_stride);
        } else if (isa == HK_ISA_AVX2) {
            columns_avx2(w, r0, r1, n, x + c0 * x_stride, x_stride, group, out + c0 * out_stride, out_stride);
        } else
#endif
        {
            for (int c = 0; c < group; c++)
                for (int64_t r = r0; r < r1; r++) out[(c0 + c) * out_stride + r] = row_portable(w + r * n, x + (c0 + c) * x_stride, n);
        }
    }
    if (bias)
        for (int64_t c = 0; c < cols; c++)
            for (int64_t r = r0; r < r1; r++) out[c * out_stride + r] += bias[r];
}
