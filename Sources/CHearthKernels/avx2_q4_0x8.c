// Q4_0 as llama.cpp's AVX2 build runs it. There a matrix whose row count is a multiple of 8 is
// repacked at load into block_q4_0x8 (eight rows' blocks interleaved), and its kernels
// (gemv/gemm_q4_b32_8x8_q8_0_lut_avx) reduce each block's 32 products to one integer before a
// single fused multiply-add per block: acc = fma(float(sum_b), d_w * d_a, acc). Any way of
// reaching the exact integer sum_b gives the same bits, so the kernels here take the fastest:
//
// - The weights' nibbles are multiplied as unsigned bytes (0 to 15) with the signed activation
//   bytes, with VNNI's vpdpbusd where the CPU has it (AVX-512 VNNI or AVX-VNNI) and
//   maddubs + madd otherwise; the offset of 8 comes off as 8 · Σ y of the block.
// - Plain rows (HK_Q4_0_X8): matvec takes eight rows at a time, each row's block reduced to its
//   lane of one vector; matmul interleaves a few hundred KB of rows at a time into a scratch
//   panel and runs the interleaved kernels on it.
// - Interleaved rows (HK_Q4_0_X8P, written once at load): the 32-byte chunks of a group's block
//   hold four consecutive weights of each of its eight rows, so that one vpdpbusd of a chunk's
//   nibbles with four broadcast activation bytes leaves each row's partial sum in its own lane,
//   with no horizontal sums. matmul runs a few hundred KB of rows at a time against every group
//   of columns while the rows sit in L2.
#include "avx2.h"
#include <stdlib.h>
#if HK_HAVE_AVX2

#define HK_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define HK_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

// Lane r: the sum of v[r]'s eight lanes (exact integers, in any order).
HK_INLINE HK_AVX2 __m256i sum8(const __m256i *v) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// 8 · Σ y over one Q8_0 block: what the nibbles' offset of 8 adds to their unsigned sum.
HK_INLINE HK_AVX2 int offset_sum(const hk_q8_0 *y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), hk_load256(y->qs));
    return 8 * hk_hsum_i32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

// The exact sum of one Q4_0 block's 32 products with one Q8_0 block, as 8 int32 partial sums
// (before the offset comes off).
HK_INLINE HK_AVX2 __m256i block_lanes(const uint8_t *wb, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(hk_nibbles(wb + 2), y), _mm256_set1_epi16(1));
}

// One row, one column: the chain in a scalar.
HK_INLINE HK_AVX2 float row1(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        const hk_q8_0 *yb = (const hk_q8_0 *)a + b;
        const uint8_t *wb = w + (size_t)b * sizeof(hk_q4_0);
        const int sum = hk_hsum_i32(block_lanes(wb, hk_load256(yb->qs))) - offset_sum(yb);
        acc = hk_fma((float)sum, hk_half(wb) * hk_half(&yb->d), acc);
    }
    return acc;
}

HK_AVX2 float hk_avx2_dot_q4_0x8(const void *w, const void *a, int64_t n) { return row1(w, a, n / QK); }

