// Q8_0 with AVX-512 VNNI, summed as llama.cpp's AVX2 ggml_vec_dot_q8_0_q8_0 sums: for each
// block, the products of each group of 4 consecutive weights (lane g of a vector, g = 0..7) are
// one exact integer, and lane g keeps its own chain acc_g = fma(d_w * d_a, float(sum_g), acc_g)
// over the blocks; the result is ((acc_0 + acc_4) + (acc_2 + acc_6)) + ((acc_1 + acc_5) +
// (acc_3 + acc_7)).
//
// Matrices whose row count is a multiple of 16 are interleaved at load sixteen rows at a time
// (HK_Q8_0_X16P): for each block, the 16 rows' f16 scales, then for g = 0..7 the bytes 4g..4g+3
// of the 16 rows side by side, each plus 128 so that they are unsigned. One vpdpbusd of group g
// with the 4 broadcast activation bytes leaves each row's integer for lane g in its own lane of
// a 512-bit vector; the 128 added to every weight comes off by starting the sum at
// -128 * (the 4 activation bytes' sum). Each row's eight chains are eight vectors, added as
// above at the end, with no horizontal sums.
#include "avx2.h"
#include <stdlib.h>
#if HK_HAVE_AVX2

#define HK_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

#define GROUP_BLOCK (16 * sizeof(hk_q8_0))
// How far ahead of its stream matvec asks for the weights.
#define PREFETCH_BYTES 2048

// An activation block as the products use it: its scale, and for each group of 4 bytes
// -128 times their sum.
typedef struct { float d; int32_t start[8]; } column_block;

static void column_blocks(const uint8_t *a, int64_t nb, column_block *cb) {
    for (int64_t b = 0; b < nb; b++) {
        const hk_q8_0 *y = (const hk_q8_0 *)a + b;
        cb[b].d = hk_fp16_to_fp32(y->d);
        for (int g = 0; g < 8; g++)
            cb[b].start[g] = -128 * (y->qs[4 * g] + y->qs[4 * g + 1] + y->qs[4 * g + 2] + y->qs[4 * g + 3]);
    }
}

// One group of 16 rows against NC columns (1 or 2).
HK_INLINE HK_AVX512VNNI void tile_cols(const uint8_t *group, const uint8_t *const *a, const column_block *const *cb,
                                       const int NC, int64_t nb, int prefetch, float *out, size_t out_stride) {
    __m512 acc[2][8];
    for (int c = 0; c < NC; c++)
        for (int g = 0; g < 8; g++) acc[c][g] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = group + (size_t)b * GROUP_BLOCK;
        if (prefetch)
            for (int l = 0; l < (int)GROUP_BLOCK; l += 64) _mm_prefetch((const char *)(p + PREFETCH_BYTES + l), _MM_HINT_T0);
        __m512i w[8];
        for (int g = 0; g < 8; g++) w[g] = _mm512_loadu_si512((const void *)(p + 32 + 64 * g));
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        for (int c = 0; c < NC; c++) {
            const column_block *k = cb[c] + b;
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(k->d));
            const uint8_t *y = a[c] + (size_t)b * sizeof(hk_q8_0) + 2;
            for (int g = 0; g < 8; g++) {
                int32_t y4;
                memcpy(&y4, y + 4 * g, 4);
                const __m512i s = _mm512_dpbusd_epi32(_mm512_set1_epi32(k->start[g]), w[g], _mm512_set1_epi32(y4));
                acc[c][g] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(s), acc[c][g]);
            }
        }
    }
    for (int c = 0; c < NC; c++) {
        const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[c][0], acc[c][4]), _mm512_add_ps(acc[c][2], acc[c][6]));
        const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[c][1], acc[c][5]), _mm512_add_ps(acc[c][3], acc[c][7]));
        _mm512_storeu_ps(out + (size_t)c * out_stride, _mm512_add_ps(even, odd));
    }
}

static HK_AVX512VNNI void tile(const uint8_t *group, const uint8_t *const *a, const column_block *const *cb, int nc,
                               int64_t nb, int prefetch, float *out, size_t out_stride) {
    if (nc == 2) tile_cols(group, a, cb, 2, nb, prefetch, out, out_stride);
    else tile_cols(group, a, cb, 1, nb, prefetch, out, out_stride);
}

static HK_AVX512VNNI void matvec_x16p(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    column_block stack[256];
    column_block *cb = nb <= 256 ? stack : malloc((size_t)nb * sizeof(column_block));
    if (!cb) return;
    column_blocks(a, nb, cb);
    const uint8_t *ap[1] = {a};
    const column_block *cbp[1] = {cb};
    for (int64_t g = 0; g < rows / 16; g++) tile(w + (size_t)g * 16 * row_bytes, ap, cbp, 1, nb, 1, out + 16 * g, 0);
    if (cb != stack) free(cb);
}

// A few hundred KB of rows at a time, over which every pair of columns passes while they sit
// in L2.
static HK_AVX512VNNI void matmul_x16p(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                      int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out,
                                      size_t out_stride) {
    (void)runs;
    (void)n_runs;
    const int64_t nb = n / QK, groups = rows / 16;
    column_block *blocks = malloc((size_t)cols * (size_t)nb * sizeof(column_block));
    if (!blocks) return;
    for (int64_t c = 0; c < cols; c++) column_blocks(a + (size_t)c * a_stride, nb, blocks + c * nb);
    const size_t group_bytes = 16 * row_bytes;
    int64_t span = (256 << 10) / (int64_t)group_bytes;
    if (span < 1) span = 1;
    for (int64_t g0 = 0; g0 < groups; g0 += span) {
        const int64_t g1 = g0 + span < groups ? g0 + span : groups;
        for (int64_t c0 = 0; c0 < cols; c0 += 2) {
            const int nc = cols - c0 < 2 ? 1 : 2;
            const uint8_t *ap[2] = {a + (size_t)c0 * a_stride, a + (size_t)(c0 + nc - 1) * a_stride};
            const column_block *cb[2] = {blocks + c0 * nb, blocks + (c0 + nc - 1) * nb};
            for (int64_t g = g0; g < g1; g++)
                tile(w + (size_t)g * group_bytes, ap, cb, nc, nb, 0, out + (size_t)c0 * out_stride + 16 * g, out_stride);
        }
    }
    free(blocks);
}

HK_AVX2 void hk_avx2_matvec_q8_0x16p(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) {
    matvec_x16p(w, row_bytes, rows, a, n, out);
}

HK_AVX2 void hk_avx2_matmul_q8_0x16p(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                     int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    matmul_x16p(w, row_bytes, rows, a, a_stride, cols, n, runs, n_runs, out, out_stride);
}

#endif
