// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M: dequantization, and products with
// Q8_K activations that give llama.cpp's AVX2 results bit for bit on both paths.
//
// Their weights come in groups of eight, each group a point of a fixed grid (iq_grids.c): eight
// magnitudes with signs apart for IQ2 and IQ3, eight values of -1, 0 or +1 for IQ1, whose
// weights are also shifted by ±1/8. A super-block is unpacked once into its 256 signed weights,
// a scale per 16 weights and IQ1's shifts (grid_block; on AVX2 a chunk of 32 at a time, into
// registers); its integer sums with a Q8_K block are then exact in any order, and what llama.cpp
// fixes is which of them become floats and how the floats are added:
//
// - ggml_vec_dot_*_q8_K, which llama.cpp runs for batches of fewer than 8 columns: eight int32
//   lanes per super-block, lane k gathering the weights e with (e % 32) / 4 == k, each product
//   weighted by its scale; each lane is fused into a float lane with d(weights) · d(activations),
//   and the float lanes are added at the end, times the format's constant (1/8 for IQ2, 1/4 for
//   IQ3_XXS, 1 for IQ3_S). The shifts' sums go apart: IQ1_S's whole integer is fused into one
//   float, IQ1_M's eight lanes into float lanes of their own, and either joins the sum at the
//   end times 1/8.
// - llama.cpp's tiled kernel, from 8 columns on: one integer per super-block (IQ1's weights
//   counted in eighths, 8 · value + shift), times d(weights) with the format's constant, then
//   fused with d(activations).
#pragma STDC FP_CONTRACT OFF
#include <math.h>
#include "internal.h"
#include "reduce.h"
#if HK_HAVE_AVX2
#include "avx2.h"
#endif

// ---- the formats ---------------------------------------------------------------------------

static inline int has_shifts(uint32_t type) { return type == HK_IQ1_S || type == HK_IQ1_M; }

static size_t block_bytes(uint32_t type) {
    switch (type) {
    case HK_IQ2_XXS: return sizeof(hk_iq2_xxs);
    case HK_IQ2_XS: return sizeof(hk_iq2_xs);
    case HK_IQ2_S: return sizeof(hk_iq2_s);
    case HK_IQ3_XXS: return sizeof(hk_iq3_xxs);
    case HK_IQ3_S: return sizeof(hk_iq3_s);
    case HK_IQ1_S: return sizeof(hk_iq1_s);
    default: return sizeof(hk_iq1_m);
    }
}

// One super-block unpacked: weight e is d · scale[e / 16] · w[e] times the format's constant
// (IQ1: d · scale[e / 16] · (w[e] + shift[e / 8] / 8)).
typedef struct {
    int8_t w[QK_K];            // grid magnitudes with their signs; IQ1's -1, 0, +1
    int8_t shift[QK_K / 8];    // IQ1 only: ±1
    int16_t scale[QK_K / 16];  // odd, 1 ... 31 (IQ1: 1 ... 15)
    float d;
} grid_block;

static inline uint16_t word16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t word32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

// Eight weights of a point of magnitudes (the first in its low byte), negated where bit j of
// `signs` is set.
static inline void signed8(int8_t *w, uint64_t point, unsigned signs) {
    for (int j = 0; j < 8; j++) {
        const int v = (int)((point >> (8 * j)) & 0xFF);
        w[j] = (int8_t)((signs >> j) & 1 ? -v : v);
    }
}

// Eight IQ1 values (bytes of -1, 0 or +1).
static inline void values8(int8_t *w, uint64_t point) {
    for (int j = 0; j < 8; j++) w[j] = (int8_t)(uint8_t)(point >> (8 * j));
}

// Both halves of 32 weights under one scale.
static inline void scale32(grid_block *b, int ib, int scale) { b->scale[2 * ib] = b->scale[2 * ib + 1] = (int16_t)scale; }

// IQ1_M's f16 super-block scale, the top nibbles of its four scale words.
static inline uint16_t iq1m_d(const hk_iq1_m *x) {
    uint16_t sc[4];
    memcpy(sc, x->scales, 8);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
}