HK_INLINE HK_AVX2 __m256 scales8(const uint8_t *w, size_t row_bytes) {
    uint16_t h[8];
    for (int r = 0; r < 8; r++) memcpy(&h[r], w + (size_t)r * row_bytes, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

// Eight consecutive rows against one column: lane r is row r. `offsets[b]` is offset_sum of
// block b. LANES(x, y) gives the 8 int32 partial sums of unsigned bytes x times signed bytes y.
#define HK_Q40_ROWS8(name, ATTR, LANES)                                                                 \
    static ATTR void name(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a,            \
                          const int32_t *offsets, int64_t nb, float *out) {                              \
        for (int64_t r = 0; r + 8 <= rows; r += 8) {                                                     \
            const uint8_t *w0 = w + (size_t)r * row_bytes;                                               \
            __m256 acc = _mm256_setzero_ps();                                                            \
            for (int64_t b = 0; b < nb; b++) {                                                           \
                const hk_q8_0 *yb = (const hk_q8_0 *)a + b;                                              \
                const __m256i y = hk_load256(yb->qs);                                                    \
                const uint8_t *wb = w0 + (size_t)b * sizeof(hk_q4_0);                                    \
                __m256i lanes[8];                                                                        \
                for (int i = 0; i < 8; i++) lanes[i] = LANES(hk_nibbles(wb + (size_t)i * row_bytes + 2), y); \
                const __m256i sum = _mm256_sub_epi32(sum8(lanes), _mm256_set1_epi32(offsets[b]));        \
                const __m256 scale = _mm256_mul_ps(scales8(wb, row_bytes), _mm256_set1_ps(hk_half(&yb->d))); \
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc);                              \
            }                                                                                            \
            _mm256_storeu_ps(out + r, acc);                                                              \
        }                                                                                                \
    }

#define HK_LANES_AVX2(x, y) _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1))
#define HK_LANES_VNNI512(x, y) _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y)
#define HK_LANES_AVXVNNI(x, y) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), x, y)

HK_Q40_ROWS8(rows8_avx2, HK_AVX2, HK_LANES_AVX2)
HK_Q40_ROWS8(rows8_vnni512, HK_VNNI512, HK_LANES_VNNI512)
HK_Q40_ROWS8(rows8_avxvnni, HK_AVXVNNI, HK_LANES_AVXVNNI)

HK_AVX2 void hk_avx2_matvec_q4_0x8(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    int32_t stack[512];
    int32_t *offsets = nb <= 512 ? stack : malloc((size_t)nb * sizeof(int32_t));
    if (!offsets) {
        for (int64_t r = 0; r < rows; r++) out[r] = row1(w + (size_t)r * row_bytes, a, nb);
        return;
    }
    for (int64_t b = 0; b < nb; b++) offsets[b] = offset_sum((const hk_q8_0 *)a + b);
    switch (hk_vnni_kind()) {
    case HK_AVX512_VNNI: rows8_vnni512(w, row_bytes, rows, a, offsets, nb, out); break;
    case HK_AVX_VNNI: rows8_avxvnni(w, row_bytes, rows, a, offsets, nb, out); break;
    default: rows8_avx2(w, row_bytes, rows, a, offsets, nb, out); break;
    }
    for (int64_t r = rows / 8 * 8; r < rows; r++) out[r] = row1(w + (size_t)r * row_bytes, a, nb);
    if (offsets != stack) free(offsets);
}

// ---- the interleaved layout (HK_Q4_0_X8P) -----------------------------------------------------

// A group's block: the 8 rows' f16 scales, then for k = 0..3 the bytes qs[4k..4k+3] of the 8
// rows: low nibbles of chunk k are elements 4k..4k+3, high nibbles elements 16+4k..16+4k+3.
#define GROUP_BLOCK (8 * sizeof(hk_q4_0))

// What each column's block contributes besides its bytes: its scale and offset_sum.
typedef struct { float d; int32_t offset; } column_block;

HK_INLINE HK_AVX2 void column_blocks(const uint8_t *a, int64_t nb, column_block *cb) {
    for (int64_t b = 0; b < nb; b++) {
        const hk_q8_0 *yb = (const hk_q8_0 *)a + b;
        cb[b] = (column_block){hk_half(&yb->d), offset_sum(yb)};
    }
}

HK_INLINE HK_AVX2 void group_quants(const uint8_t *p, __m256i w[8]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 4; k++) {
        const __m256i c = _mm256_loadu_si256((const __m256i *)(p + 16 + 32 * k));
        w[k] = _mm256_and_si256(c, low4);
        w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(c, 4), low4);
    }
}

HK_INLINE HK_AVX2 __m256i bcast4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// One group of 8 rows against NC columns (NC a constant where it is inlined). ACC_STEP(acc, w,
// y) adds the products of unsigned bytes w and signed bytes y to acc; ACC_LANES(acc) gives the
// 8 int32 row sums. Group g of each activation block is its bytes 4g..4g+3.
#define HK_Q40_TILE(name, ATTR, ACC_STEP, ACC_LANES)                                                    \
    HK_INLINE ATTR void name##_cols(const uint8_t *group, const uint8_t *const *a,                       \
                                    const column_block *const *cb, const int NC, int64_t nb, float *out,  \
                                    size_t out_stride) {                                                 \
        __m256 acc[8];                                                                                   \
        for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();                                       \
        for (int64_t b = 0; b < nb; b++) {                                                               \
            const uint8_t *p = group + (size_t)b * GROUP_BLOCK;                                          \
            __m256i w[8], sum[8];                                                                        \
            group_quants(p, w);                                                                          \
            for (int c = 0; c < NC; c++) sum[c] = _mm256_setzero_si256();                                \
            for (int g = 0; g < 8; g++)                                                                  \
                for (int c = 0; c < NC; c++)                                                             \
                    sum[c] = ACC_STEP(sum[c], w[g], bcast4(a[c] + (size_t)b * sizeof(hk_q8_0) + 2 + 4 * g)); \
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));                      \
            for (int c = 0; c < NC; c++) {                                                               \
                const __m256i s = _mm256_sub_epi32(ACC_LANES(sum[c]), _mm256_set1_epi32(cb[c][b].offset)); \
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(cb[c][b].d)), acc[c]); \
            }                                                                                            \
        }                                                                                                \
        for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + (size_t)c * out_stride, acc[c]);             \
    }                                                                                                    \
    static ATTR void name(const uint8_t *group, const uint8_t *const *a, const column_block *const *cb,  \
                          int nc, int64_t nb, float *out, size_t out_stride) {                           \
        switch (nc) {                                                                                    \
        case 8: name##_cols(group, a, cb, 8, nb, out, out_stride); break;                                \
        case 7: name##_cols(group, a, cb, 7, nb, out, out_stride); break;                                \
        case 6: name##_cols(group, a, cb, 6, nb, out, out_stride); break;                                \
        case 5: name##_cols(group, a, cb, 5, nb, out, out_stride); break;                                \
        case 4: name##_cols(group, a, cb, 4, nb, out, out_stride); break;                                \
        case 3: name##_cols(group, a, cb, 3, nb, out, out_stride); break;                                \
        case 2: name##_cols(group, a, cb, 2, nb, out, out_stride); break;                                \
        default: name##_cols(group, a, cb, 1, nb, out, out_stride); break;                               \
        }                                                                                                \
    }