static void unpack(uint32_t type, const uint8_t *p, grid_block *b) {
    switch (type) {
    case HK_IQ2_XXS: {
        const uint8_t *qs = p + 2;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t grid = word32(qs + 8 * ib), signs = word32(qs + 8 * ib + 4);
            scale32(b, ib, 2 * (int)(signs >> 28) + 1);
            for (int l = 0; l < 4; l++)
                signed8(b->w + 32 * ib + 8 * l, hk_iq2xxs_grid[(grid >> (8 * l)) & 0xFF], hk_iq_signs[(signs >> (7 * l)) & 127]);
        }
        break;
    }
    case HK_IQ2_XS: {
        const hk_iq2_xs *x = (const hk_iq2_xs *)p;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            b->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 0xF) + 1);
            b->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
            for (int l = 0; l < 4; l++) {
                const uint16_t q = word16(p + 2 + 2 * (4 * ib + l));
                signed8(b->w + 32 * ib + 8 * l, hk_iq2xs_grid[q & 511], hk_iq_signs[q >> 9]);
            }
        }
        break;
    }
    case HK_IQ2_S: {
        const hk_iq2_s *x = (const hk_iq2_s *)p;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            b->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 0xF) + 1);
            b->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
            for (int l = 0; l < 4; l++) {
                const int index = x->qs[4 * ib + l] | ((x->qh[ib] << (8 - 2 * l)) & 0x300);
                signed8(b->w + 32 * ib + 8 * l, hk_iq2s_grid[index], x->qs[32 + 4 * ib + l]);
            }
        }
        break;
    }
    case HK_IQ3_XXS: {
        const hk_iq3_xxs *x = (const hk_iq3_xxs *)p;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t signs = word32(x->qs + 64 + 4 * ib);
            scale32(b, ib, 2 * (int)(signs >> 28) + 1);
            for (int l = 0; l < 4; l++) {
                const uint8_t *q = x->qs + 8 * ib + 2 * l;
                const uint64_t point = hk_iq3xxs_grid[q[0]] | (uint64_t)hk_iq3xxs_grid[q[1]] << 32;
                signed8(b->w + 32 * ib + 8 * l, point, hk_iq_signs[(signs >> (7 * l)) & 127]);
            }
        }
        break;
    }
    case HK_IQ3_S: {
        const hk_iq3_s *x = (const hk_iq3_s *)p;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            scale32(b, ib, 2 * ((x->scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1);
            for (int l = 0; l < 4; l++) {
                const uint8_t *q = x->qs + 8 * ib + 2 * l;
                const int i1 = q[0] | ((x->qh[ib] << (8 - 2 * l)) & 256), i2 = q[1] | ((x->qh[ib] << (7 - 2 * l)) & 256);
                signed8(b->w + 32 * ib + 8 * l, hk_iq3s_grid[i1] | (uint64_t)hk_iq3s_grid[i2] << 32, x->signs[4 * ib + l]);
            }
        }
        break;
    }
    case HK_IQ1_S: {
        const hk_iq1_s *x = (const hk_iq1_s *)p;
        b->d = hk_fp16_to_fp32(word16(p));
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t h = word16(p + 34 + 2 * ib);
            scale32(b, ib, 2 * ((h >> 12) & 7) + 1);
            for (int l = 0; l < 4; l++) {
                values8(b->w + 32 * ib + 8 * l, hk_iq1s_grid[x->qs[4 * ib + l] | (((h >> (3 * l)) & 7) << 8)]);
                b->shift[4 * ib + l] = h & 0x8000 ? -1 : 1;
            }
        }
        break;
    }
    default: {
        const hk_iq1_m *x = (const hk_iq1_m *)p;
        b->d = hk_fp16_to_fp32(iq1m_d(x));
        for (int s = 0; s < 16; s++) b->scale[s] = (int16_t)(2 * ((word16(x->scales + 2 * (s / 4)) >> (3 * (s % 4))) & 7) + 1);
        for (int g = 0; g < 32; g++) {
            const int h = x->qh[g / 2] >> (4 * (g % 2));
            values8(b->w + 8 * g, hk_iq1s_grid[x->qs[g] | ((h & 7) << 8)]);
            b->shift[g] = h & 8 ? -1 : 1;
        }
        break;
    }
    }
}

// ---- dequantize (GGML's dequantize_row_*) --------------------------------------------------

static void dequantize(uint32_t type, const uint8_t *x, float *y, int64_t nb) {
    const size_t bytes = block_bytes(type);
    for (int64_t i = 0; i < nb; i++, x += bytes, y += QK_K) {
        grid_block b;
        unpack(type, x, &b);
        for (int s = 0; s < 16; s++) {
            // GGML's sub-block factors: d · (ls + 1/2) / 4 for IQ2 (halved again for IQ3_XXS),
            // d · (2 ls + 1) for IQ3_S and IQ1, where scale = 2 ls + 1.
            const int sc = b.scale[s];
            const float db = type == HK_IQ3_XXS ? b.d * (0.5f + (float)(sc >> 1)) * 0.5f
                             : type == HK_IQ3_S || has_shifts(type) ? b.d * (float)sc
                                                                    : b.d * (0.5f + (float)(sc >> 1)) * 0.25f;
            for (int e = 16 * s; e < 16 * s + 16; e++)
                y[e] = has_shifts(type) ? db * ((float)b.w[e] + (b.shift[e / 8] < 0 ? -0.125f : 0.125f)) : db * (float)b.w[e];
        }
    }
}

int hk_grid_dequantize(uint32_t type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case HK_IQ2_XXS: case HK_IQ2_XS: case HK_IQ2_S: case HK_IQ3_XXS: case HK_IQ3_S: case HK_IQ1_S: case HK_IQ1_M:
        dequantize(type, src, dst, n / QK_K);
        return 0;
    default: return -1;
    }
}

// ---- the float sequences -------------------------------------------------------------------

enum { ORDER_LANES, ORDER_TILED };

// Columns that share each unpacked super-block.
#define COLUMNS 16

// One row's sums with one column so far.
typedef struct {
    float lane[8], shifted[8];  // ORDER_LANES: the grid's float lanes, IQ1_M's shifts' lanes
    float ones;                 // ORDER_LANES: IQ1_S's shifts
    float total;                // ORDER_TILED
} grid_sums;


// The tiled kernel's super-block integer, and its d(weights) with the format's constant.
static inline int32_t tiled_integer(uint32_t type, int32_t grid, int32_t shifts) {
    return has_shifts(type) ? 8 * grid + shifts : grid;
}

static inline float tiled_scale(uint32_t type, float d) {
    return type == HK_IQ3_S ? d : d * (type == HK_IQ3_XXS ? 0.25f : 0.125f);
}

static float finish(uint32_t type, int order, const grid_sums *s, float (*fma)(float, float, float)) {
    if (order == ORDER_TILED) return s->total;
    const float sum = hk_reduce8(s->lane);
    switch (type) {
    case HK_IQ3_S: return sum;
    case HK_IQ3_XXS: return 0.25f * sum;
    case HK_IQ1_S: return sum + 0.125f * s->ones;
    // GCC contracts llama.cpp's hsum + IQ1M_DELTA · hsum into a fused multiply-add.
    case HK_IQ1_M: return fmaf(0.125f, hk_reduce8(s->shifted), sum);
    default: return 0.125f * sum;
    }
}

// ---- one super-block against one column, scalar --------------------------------------------