// One column against `groups` groups of rows, one group (one stream of memory) at a time, two
// blocks at a time so that four chains of products run side by side (the low and the high
// nibbles of each block), reading ahead of the stream.
#define HK_Q40_VEC(name, ATTR, ACC_STEP, ACC_LANES)                                               \
    HK_INLINE ATTR __m256 name##_block(const uint8_t *p, const column_block *cb, __m256 acc, __m256i lo, __m256i hi) { \
        const __m256i s = _mm256_sub_epi32(_mm256_add_epi32(ACC_LANES(lo), ACC_LANES(hi)), _mm256_set1_epi32(cb->offset)); \
        const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)), _mm256_set1_ps(cb->d)); \
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc);                                       \
    }                                                                                                    \
    static ATTR void name(const uint8_t *w, size_t group_bytes, int64_t groups, const uint8_t *a,        \
                          const column_block *cb, int64_t nb, float *out) {                              \
        const __m256i low4 = _mm256_set1_epi8(0x0F);                                                     \
        for (int64_t g = 0; g < groups; g++) {                                                           \
            const uint8_t *p = w + (size_t)g * group_bytes;                                              \
            __m256 acc = _mm256_setzero_ps();                                                            \
            int64_t b = 0;                                                                               \
            for (; b + 2 <= nb; b += 2, p += 2 * GROUP_BLOCK) {                                          \
                _mm_prefetch((const char *)(p + PREFETCH_BYTES), _MM_HINT_T0);                           \
                _mm_prefetch((const char *)(p + PREFETCH_BYTES + 64), _MM_HINT_T0);                      \
                _mm_prefetch((const char *)(p + PREFETCH_BYTES + 128), _MM_HINT_T0);                     \
                _mm_prefetch((const char *)(p + PREFETCH_BYTES + 192), _MM_HINT_T0);                     \
                _mm_prefetch((const char *)(p + PREFETCH_BYTES + 256), _MM_HINT_T0);                     \
                const uint8_t *y0 = a + (size_t)b * sizeof(hk_q8_0) + 2, *y1 = y0 + sizeof(hk_q8_0);     \
                const uint8_t *p1 = p + GROUP_BLOCK;                                                     \
                __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0;                   \
                for (int k = 0; k < 4; k++) {                                                            \
                    const __m256i c0 = _mm256_loadu_si256((const __m256i *)(p + 16 + 32 * k));           \
                    const __m256i c1 = _mm256_loadu_si256((const __m256i *)(p1 + 16 + 32 * k));          \
                    lo0 = ACC_STEP(lo0, _mm256_and_si256(c0, low4), bcast4(y0 + 4 * k));                 \
                    hi0 = ACC_STEP(hi0, _mm256_and_si256(_mm256_srli_epi16(c0, 4), low4), bcast4(y0 + 16 + 4 * k)); \
                    lo1 = ACC_STEP(lo1, _mm256_and_si256(c1, low4), bcast4(y1 + 4 * k));                 \
                    hi1 = ACC_STEP(hi1, _mm256_and_si256(_mm256_srli_epi16(c1, 4), low4), bcast4(y1 + 16 + 4 * k)); \
                }                                                                                        \
                acc = name##_block(p, cb + b, acc, lo0, hi0);                                        \
                acc = name##_block(p1, cb + b + 1, acc, lo1, hi1);                                   \
            }                                                                                            \
            for (; b < nb; b++, p += GROUP_BLOCK) {                                                      \
                const uint8_t *y0 = a + (size_t)b * sizeof(hk_q8_0) + 2;                                 \
                __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0;                                         \
                for (int k = 0; k < 4; k++) {                                                            \
                    const __m256i c0 = _mm256_loadu_si256((const __m256i *)(p + 16 + 32 * k));           \
                    lo0 = ACC_STEP(lo0, _mm256_and_si256(c0, low4), bcast4(y0 + 4 * k));                 \
                    hi0 = ACC_STEP(hi0, _mm256_and_si256(_mm256_srli_epi16(c0, 4), low4), bcast4(y0 + 16 + 4 * k)); \
                }                                                                                        \
                acc = name##_block(p, cb + b, acc, lo0, hi0);                                        \
            }                                                                                            \
            _mm256_storeu_ps(out + 8 * g, acc);                                                          \
        }                                                                                                \
    }

// How far ahead of its stream matvec asks for the weights.
#define PREFETCH_BYTES 2048

// Without VNNI the products gather as int16 (pairs of up to 2 · 15 · 128, at most 8 of them a
// block, stay within 30,720) and widen once a block.
#define HK_STEP_AVX2(s, w, y) _mm256_add_epi16(s, _mm256_maddubs_epi16(w, y))
#define HK_WIDEN_AVX2(s) _mm256_madd_epi16(s, _mm256_set1_epi16(1))
#define HK_STEP_VNNI512(s, w, y) _mm256_dpbusd_epi32(s, w, y)
#define HK_STEP_AVXVNNI(s, w, y) _mm256_dpbusd_avx_epi32(s, w, y)
#define HK_AS_IS(s) (s)

HK_Q40_TILE(tile_avx2, HK_AVX2, HK_STEP_AVX2, HK_WIDEN_AVX2)
HK_Q40_TILE(tile_vnni512, HK_VNNI512, HK_STEP_VNNI512, HK_AS_IS)
HK_Q40_TILE(tile_avxvnni, HK_AVXVNNI, HK_STEP_AVXVNNI, HK_AS_IS)
HK_Q40_VEC(vec_avx2, HK_AVX2, HK_STEP_AVX2, HK_WIDEN_AVX2)
HK_Q40_VEC(vec_vnni512, HK_VNNI512, HK_STEP_VNNI512, HK_AS_IS)
HK_Q40_VEC(vec_avxvnni, HK_AVXVNNI, HK_STEP_AVXVNNI, HK_AS_IS)

HK_AVX2 void hk_avx2_matvec_q4_0x8p(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    column_block stack[512];
    column_block *cb = nb <= 512 ? stack : malloc((size_t)nb * sizeof(column_block));
    if (!cb) return;
    column_blocks(a, nb, cb);
    switch (hk_vnni_kind()) {
    case HK_AVX512_VNNI: vec_vnni512(w, 8 * row_bytes, rows / 8, a, cb, nb, out); break;
    case HK_AVX_VNNI: vec_avxvnni(w, 8 * row_bytes, rows / 8, a, cb, nb, out); break;
    default: vec_avx2(w, 8 * row_bytes, rows / 8, a, cb, nb, out); break;
    }
    if (cb != stack) free(cb);
}