static void add_scalar(uint32_t type, int order, const grid_block *b, const hk_q8_K *y, grid_sums *s) {
    int32_t lane[8] = {0}, shifted[8] = {0};
    const int shifts = has_shifts(type);
    for (int e = 0; e < QK_K; e++) {
        const int k = (e % 32) / 4, sa = b->scale[e / 16] * y->qs[e];
        lane[k] += sa * b->w[e];
        if (shifts) shifted[k] += sa * b->shift[e / 8];
    }
    if (order == ORDER_TILED) {
        const float r = tiled_scale(type, b->d) * (float)tiled_integer(type, hk_total8_i32(lane), hk_total8_i32(shifted));
        s->total = fmaf(r, y->d, s->total);
        return;
    }
    const float dd = b->d * y->d;
    for (int k = 0; k < 8; k++) s->lane[k] = fmaf(dd, (float)lane[k], s->lane[k]);
    if (type == HK_IQ1_S) s->ones = fmaf(dd, (float)hk_total8_i32(shifted), s->ones);
    if (type == HK_IQ1_M)
        for (int k = 0; k < 8; k++) s->shifted[k] = fmaf(dd, (float)shifted[k], s->shifted[k]);
}

// ---- AVX2: chunks of 32 weights unpacked into registers -------------------------------------

#if HK_HAVE_AVX2
// 32 weights of a super-block as grid_block holds them: the weights and their sizes, the
// chunk's two scales as int16 (its first 16 weights' in the low half, the next 16's in the high
// half), IQ1_M's shifts as bytes, and IQ1_S's shift times scale.
typedef struct {
    __m256i w, size, scale, shift;
    int32_t shift_scale;
} grid_chunk;

// Weights from four points of magnitudes (the first group in the low 64 bits), negated where
// bit i of `signs` is set.
HK_INLINE HK_AVX2 void signed32(grid_chunk *k, __m256i points, uint32_t signs) {
    const __m256i m = hk_bit_mask32((const uint8_t *)&signs);
    k->w = _mm256_sub_epi8(_mm256_xor_si256(points, m), m);
    k->size = points;
}

// IQ1's values: their sizes are 1 wherever they matter (sign_epi8 zeroes the activation where a
// value is 0).
HK_INLINE HK_AVX2 void values32(grid_chunk *k, __m256i values) {
    k->w = values;
    k->size = _mm256_set1_epi8(1);
}

HK_INLINE HK_AVX2 __m256i scales32(int first, int second) {
    return _mm256_set_m128i(_mm_set1_epi16((short)second), _mm_set1_epi16((short)first));
}

// The eight sign bits of four 7-bit sign indices, one byte each.
HK_INLINE uint32_t signs4(uint32_t indices) {
    return hk_iq_signs[indices & 127] | (uint32_t)hk_iq_signs[(indices >> 7) & 127] << 8 |
           (uint32_t)hk_iq_signs[(indices >> 14) & 127] << 16 | (uint32_t)hk_iq_signs[(indices >> 21) & 127] << 24;
}

HK_INLINE HK_AVX2 __m256i points4(const uint64_t *grid, int i0, int i1, int i2, int i3) {
    return _mm256_set_epi64x((long long)grid[i3], (long long)grid[i2], (long long)grid[i1], (long long)grid[i0]);
}

HK_INLINE HK_AVX2 float block_d(const uint32_t type, const uint8_t *p) {
    return type == HK_IQ1_M ? hk_fp16_to_fp32(iq1m_d((const hk_iq1_m *)p)) : hk_half(p);
}

// Chunk ch (0..7) of the super-block at p.
HK_INLINE HK_AVX2 void unpack_chunk(const uint32_t type, const uint8_t *p, int ch, grid_chunk *k) {
    switch (type) {
    case HK_IQ2_XXS: {
        const uint8_t *q = p + 2 + 8 * ch;
        const uint32_t signs = word32(q + 4);
        const int sc = 2 * (int)(signs >> 28) + 1;
        k->scale = scales32(sc, sc);
        signed32(k, points4(hk_iq2xxs_grid, q[0], q[1], q[2], q[3]), signs4(signs));
        return;
    }
    case HK_IQ2_XS: {
        const hk_iq2_xs *x = (const hk_iq2_xs *)p;
        uint16_t q[4];
        memcpy(q, p + 2 + 8 * ch, 8);
        k->scale = scales32(2 * (x->scales[ch] & 0xF) + 1, 2 * (x->scales[ch] >> 4) + 1);
        const uint32_t signs = hk_iq_signs[q[0] >> 9] | (uint32_t)hk_iq_signs[q[1] >> 9] << 8 |
                               (uint32_t)hk_iq_signs[q[2] >> 9] << 16 | (uint32_t)hk_iq_signs[q[3] >> 9] << 24;
        signed32(k, points4(hk_iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511), signs);
        return;
    }
    case HK_IQ2_S: {
        const hk_iq2_s *x = (const hk_iq2_s *)p;
        const uint8_t *q = x->qs + 4 * ch;
        const int h = x->qh[ch];
        k->scale = scales32(2 * (x->scales[ch] & 0xF) + 1, 2 * (x->scales[ch] >> 4) + 1);
        signed32(k,
                 points4(hk_iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300),
                         q[3] | ((h << 2) & 0x300)),
                 word32(x->qs + 32 + 4 * ch));
        return;
    }
    case HK_IQ3_XXS: {
        const hk_iq3_xxs *x = (const hk_iq3_xxs *)p;
        const uint8_t *q = x->qs + 8 * ch;
        const uint32_t signs = word32(x->qs + 64 + 4 * ch);
        const int sc = 2 * (int)(signs >> 28) + 1;
        k->scale = scales32(sc, sc);
        const __m256i points = _mm256_set_epi32((int)hk_iq3xxs_grid[q[7]], (int)hk_iq3xxs_grid[q[6]], (int)hk_iq3xxs_grid[q[5]],
                                                (int)hk_iq3xxs_grid[q[4]], (int)hk_iq3xxs_grid[q[3]], (int)hk_iq3xxs_grid[q[2]],
                                                (int)hk_iq3xxs_grid[q[1]], (int)hk_iq3xxs_grid[q[0]]);
        signed32(k, points, signs4(signs));
        return;
    }
    case HK_IQ3_S: {
        const hk_iq3_s *x = (const hk_iq3_s *)p;
        const int sc = 2 * ((x->scales[ch / 2] >> (4 * (ch % 2))) & 0xF) + 1;
        k->scale = scales32(sc, sc);
        // Index i of the chunk takes its ninth bit from bit i of the chunk's qh.
        const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(x->qs + 8 * ch)));
        const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(x->qh[ch]), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                                              _mm256_set1_epi32(256));
        signed32(k, _mm256_i32gather_epi32((const int *)hk_iq3s_grid, _mm256_or_si256(low, high), 4), word32(x->signs + 4 * ch));
        return;
    }
    case HK_IQ1_S: {
        const hk_iq1_s *x = (const hk_iq1_s *)p;
        const int h = word16(p + 34 + 2 * ch), sc = 2 * ((h >> 12) & 7) + 1;
        const uint8_t *q = x->qs + 4 * ch;
        k->scale = scales32(sc, sc);
        k->shift_scale = h & 0x8000 ? -sc : sc;
        values32(k, points4(hk_iq1s_grid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700), q[2] | ((h << 2) & 0x700),
                            q[3] | ((h >> 1) & 0x700)));
        return;
    }
    default: {
        const hk_iq1_m *x = (const hk_iq1_m *)p;
        const int word = word16(x->scales + 2 * (ch / 2)) >> (6 * (ch % 2));
        const uint8_t *q = x->qs + 4 * ch, *h = x->qh + 2 * ch;
        k->scale = scales32(2 * (word & 7) + 1, 2 * ((word >> 3) & 7) + 1);
        values32(k, points4(hk_iq1s_grid, q[0] | ((h[0] << 8) & 0x700), q[1] | ((h[0] << 4) & 0x700), q[2] | ((h[1] << 8) & 0x700),
                            q[3] | ((h[1] << 4) & 0x700)));
        // Bit 3 of nibble j of h: a negative shift for weights 8j ... 8j + 7.
        const __m256i bit = _mm256_setr_epi64x(0x08, 0x80, 0x800, 0x8000);
        const __m256i negative = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(word16(h)), bit), bit);
        k->shift = _mm256_or_si256(negative, _mm256_set1_epi8(1));
        return;
    }
    }
}