// `rows` (a multiple of 8) interleaved rows against every column: a few hundred KB of rows at a
// time, over which every group of columns passes while they sit in L2.
HK_INLINE HK_AVX2 void interleaved_matmul(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                          int64_t cols, int64_t nb, const column_block *blocks, float *out, size_t out_stride) {
    const int kind = hk_vnni_kind();
    const int width = kind == HK_AVX512_VNNI ? 8 : 4;
    const size_t group_bytes = 8 * row_bytes;
    int64_t span = (256 << 10) / (int64_t)group_bytes;
    if (span < 1) span = 1;
    for (int64_t g0 = 0; g0 < rows / 8; g0 += span) {
        const int64_t g1 = g0 + span < rows / 8 ? g0 + span : rows / 8;
        for (int64_t c0 = 0; c0 < cols; c0 += width) {
            const int nc = (int)(cols - c0 < width ? cols - c0 : width);
            const uint8_t *ap[8];
            const column_block *cb[8];
            for (int i = 0; i < nc; i++) {
                ap[i] = a + (size_t)(c0 + i) * a_stride;
                cb[i] = blocks + (c0 + i) * nb;
            }
            for (int64_t g = g0; g < g1; g++) {
                const uint8_t *group = w + (size_t)g * group_bytes;
                float *o = out + (size_t)c0 * out_stride + 8 * g;
                switch (kind) {
                case HK_AVX512_VNNI: tile_vnni512(group, ap, cb, nc, nb, o, out_stride); break;
                case HK_AVX_VNNI: tile_avxvnni(group, ap, cb, nc, nb, o, out_stride); break;
                default: tile_avx2(group, ap, cb, nc, nb, o, out_stride); break;
                }
            }
        }
    }
}

HK_INLINE HK_AVX2 column_block *all_column_blocks(const uint8_t *a, size_t a_stride, int64_t cols, int64_t nb) {
    column_block *blocks = malloc((size_t)cols * (size_t)nb * sizeof(column_block));
    if (blocks)
        for (int64_t c = 0; c < cols; c++) column_blocks(a + (size_t)c * a_stride, nb, blocks + c * nb);
    return blocks;
}

HK_AVX2 void hk_avx2_matmul_q4_0x8p(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                    int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    (void)runs;
    (void)n_runs;
    const int64_t nb = n / QK;
    column_block *blocks = all_column_blocks(a, a_stride, cols, nb);
    if (!blocks) return;
    interleaved_matmul(w, row_bytes, rows, a, a_stride, cols, nb, blocks, out, out_stride);
    free(blocks);
}

// Plain rows: interleaved a few hundred KB at a time into a scratch panel first.
HK_AVX2 void hk_avx2_matmul_q4_0x8(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride,
                                   int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    (void)runs;
    (void)n_runs;
    const int64_t nb = n / QK, whole = rows / 8 * 8;
    int64_t span = (256 << 10) / (int64_t)(8 * row_bytes);
    if (span < 1) span = 1;
    column_block *blocks = whole ? all_column_blocks(a, a_stride, cols, nb) : NULL;
    uint8_t *panel = whole ? malloc((size_t)span * 8 * row_bytes) : NULL;
    const int64_t done = blocks && panel ? whole : 0;
    for (int64_t r0 = 0; r0 < done; r0 += 8 * span) {
        const int64_t count = done - r0 < 8 * span ? done - r0 : 8 * span;
        hk_interleave(HK_Q4_0_X8P, w + (size_t)r0 * row_bytes, row_bytes, count, panel);
        interleaved_matmul(panel, row_bytes, count, a, a_stride, cols, nb, blocks, out + r0, out_stride);
    }
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = done; r < rows; r++)
            out[(size_t)c * out_stride + r] = row1(w + (size_t)r * row_bytes, a + (size_t)c * a_stride, nb);
    free(blocks);
    free(panel);
}

#endif