// A chunk's products with its 32 activations, into the integer lanes (add_scalar's).
HK_INLINE HK_AVX2 void chunk_lanes(const uint32_t type, const grid_chunk *k, const int8_t *qs, __m256i *lane, __m256i *shifted) {
    const __m256i a = hk_load256(qs);
    // Sizes ≤ 62 and activations ≤ 127 in size: no pair of products saturates.
    *lane = _mm256_add_epi32(*lane, _mm256_madd_epi16(_mm256_maddubs_epi16(k->size, _mm256_sign_epi8(a, k->w)), k->scale));
    if (type == HK_IQ1_M) {
        const __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(a, k->shift));
        *shifted = _mm256_add_epi32(*shifted, _mm256_madd_epi16(p, k->scale));
    }
}

// One super-block's integers with one column into its sums, in the order of add_scalar.
HK_INLINE HK_AVX2 void add_lanes(const uint32_t type, int order, float d, const hk_q8_K *y, __m256i lane, __m256i shifted,
                                 int32_t ones, grid_sums *s) {
    if (order == ORDER_TILED) {
        const int32_t shifts = type == HK_IQ1_S ? ones : type == HK_IQ1_M ? hk_hsum_i32(shifted) : 0;
        const float r = tiled_scale(type, d) * (float)tiled_integer(type, hk_hsum_i32(lane), shifts);
        s->total = hk_fma(r, y->d, s->total);
        return;
    }
    const float dd = d * y->d;
    _mm256_storeu_ps(s->lane, _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(lane), _mm256_loadu_ps(s->lane)));
    if (type == HK_IQ1_S) s->ones = hk_fma(dd, (float)ones, s->ones);
    if (type == HK_IQ1_M)
        _mm256_storeu_ps(s->shifted, _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(shifted), _mm256_loadu_ps(s->shifted)));
}

// IQ1_S's shifts against a column: Σ shift · scale · (the chunk's activation sum), from bsums.
HK_INLINE HK_AVX2 int32_t shift_sum(const int32_t shift_scale[8], const hk_q8_K *y) {
    int32_t ones = 0;
    for (int ch = 0; ch < 8; ch++) ones += shift_scale[ch] * (y->bsums[2 * ch] + y->bsums[2 * ch + 1]);
    return ones;
}

static HK_AVX2 float fma_avx2(float a, float b, float c) { return hk_fma(a, b, c); }

HK_INLINE HK_AVX2 void rows_avx2(const uint32_t type, int order, const uint8_t *w, size_t row_bytes, int64_t rows,
                                 const hk_q8_K *const *a, int nc, int64_t nb, float *out, size_t out_stride) {
    for (int64_t r = 0; r < rows; r++) {
        grid_sums s[COLUMNS];
        memset(s, 0, (size_t)nc * sizeof *s);
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *p = w + (size_t)r * row_bytes + (size_t)i * block_bytes(type);
            const float d = block_d(type, p);
            grid_chunk k[8];
            int32_t shift_scale[8];
            if (nc == 1) {
                // One column: each chunk is used as soon as it is unpacked.
                __m256i lane = _mm256_setzero_si256(), shifted = _mm256_setzero_si256();
                for (int ch = 0; ch < 8; ch++) {
                    unpack_chunk(type, p, ch, &k[0]);
                    chunk_lanes(type, &k[0], a[0][i].qs + 32 * ch, &lane, &shifted);
                    shift_scale[ch] = k[0].shift_scale;
                }
                add_lanes(type, order, d, &a[0][i], lane, shifted, type == HK_IQ1_S ? shift_sum(shift_scale, &a[0][i]) : 0, &s[0]);
                continue;
            }
            for (int ch = 0; ch < 8; ch++) {
                unpack_chunk(type, p, ch, &k[ch]);
                shift_scale[ch] = k[ch].shift_scale;
            }
            for (int c = 0; c < nc; c++) {
                __m256i lane = _mm256_setzero_si256(), shifted = _mm256_setzero_si256();
                for (int ch = 0; ch < 8; ch++) chunk_lanes(type, &k[ch], a[c][i].qs + 32 * ch, &lane, &shifted);
                add_lanes(type, order, d, &a[c][i], lane, shifted, type == HK_IQ1_S ? shift_sum(shift_scale, &a[c][i]) : 0, &s[c]);
            }
        }
        for (int c = 0; c < nc; c++) out[(size_t)c * out_stride + (size_t)r] = finish(type, order, &s[c], fma_avx2);
    }
}

static HK_AVX2 void rows_avx2_any(uint32_t type, int order, const uint8_t *w, size_t row_bytes, int64_t rows,
                                  const hk_q8_K *const *a, int nc, int64_t nb, float *out, size_t out_stride) {
    switch (type) {
    case HK_IQ2_XXS: rows_avx2(HK_IQ2_XXS, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    case HK_IQ2_XS: rows_avx2(HK_IQ2_XS, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    case HK_IQ2_S: rows_avx2(HK_IQ2_S, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    case HK_IQ3_XXS: rows_avx2(HK_IQ3_XXS, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    case HK_IQ3_S: rows_avx2(HK_IQ3_S, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    case HK_IQ1_S: rows_avx2(HK_IQ1_S, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    default: rows_avx2(HK_IQ1_M, order, w, row_bytes, rows, a, nc, nb, out, out_stride); break;
    }
}
#endif

// ---- rows against columns ------------------------------------------------------------------

static void rows_scalar(uint32_t type, int order, const uint8_t *w, size_t row_bytes, int64_t rows, const hk_q8_K *const *a,
                        int nc, int64_t nb, float *out, size_t out_stride) {
    for (int64_t r = 0; r < rows; r++) {
        grid_sums s[COLUMNS];
        memset(s, 0, (size_t)nc * sizeof *s);
        for (int64_t i = 0; i < nb; i++) {
            grid_block b;
            unpack(type, w + (size_t)r * row_bytes + (size_t)i * block_bytes(type), &b);
            for (int c = 0; c < nc; c++) add_scalar(type, order, &b, a[c] + i, &s[c]);
        }
        for (int c = 0; c < nc; c++) out[(size_t)c * out_stride + (size_t)r] = finish(type, order, &s[c], fmaf);
    }
}

// Rows of one type against up to COLUMNS columns (column c's blocks at a[c]) in one order, into
// out[c * out_stride + r].
typedef void (*rows_fn)(uint32_t type, int order, const uint8_t *w, size_t row_bytes, int64_t rows, const hk_q8_K *const *a,
                        int nc, int64_t nb, float *out, size_t out_stride);

// Rows against `cols` columns of Q8_K activations (column c at a + c * a_stride) into
// out[c * out_stride + r]. Each run of columns (one sequence's rows, NULL: one run) is summed
// as llama.cpp sums a batch of its length: ggml_vec_dot's order below 8 columns, the tiled
// kernel's from 8 on.
static void grid_products(rows_fn rows_of, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t rows,
                          const uint8_t *a, size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                          float *out, size_t out_stride) {
    int64_t col = 0;
    for (int64_t ri = 0; ri < (runs ? n_runs : 1); ri++) {
        const int64_t len = runs ? runs[ri] : cols;
        const int order = len >= 8 ? ORDER_TILED : ORDER_LANES;
        for (int64_t c0 = col; c0 < col + len; c0 += COLUMNS) {
            const int nc = (int)(col + len - c0 < COLUMNS ? col + len - c0 : COLUMNS);
            const hk_q8_K *ac[COLUMNS];
            for (int c = 0; c < nc; c++) ac[c] = (const hk_q8_K *)(a + (size_t)(c0 + c) * a_stride);
            rows_of(type, order, w, row_bytes, rows, ac, nc, n / QK_K, out + (size_t)c0 * out_stride, out_stride);
        }
        col += len;
    }
}

#define GRID_KERNELS(NAME, PATH, TYPE)                                                              \
    static float NAME##_dot(const void *w, const void *a, int64_t n) {                              \
        float out;                                                                                  \
        grid_products(PATH, TYPE, w, 0, 1, a, 0, 1, n, NULL, 0, &out, 1);                            \
        return out;                                                                                 \
    }                                                                                               \
    static void NAME##_matvec(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, float *out) { \
        grid_products(PATH, TYPE, w, row_bytes, rows, a, 0, 1, n, NULL, 0, out, 0);                  \
    }                                                                                               \
    static void NAME##_matmul(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride, \
                              int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, \
                              size_t out_stride) {                                                  \
        grid_products(PATH, TYPE, w, row_bytes, rows, a, a_stride, cols, n, runs, n_runs, out, out_stride); \
    }                                                                                               \
    static const hk_kernel NAME = {NAME##_dot, NAME##_matvec, NAME##_matmul};

GRID_KERNELS(k_iq2_xxs_portable, rows_scalar, HK_IQ2_XXS)
GRID_KERNELS(k_iq2_xs_portable, rows_scalar, HK_IQ2_XS)
GRID_KERNELS(k_iq2_s_portable, rows_scalar, HK_IQ2_S)
GRID_KERNELS(k_iq3_xxs_portable, rows_scalar, HK_IQ3_XXS)
GRID_KERNELS(k_iq3_s_portable, rows_scalar, HK_IQ3_S)
GRID_KERNELS(k_iq1_s_portable, rows_scalar, HK_IQ1_S)
GRID_KERNELS(k_iq1_m_portable, rows_scalar, HK_IQ1_M)
#if HK_HAVE_AVX2
GRID_KERNELS(k_iq2_xxs_avx2, rows_avx2_any, HK_IQ2_XXS)
GRID_KERNELS(k_iq2_xs_avx2, rows_avx2_any, HK_IQ2_XS)
GRID_KERNELS(k_iq2_s_avx2, rows_avx2_any, HK_IQ2_S)
GRID_KERNELS(k_iq3_xxs_avx2, rows_avx2_any, HK_IQ3_XXS)
GRID_KERNELS(k_iq3_s_avx2, rows_avx2_any, HK_IQ3_S)
GRID_KERNELS(k_iq1_s_avx2, rows_avx2_any, HK_IQ1_S)
GRID_KERNELS(k_iq1_m_avx2, rows_avx2_any, HK_IQ1_M)
#endif

const hk_kernel *hk_grid_kernel(int isa, uint32_t type) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) {
        switch (type) {
        case HK_IQ2_XXS: return &k_iq2_xxs_avx2;
        case HK_IQ2_XS: return &k_iq2_xs_avx2;
        case HK_IQ2_S: return &k_iq2_s_avx2;
        case HK_IQ3_XXS: return &k_iq3_xxs_avx2;
        case HK_IQ3_S: return &k_iq3_s_avx2;
        case HK_IQ1_S: return &k_iq1_s_avx2;
        case HK_IQ1_M: return &k_iq1_m_avx2;
        default: return NULL;
        }
    }
#endif
    (void)isa;
    switch (type) {
    case HK_IQ2_XXS: return &k_iq2_xxs_portable;
    case HK_IQ2_XS: return &k_iq2_xs_portable;
    case HK_IQ2_S: return &k_iq2_s_portable;
    case HK_IQ3_XXS: return &k_iq3_xxs_portable;
    case HK_IQ3_S: return &k_iq3_s_portable;
    case HK_IQ1_S: return &k_iq1_s_portable;
    case HK_IQ1_M: return &k_iq1_m_portable;
    default: return NULL;
    }
}
