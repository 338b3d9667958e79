// Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: dequantization, and products with int8 activations (Q8_K,
// and Q8_0 for IQ4_NL and MXFP4) that give llama.cpp's AVX2 results bit for bit on both paths.
//
// A product's integers are exact in any order; what llama.cpp's kernels fix is which partial
// sums become floats and how the floats are accumulated. Each kernel here computes the same
// partial sums ("lanes") on either path — vector code on AVX2, scalar code elsewhere — and then
// runs one shared float sequence over them:
//
// - ggml_vec_dot_*: per super-block eight int32 lanes, lane k gathering the elements e with
//   (e % 32) / 4 == k, each product weighted by its sub-block's scale; each lane is scaled by
//   d(weights) · d(activations) into its own float lane (Q2_K first adds its mins' lanes under
//   -dmin · d), and the eight float lanes are added at the end. The blocks of 32 of IQ4_NL and
//   MXFP4 alternate between two such float accumulators, and a last odd block is fused in as a
//   scalar.
// - The tiled kernel llama.cpp uses for K-quant batches of 8 or more columns (Q2_K, Q3_K,
//   IQ4_XS): one integer per super-block, scaled by d(weights) (Q2_K's mins fused in with
//   -dmin), then fused with d(activations) into one float per row and column.
// - llamafile's tinyBLAS for IQ4_NL matrices that are not repacked, from 2 columns on: one float
//   lane per integer lane, fused block by block, the lanes added at the end.
// - IQ4_NL and MXFP4 repacked eight rows at a time (block_iq4_nlx8 and block_mxfp4x8, matrices
//   whose rows are a multiple of 8): one integer per block of 32, fused with d(weights) ·
//   d(activations).
#pragma STDC FP_CONTRACT OFF
#include <math.h>
#include <stdlib.h>
#include "internal.h"
#include "reduce.h"
#if HK_HAVE_AVX2
#include "avx2.h"
#endif

// ---- the formats ---------------------------------------------------------------------------

// Q3_K's sixteen 6-bit scales, less 32.
static void q3k_scales(const uint8_t *packed, int sc[16]) {
    uint32_t aux[4];
    memcpy(aux, packed, 12);
    const uint32_t low4 = 0x0f0f0f0f, low2 = 0x03030303, top = aux[2];
    aux[2] = ((aux[0] >> 4) & low4) | (((top >> 4) & low2) << 4);
    aux[3] = ((aux[1] >> 4) & low4) | (((top >> 6) & low2) << 4);
    aux[0] = (aux[0] & low4) | ((top & low2) << 4);
    aux[1] = (aux[1] & low4) | (((top >> 2) & low2) << 4);
    const uint8_t *b = (const uint8_t *)aux;
    for (int i = 0; i < 16; i++) sc[i] = (int)b[i] - 32;
}

// IQ4_XS's scale of sub-block ib (0..7), less 32.
static inline int iq4xs_scale(const hk_iq4_xs *x, int ib) {
    const int ls = ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x->scales_h >> (2 * ib)) & 3) << 4);
    return ls - 32;
}

// Element e of a 256-element block stored 2 bits per weight, 32 bytes per 128 elements:
// bits 2s..2s+1 of byte 32j + (e % 32) hold element 128j + 32s + (e % 32).
static inline int two_bits(const uint8_t *qs, int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

static inline int q3k_value(const hk_q3_K *x, int e) {
    const int high = (x->hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1;
    return two_bits(x->qs, e) - (high ? 0 : 4);
}

// Element t (0..31) of 16 bytes of nibbles: low nibbles first, then high.
static inline int nibble(const uint8_t *qs, int t) {
    return t < 16 ? qs[t] & 0xF : qs[t - 16] >> 4;
}

// The two formats of 32 four-bit indices into a table of sixteen values under one scale:
// IQ4_NL (an f16 scale) and MXFP4 (an E8M0 exponent, the values doubled and the scale halved).
typedef struct {
    const int8_t *values;
    size_t bytes;  // of a block
    int mx;        // MXFP4
} nl4_format;

static const nl4_format nl4_iq4 = {hk_iq4_values, sizeof(hk_iq4_nl), 0};
static const nl4_format nl4_mxfp4 = {hk_mxfp4_values, sizeof(hk_mxfp4), 1};

// 2^(e - 128): half the E8M0 scale 2^(e - 127).
static inline float e8m0_half(uint8_t e) {
    return hk_bits_f32(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

static inline float nl4_scale(const nl4_format *f, const uint8_t *block) {
    return f->mx ? e8m0_half(block[0]) : hk_fp16_to_fp32((uint16_t)(block[0] | block[1] << 8));
}

static inline const uint8_t *nl4_quants(const nl4_format *f, const uint8_t *block) { return block + (f->mx ? 1 : 2); }

// ---- dequantize (GGML's dequantize_row_*) --------------------------------------------------

static void deq_q2_K(const hk_q2_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        const float d = hk_fp16_to_fp32(x[i].d), dmin = hk_fp16_to_fp32(x[i].dmin);
        for (int s = 0; s < 16; s++) {
            const float dl = d * (float)(x[i].scales[s] & 0xF), ml = dmin * (float)(x[i].scales[s] >> 4);
            for (int e = 16 * s; e < 16 * s + 16; e++) y[e] = dl * (float)two_bits(x[i].qs, e) - ml;
        }
    }
}

static void deq_q3_K(const hk_q3_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        const float d = hk_fp16_to_fp32(x[i].d);
        int sc[16];
        q3k_scales(x[i].scales, sc);
        for (int s = 0; s < 16; s++) {
            const float dl = d * (float)sc[s];
            for (int e = 16 * s; e < 16 * s + 16; e++) y[e] = dl * (float)q3k_value(&x[i], e);
        }
    }
}

static void deq_nl4(const nl4_format *f, const uint8_t *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK, x += f->bytes) {
        const float d = nl4_scale(f, x);
        for (int t = 0; t < 32; t++) y[t] = d * (float)f->values[nibble(nl4_quants(f, x), t)];
    }
}

static void deq_iq4_xs(const hk_iq4_xs *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        const float d = hk_fp16_to_fp32(x[i].d);
        for (int ib = 0; ib < 8; ib++) {
            const float dl = d * (float)iq4xs_scale(&x[i], ib);
            for (int t = 0; t < 32; t++) y[32 * ib + t] = dl * (float)hk_iq4_values[nibble(x[i].qs + 16 * ib, t)];
        }
    }
}

int hk_lowbit_dequantize(uint32_t type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case HK_Q2_K: deq_q2_K(src, dst, n / QK_K); return 0;
    case HK_Q3_K: deq_q3_K(src, dst, n / QK_K); return 0;
    case HK_IQ4_NL: deq_nl4(&nl4_iq4, src, dst, n / QK); return 0;
    case HK_MXFP4: deq_nl4(&nl4_mxfp4, src, dst, n / QK); return 0;
    case HK_IQ4_XS: deq_iq4_xs(src, dst, n / QK_K); return 0;
    default: return -1;
    }
}

// ---- lanes, scalar -------------------------------------------------------------------------

// lane[k] = Σ over elements e with (e % 32) / 4 == k of scale(e) · w(e) · a(e).
static void q2k_lanes_scalar(const hk_q2_K *x, const hk_q8_K *y, int32_t lane[8], int32_t mins[8]) {
    memset(lane, 0, 8 * sizeof *lane);
    for (int e = 0; e < QK_K; e++) lane[(e % 32) / 4] += (x->scales[e / 16] & 0xF) * two_bits(x->qs, e) * y->qs[e];
    // The mins pair up the sub-blocks' activation sums: lane k holds sub-blocks 2k and 2k + 1.
    for (int k = 0; k < 8; k++)
        mins[k] = (x->scales[2 * k] >> 4) * y->bsums[2 * k] + (x->scales[2 * k + 1] >> 4) * y->bsums[2 * k + 1];
}

static void q3k_lanes_scalar(const hk_q3_K *x, const hk_q8_K *y, int32_t lane[8]) {
    int sc[16];
    q3k_scales(x->scales, sc);
    memset(lane, 0, 8 * sizeof *lane);
    for (int e = 0; e < QK_K; e++) lane[(e % 32) / 4] += sc[e / 16] * q3k_value(x, e) * y->qs[e];
}

static void iq4xs_lanes_scalar(const hk_iq4_xs *x, const hk_q8_K *y, int32_t lane[8]) {
    memset(lane, 0, 8 * sizeof *lane);
    for (int ib = 0; ib < 8; ib++) {
        const int sc = iq4xs_scale(x, ib);
        for (int t = 0; t < 32; t++)
            lane[t / 4] += sc * hk_iq4_values[nibble(x->qs + 16 * ib, t)] * y->qs[32 * ib + t];
    }
}

static void nl4_lanes_scalar(const int8_t *values, const uint8_t *qs, const hk_q8_0 *y, int32_t lane[8]) {
    memset(lane, 0, 8 * sizeof *lane);
    for (int t = 0; t < 32; t++) lane[t / 4] += values[nibble(qs, t)] * y->qs[t];
}

// ---- lanes, AVX2 ---------------------------------------------------------------------------

#if HK_HAVE_AVX2
// The sixteen int16 scales of a super-block's sub-blocks of 16, spread over its eight chunks of
// 32 elements: chunk c gets scale 2c in its low 128 bits and scale 2c + 1 in its high 128 bits.
HK_INLINE HK_AVX2 void spread_scales(__m256i sc16, __m256i out[8]) {
    for (int j = 0; j < 2; j++) {
        const __m256i half = j == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xEE);
        for (int s = 0; s < 4; s++) {
            const char lo = (char)(4 * s), hi = (char)(4 * s + 2);
            const __m256i pick = _mm256_setr_epi8(lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1,
                                                  hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1);
            out[4 * j + s] = _mm256_shuffle_epi8(half, pick);
        }
    }
}

// 32 table values of 16 bytes of nibbles times 32 int8 activations, as int16 pair sums. The
// values are at most 127 in size and Q8 activations never -128, so no pair saturates.
HK_INLINE HK_AVX2 __m256i table_pairs(const int8_t *table, const uint8_t *qs, const int8_t *a) {
    const __m128i values = _mm_loadu_si128((const __m128i *)table), low4 = _mm_set1_epi8(0xF);
    const __m128i bytes = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_set_m128i(_mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(bytes, 4), low4)),
                                       _mm_shuffle_epi8(values, _mm_and_si128(bytes, low4)));
    return _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(hk_load256(a), v));
}

static HK_AVX2 void nl4_lanes_avx2(const int8_t *values, const uint8_t *qs, const hk_q8_0 *y, int32_t lane[8]) {
    _mm256_storeu_si256((__m256i *)lane, _mm256_madd_epi16(table_pairs(values, qs, y->qs), _mm256_set1_epi16(1)));
}

static HK_AVX2 float fma_avx2(float a, float b, float c) { return hk_fma(a, b, c); }
#endif

// ---- the float sequences -------------------------------------------------------------------

typedef struct {
    void (*q2k)(const hk_q2_K *, const hk_q8_K *, int32_t *, int32_t *);
    void (*q3k)(const hk_q3_K *, const hk_q8_K *, int32_t *);
    void (*iq4xs)(const hk_iq4_xs *, const hk_q8_K *, int32_t *);
    void (*nl4)(const int8_t *, const uint8_t *, const hk_q8_0 *, int32_t *);
    float (*fma)(float, float, float);
} lanes_path;

static const lanes_path scalar_path = {q2k_lanes_scalar, q3k_lanes_scalar, iq4xs_lanes_scalar, nl4_lanes_scalar, fmaf};
#if HK_HAVE_AVX2
// IQ4_NL's and MXFP4's lanes on AVX2; the super-block types have kernels of their own there (kcols below).
static const lanes_path avx2_path = {q2k_lanes_scalar, q3k_lanes_scalar, iq4xs_lanes_scalar, nl4_lanes_avx2, fma_avx2};
#endif


// ORDER_SGEMM: llamafile's tinyBLAS, which takes IQ4_NL matrices that are not repacked for
// batches of 2 columns or more: one float lane per integer lane, fused block by block with
// d(weights) · d(activations), the lanes added at the end.
enum { ORDER_LANES, ORDER_TILED, ORDER_BLOCKS, ORDER_SGEMM };

// One 256-element row of type (Q2_K, Q3_K or IQ4_XS) against one Q8_K row, nb super-blocks.
static float kdot(const lanes_path *p, uint32_t type, int order, const uint8_t *w, const hk_q8_K *y, int64_t nb) {
    float acc[8] = {0}, total = 0;
    int32_t lane[8], mins[8];
    for (int64_t i = 0; i < nb; i++) {
        float d, dmin = 0;
        if (type == HK_Q2_K) {
            const hk_q2_K *x = (const hk_q2_K *)w + i;
            p->q2k(x, &y[i], lane, mins);
            d = hk_fp16_to_fp32(x->d);
            dmin = hk_fp16_to_fp32(x->dmin);
        } else if (type == HK_Q3_K) {
            const hk_q3_K *x = (const hk_q3_K *)w + i;
            p->q3k(x, &y[i], lane);
            d = hk_fp16_to_fp32(x->d);
        } else {
            const hk_iq4_xs *x = (const hk_iq4_xs *)w + i;
            p->iq4xs(x, &y[i], lane);
            d = hk_fp16_to_fp32(x->d);
        }
        if (order == ORDER_TILED) {
            float r = d * (float)hk_total8_i32(lane);
            if (type == HK_Q2_K) r = p->fma(-dmin, (float)hk_total8_i32(mins), r);
            total = p->fma(r, y[i].d, total);
            continue;
        }
        const float dd = type == HK_IQ4_XS ? d * y[i].d : y[i].d * d;
        if (type == HK_Q2_K) {
            const float dm = -y[i].d * dmin;
            for (int k = 0; k < 8; k++) acc[k] = p->fma(dm, (float)mins[k], acc[k]);
        }
        for (int k = 0; k < 8; k++) acc[k] = p->fma(dd, (float)lane[k], acc[k]);
    }
    return order == ORDER_TILED ? total : hk_reduce8(acc);
}

// One IQ4_NL or MXFP4 row against one Q8_0 row, nb blocks of 32.
static float nl4_dot(const lanes_path *p, const nl4_format *f, int order, const uint8_t *x, const hk_q8_0 *y, int64_t nb) {
    int32_t lane[8];
    if (order == ORDER_BLOCKS) {
        float acc = 0;
        for (int64_t i = 0; i < nb; i++, x += f->bytes) {
            p->nl4(f->values, nl4_quants(f, x), &y[i], lane);
            acc = p->fma((float)hk_total8_i32(lane), nl4_scale(f, x) * hk_fp16_to_fp32(y[i].d), acc);
        }
        return acc;
    }
    if (order == ORDER_SGEMM) {
        float acc[8] = {0};
        for (int64_t i = 0; i < nb; i++, x += f->bytes) {
            p->nl4(f->values, nl4_quants(f, x), &y[i], lane);
            const float d = nl4_scale(f, x) * hk_fp16_to_fp32(y[i].d);
            for (int k = 0; k < 8; k++) acc[k] = p->fma(d, (float)lane[k], acc[k]);
        }
        return hk_reduce8(acc);
    }
    float acc[2][8] = {{0}};
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        for (int h = 0; h < 2; h++) {
            const uint8_t *b = x + (size_t)(i + h) * f->bytes;
            p->nl4(f->values, nl4_quants(f, b), &y[i + h], lane);
            const float d = hk_fp16_to_fp32(y[i + h].d) * nl4_scale(f, b);
            for (int k = 0; k < 8; k++) acc[h][k] = p->fma(d, (float)lane[k], acc[h][k]);
        }
    }
    float both[8];
    for (int k = 0; k < 8; k++) both[k] = acc[0][k] + acc[1][k];
    float sum = hk_reduce8(both);
    for (; i < nb; i++) {
        const uint8_t *b = x + (size_t)i * f->bytes;
        p->nl4(f->values, nl4_quants(f, b), &y[i], lane);
        sum = p->fma(hk_fp16_to_fp32(y[i].d) * nl4_scale(f, b), (float)hk_total8_i32(lane), sum);
    }
    return sum;
}

// ---- AVX2: one row against up to four columns ----------------------------------------------

#if HK_HAVE_AVX2
// One super-block of Q2_K, Q3_K or IQ4_XS unpacked once for all the columns: the 32-element
// chunks of its weights as bytes (Q2_K's 0..3, Q3_K's weight plus 4, IQ4_XS's |value| with its
// signs apart), each chunk's two int16 scales (of its first and second 16 elements), and Q2_K's
// sixteen mins.
typedef struct {
    __m256i u[8], sign[8], scale[8], mins;
    float d, dmin;
} unpacked;

HK_INLINE HK_AVX2 void unpack(const uint32_t type, const uint8_t *w, unpacked *b) {
    const __m256i three = _mm256_set1_epi8(3);
    if (type == HK_Q2_K) {
        const hk_q2_K *x = (const hk_q2_K *)w;
        const __m128i packed = _mm_loadu_si128((const __m128i *)x->scales);
        b->mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0xF)));
        spread_scales(_mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0xF))), b->scale);
        for (int j = 0; j < 2; j++) {
            const __m256i q = hk_load256(x->qs + 32 * j);
            for (int s = 0; s < 4; s++) b->u[4 * j + s] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three);
        }
        b->d = hk_half(&x->d);
        b->dmin = hk_half(&x->dmin);
    } else if (type == HK_Q3_K) {
        const hk_q3_K *x = (const hk_q3_K *)w;
        const __m256i one = _mm256_set1_epi8(1), hm = hk_load256(x->hmask);
        int sc[16];
        q3k_scales(x->scales, sc);
        int16_t sc16[16];
        for (int i = 0; i < 16; i++) sc16[i] = (int16_t)sc[i];
        spread_scales(hk_load256(sc16), b->scale);
        for (int j = 0; j < 2; j++) {
            const __m256i q = hk_load256(x->qs + 32 * j);
            for (int s = 0; s < 4; s++) {
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * j + s), one);
                b->u[4 * j + s] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three), _mm256_slli_epi16(high, 2));
            }
        }
        b->d = hk_half(&x->d);
    } else {
        const hk_iq4_xs *x = (const hk_iq4_xs *)w;
        const __m128i values = _mm_loadu_si128((const __m128i *)hk_iq4_values), low4 = _mm_set1_epi8(0xF);
        for (int ch = 0; ch < 8; ch++) {
            const __m128i bytes = _mm_loadu_si128((const __m128i *)(x->qs + 16 * ch));
            const __m256i v = _mm256_set_m128i(_mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(bytes, 4), low4)),
                                               _mm_shuffle_epi8(values, _mm_and_si128(bytes, low4)));
            b->u[ch] = _mm256_sign_epi8(v, v);
            b->sign[ch] = v;
            b->scale[ch] = _mm256_set1_epi16((short)iq4xs_scale(x, ch));
        }
        b->d = hk_half(&x->d);
    }
}

// The eight lanes of one unpacked super-block against one Q8_K block.
HK_INLINE HK_AVX2 __m256i block_lanes(const uint32_t type, const unpacked *b, const hk_q8_K *y) {
    const __m256i four = _mm256_set1_epi8(4);
    __m256i sum = _mm256_setzero_si256();
    for (int ch = 0; ch < 8; ch++) {
        const __m256i a = hk_load256(y->qs + 32 * ch);
        __m256i p;
        if (type == HK_IQ4_XS) p = _mm256_maddubs_epi16(b->u[ch], _mm256_sign_epi8(a, b->sign[ch]));
        else p = _mm256_maddubs_epi16(b->u[ch], a);
        if (type == HK_Q3_K) p = _mm256_sub_epi16(p, _mm256_maddubs_epi16(four, a));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, b->scale[ch]));
    }
    return sum;
}

// One row of nb super-blocks against NC (1..8) Q8_K columns in `order`: out[c * out_stride].
HK_INLINE HK_AVX2 void kcols(const uint32_t type, const int order, const uint8_t *w, const uint8_t *const *a, const int NC,
                             int64_t nb, float *out, size_t out_stride) {
    const size_t wb = type == HK_Q2_K ? sizeof(hk_q2_K) : type == HK_Q3_K ? sizeof(hk_q3_K) : sizeof(hk_iq4_xs);
    __m256 acc[8];
    float total[8];
    for (int c = 0; c < NC; c++) {
        acc[c] = _mm256_setzero_ps();
        total[c] = 0;
    }
    for (int64_t i = 0; i < nb; i++) {
        unpacked b;
        unpack(type, w + (size_t)i * wb, &b);
        for (int c = 0; c < NC; c++) {
            const hk_q8_K *y = (const hk_q8_K *)a[c] + i;
            const __m256i lanes = block_lanes(type, &b, y);
            __m256i mins = _mm256_setzero_si256();
            if (type == HK_Q2_K) mins = _mm256_madd_epi16(b.mins, hk_load256(y->bsums));
            if (order == ORDER_TILED) {
                float r = b.d * (float)hk_hsum_i32(lanes);
                if (type == HK_Q2_K) r = hk_fma(-b.dmin, (float)hk_hsum_i32(mins), r);
                total[c] = hk_fma(r, y->d, total[c]);
            } else {
                if (type == HK_Q2_K) acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(-y->d * b.dmin), _mm256_cvtepi32_ps(mins), acc[c]);
                const float dd = type == HK_IQ4_XS ? b.d * y->d : y->d * b.d;
                acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(lanes), acc[c]);
            }
        }
    }
    for (int c = 0; c < NC; c++) out[(size_t)c * out_stride] = order == ORDER_TILED ? total[c] : hk_hsum(acc[c]);
}

static HK_AVX2 void kcols_any(const uint32_t type, const int order, const uint8_t *w, const uint8_t *const *a, const int NC,
                              int64_t nb, float *out, size_t out_stride) {
#define KCOLS(T)                                                                                          \
    switch (NC) {                                                                                         \
    case 8: kcols(T, order, w, a, 8, nb, out, out_stride); break;                                         \
    case 7: kcols(T, order, w, a, 7, nb, out, out_stride); break;                                         \
    case 6: kcols(T, order, w, a, 6, nb, out, out_stride); break;                                         \
    case 5: kcols(T, order, w, a, 5, nb, out, out_stride); break;                                         \
    case 4: kcols(T, order, w, a, 4, nb, out, out_stride); break;                                         \
    case 3: kcols(T, order, w, a, 3, nb, out, out_stride); break;                                         \
    case 2: kcols(T, order, w, a, 2, nb, out, out_stride); break;                                         \
    default: kcols(T, order, w, a, 1, nb, out, out_stride); break;                                        \
    }
    switch (type) {
    case HK_Q2_K: KCOLS(HK_Q2_K) break;
    case HK_Q3_K: KCOLS(HK_Q3_K) break;
    default: KCOLS(HK_IQ4_XS) break;
    }
#undef KCOLS
}

// ---- AVX-512 VNNI: the tiled order, sixteen columns to a vector -------------------------------
//
// For a run of 8 columns or more, what llama.cpp's tiled kernel fixes is one exact integer per
// super-block, row and column (and Q2_K's mins apart). Here the integers of sixteen columns
// come out together: the columns' activations are repacked so that 64 bytes hold four
// consecutive activations of each of the sixteen columns, one vpdpbusd multiplies them by four
// broadcast weight bytes (as unsigned: Q2_K's 0..3, Q3_K's weight plus 4, IQ4_XS's value plus
// 128, whose offsets come off through the activations' sums of 16), and each sub-block's
// integers are scaled once for all sixteen columns. The floats then follow the tiled order
// lane by lane.

#define HK_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))

// Sixteen columns' activations of one super-block: for each group g of 4 elements, the 4 bytes
// of each column (64 bytes); for each sum of 16 activations, the columns' sums as int32 and the
// same times -offset (where a sub-block's integer starts, to take the weights' offset off); and
// the columns' scales.
typedef struct {
    uint32_t words[64][16];
    int32_t bsums[16][16];
    int32_t start[16][16];
    float d[16];
} cols16;

// Column groups of sixteen that share each unpacked weight block.
#define COL_GROUPS 4

static void pack_cols16(const uint8_t *const *a, int nc, int64_t i, int offset, cols16 *dst) {
    for (int c = 0; c < 16; c++) {
        const hk_q8_K *y = c < nc ? (const hk_q8_K *)a[c] + i : NULL;
        for (int g = 0; g < 64; g++) {
            uint32_t w = 0;
            if (y) memcpy(&w, y->qs + 4 * g, 4);
            dst->words[g][c] = w;
        }
        for (int s = 0; s < 16; s++) {
            dst->bsums[s][c] = y ? y->bsums[s] : 0;
            dst->start[s][c] = -offset * dst->bsums[s][c];
        }
        dst->d[c] = y ? y->d : 0;
    }
}

// The unsigned bytes the products take, as 64 words, with the sub-block scales (16; IQ4_XS's
// 8 of 32 elements twice) and Q2_K's mins.
typedef struct {
    uint32_t words[64];
    int32_t scale[16], mins[16];
    float d, dmin;
} unsigned_block;

static int weight_offset(const uint32_t type) { return type == HK_Q3_K ? 4 : type == HK_IQ4_XS ? 128 : 0; }

HK_INLINE HK_AVX2 void unsigned_unpack(const uint32_t type, const uint8_t *w, unsigned_block *b) {
    unpacked u;
    unpack(type, w, &u);
    for (int ch = 0; ch < 8; ch++) {
        __m256i bytes = u.u[ch];
        if (type == HK_IQ4_XS) bytes = _mm256_add_epi8(u.sign[ch], _mm256_set1_epi8((char)0x80));
        _mm256_storeu_si256((__m256i *)(b->words + 8 * ch), bytes);
    }
    if (type == HK_Q2_K) {
        const hk_q2_K *x = (const hk_q2_K *)w;
        for (int s = 0; s < 16; s++) {
            b->scale[s] = x->scales[s] & 0xF;
            b->mins[s] = x->scales[s] >> 4;
        }
    } else if (type == HK_Q3_K) {
        q3k_scales(((const hk_q3_K *)w)->scales, b->scale);
    } else {
        for (int s = 0; s < 8; s++) b->scale[s] = iq4xs_scale((const hk_iq4_xs *)w, s);
    }
    b->d = u.d;
    b->dmin = u.dmin;
}

// R rows (row r at w + r * row_bytes) of nb super-blocks against G groups of sixteen packed
// columns (`cols[g * nb + i]`), in the tiled order: lane c of acc[r * G + g] is row r's product
// with column 16g + c. Each activation vector loaded serves the R rows.
HK_INLINE HK_VNNI512 void rows16(const uint32_t type, const int R, const int G, const uint8_t *w, size_t row_bytes,
                                 const cols16 *cols, int64_t nb, __m512 *acc) {
    const size_t wb = type == HK_Q2_K ? sizeof(hk_q2_K) : type == HK_Q3_K ? sizeof(hk_q3_K) : sizeof(hk_iq4_xs);
    // IQ4_XS's sub-blocks are 32 elements (8 words) under one scale; the others' 16 (4 words).
    const int per = type == HK_IQ4_XS ? 8 : 4, subs = 64 / per;
    for (int k = 0; k < R * G; k++) acc[k] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        unsigned_block b[4];
        for (int r = 0; r < R; r++) unsigned_unpack(type, w + (size_t)r * row_bytes + (size_t)i * wb, &b[r]);
        for (int g = 0; g < G; g++) {
            const cols16 *col = cols + (size_t)g * (size_t)nb + i;
            __m512i s1[4], s2[4];
            for (int r = 0; r < R; r++) s1[r] = s2[r] = _mm512_setzero_si512();
            for (int s = 0; s < subs; s++) {
                __m512i start = type == HK_Q2_K ? _mm512_setzero_si512() : _mm512_loadu_si512(col->start[per == 8 ? 2 * s : s]);
                if (per == 8) start = _mm512_add_epi32(start, _mm512_loadu_si512(col->start[2 * s + 1]));
                __m512i t[4];
                for (int r = 0; r < R; r++) t[r] = start;
                for (int k = per * s; k < per * s + per; k++) {
                    const __m512i x = _mm512_loadu_si512(col->words[k]);
                    for (int r = 0; r < R; r++) t[r] = _mm512_dpbusd_epi32(t[r], _mm512_set1_epi32((int)b[r].words[k]), x);
                }
                for (int r = 0; r < R; r++) s1[r] = _mm512_add_epi32(s1[r], _mm512_mullo_epi32(t[r], _mm512_set1_epi32(b[r].scale[s])));
                if (type == HK_Q2_K) {
                    const __m512i bsum = _mm512_loadu_si512(col->bsums[s]);
                    for (int r = 0; r < R; r++) s2[r] = _mm512_add_epi32(s2[r], _mm512_mullo_epi32(bsum, _mm512_set1_epi32(b[r].mins[s])));
                }
            }
            const __m512 dy = _mm512_loadu_ps(col->d);
            for (int r = 0; r < R; r++) {
                __m512 x = _mm512_mul_ps(_mm512_set1_ps(b[r].d), _mm512_cvtepi32_ps(s1[r]));
                if (type == HK_Q2_K) x = _mm512_fnmadd_ps(_mm512_set1_ps(b[r].dmin), _mm512_cvtepi32_ps(s2[r]), x);
                acc[r * G + g] = _mm512_fmadd_ps(x, dy, acc[r * G + g]);
            }
        }
    }
}

static HK_VNNI512 void rows16_any(const uint32_t type, const int R, const int G, const uint8_t *w, size_t row_bytes,
                                  const cols16 *cols, int64_t nb, __m512 *acc) {
#define ROWS16_G(T, RR)                                                                   \
    switch (G) {                                                                          \
    case 4: rows16(T, RR, 4, w, row_bytes, cols, nb, acc); break;                         \
    case 3: rows16(T, RR, 3, w, row_bytes, cols, nb, acc); break;                         \
    case 2: rows16(T, RR, 2, w, row_bytes, cols, nb, acc); break;                         \
    default: rows16(T, RR, 1, w, row_bytes, cols, nb, acc); break;                        \
    }
#define ROWS16_T(T)                                                                       \
    if (R == 4) { ROWS16_G(T, 4) } else { ROWS16_G(T, 1) }
    if (type == HK_Q2_K) { ROWS16_T(HK_Q2_K) }
    else if (type == HK_Q3_K) { ROWS16_T(HK_Q3_K) }
    else { ROWS16_T(HK_IQ4_XS) }
#undef ROWS16_T
#undef ROWS16_G
}

// Rows against `nc` (up to 16 · COL_GROUPS) columns of one run of 8 or more, in the tiled order;
// `cols` holds COL_GROUPS · nb packed blocks.
static HK_VNNI512 void tiled16(const uint32_t type, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *const *a,
                               int nc, int64_t nb, cols16 *cols, float *out, size_t out_stride) {
    const int G = (nc + 15) / 16;
    for (int g = 0; g < G; g++) {
        const int in_group = nc - 16 * g < 16 ? nc - 16 * g : 16;
        for (int64_t i = 0; i < nb; i++) pack_cols16(a + 16 * g, in_group, i, weight_offset(type), &cols[(size_t)g * (size_t)nb + i]);
    }
    for (int64_t r = 0; r < rows;) {
        // Four rows at a time, the last few one by one.
        const int R = rows - r >= 4 ? 4 : 1;
        __m512 acc[4 * COL_GROUPS];
        rows16_any(type, R, G, w + (size_t)r * row_bytes, row_bytes, cols, nb, acc);
        for (int k = 0; k < R; k++) {
            float lanes[16 * COL_GROUPS];
            for (int g = 0; g < G; g++) _mm512_storeu_ps(lanes + 16 * g, acc[k * G + g]);
            for (int c = 0; c < nc; c++) out[(size_t)c * out_stride + (size_t)(r + k)] = lanes[c];
        }
        r += R;
    }
}

// Rows against runs of columns, eight columns at a time, each run in the order of its length.
static HK_AVX2 void kmatmul_avx2(const uint32_t type, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a,
                                 size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out,
                                 size_t out_stride) {
    int64_t col = 0;
    for (int64_t ri = 0; ri < (runs ? n_runs : 1); ri++) {
        const int64_t len = runs ? runs[ri] : cols;
        const int order = len >= 8 ? ORDER_TILED : ORDER_LANES;
        if (order == ORDER_TILED && hk_vnni_kind() == HK_AVX512_VNNI) {
            cols16 *cols = aligned_alloc(64, (size_t)COL_GROUPS * (size_t)(n / QK_K) * sizeof(cols16));
            if (cols) {
                for (int64_t c0 = col; c0 < col + len; c0 += 16 * COL_GROUPS) {
                    const int nc = (int)(col + len - c0 < 16 * COL_GROUPS ? col + len - c0 : 16 * COL_GROUPS);
                    const uint8_t *ac[16 * COL_GROUPS];
                    for (int c = 0; c < nc; c++) ac[c] = a + (size_t)(c0 + c) * a_stride;
                    tiled16(type, w, row_bytes, rows, ac, nc, n / QK_K, cols, out + (size_t)c0 * out_stride, out_stride);
                }
                free(cols);
                col += len;
                continue;
            }
        }
        for (int64_t c0 = col; c0 < col + len; c0 += 8) {
            const int nc = (int)(col + len - c0 < 8 ? col + len - c0 : 8);
            const uint8_t *ac[8];
            for (int c = 0; c < nc; c++) ac[c] = a + (size_t)(c0 + c) * a_stride;
            for (int64_t r = 0; r < rows; r++)
                kcols_any(type, order, w + (size_t)r * row_bytes, ac, nc, n / QK_K, out + (size_t)c0 * out_stride + (size_t)r,
                          out_stride);
        }
        col += len;
    }
}

static HK_AVX2 float kdot_avx2(const uint32_t type, const void *w, const void *a, int64_t n) {
    const uint8_t *ac[1] = {a};
    float out;
    kcols_any(type, ORDER_LANES, w, ac, 1, n / QK_K, &out, 1);
    return out;
}

static HK_AVX2 void kmatvec_avx2(const uint32_t type, const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n,
                                 float *out) {
    const uint8_t *ac[1] = {a};
    for (int64_t r = 0; r < rows; r++) kcols_any(type, ORDER_LANES, w + (size_t)r * row_bytes, ac, 1, n / QK_K, out + r, 1);
}

#define KQUANT_AVX2(NAME, TYPE)                                                                         \
    static HK_AVX2 float NAME##_dot(const void *w, const void *a, int64_t n) { return kdot_avx2(TYPE, w, a, n); } \
    static HK_AVX2 void NAME##_matvec(const uint8_t *w, size_t row_bytes, int64_t rows, const void *a, int64_t n, \
                                      float *out) {                                                    \
        kmatvec_avx2(TYPE, w, row_bytes, rows, a, n, out);                                              \
    }                                                                                                   \
    static HK_AVX2 void NAME##_matmul(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, size_t a_stride, \
                                      int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, \
                                      size_t out_stride) {                                              \
        kmatmul_avx2(TYPE, w, row_bytes, rows, a, a_stride, cols, n, runs, n_runs, out, out_stride);    \
    }                                                                                                   \
    static const hk_kernel NAME = {NAME##_dot, NAME##_matvec, NAME##_matmul};

KQUANT_AVX2(k_q2_K_avx2, HK_Q2_K)
KQUANT_AVX2(k_q3_K_avx2, HK_Q3_K)
KQUANT_AVX2(k_iq4_xs_avx2, HK_IQ4_XS)
#endif

// ---- kernels -------------------------------------------------------------------------------

static const lanes_path *path_of(int isa) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) return &avx2_path;
#endif
    (void)isa;
    return &scalar_path;
}

// The table format of a type of 32-element blocks, or NULL for a super-block type.
static const nl4_format *nl4_of(uint32_t type) {
    switch (type) {
    case HK_IQ4_NL: case HK_IQ4_NL_X8: return &nl4_iq4;
    case HK_MXFP4: case HK_MXFP4_X8: return &nl4_mxfp4;
    default: return NULL;
    }
}

#define LOWBIT_KERNELS(NAME, ISA, TYPE, SINGLE)                                                    \
    static float NAME##_dot(const void *w, const void *a, int64_t n) {                            \
        return nl4_of(TYPE) ? nl4_dot(path_of(ISA), nl4_of(TYPE), SINGLE, w, a, n / QK)            \
                            : kdot(path_of(ISA), TYPE, SINGLE, w, a, n / QK_K);                    \
    }                                                                                             \
    static void NAME##_matmul(const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a, \
                              size_t a_stride, int64_t cols, int64_t n, const int64_t *runs,      \
                              int64_t n_runs, float *out, size_t out_stride) {                    \
        matmul_runs(path_of(ISA), TYPE, SINGLE, w, row_bytes, rows, a, a_stride, cols, n, runs,   \
                    n_runs, out, out_stride);                                                     \
    }                                                                                             \
    static const hk_kernel NAME = {NAME##_dot, NULL, NAME##_matmul};

// Each run of columns (one sequence's rows) is summed as llama.cpp sums a batch of its length:
// the tiled order from 8 columns on for the super-block types, their single order below that;
// tinyBLAS's order from 2 columns on for IQ4_NL rows that are not repacked.
static void matmul_runs(const lanes_path *p, uint32_t type, int single, const uint8_t *w, size_t row_bytes, int64_t rows,
                        const uint8_t *a, size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                        float *out, size_t out_stride) {
    int64_t col = 0;
    for (int64_t ri = 0; ri < (runs ? n_runs : 1); ri++) {
        const int64_t len = runs ? runs[ri] : cols;
        const nl4_format *f = nl4_of(type);
        const int tiled = !f && len >= 8;
        const int order = f ? (type == HK_IQ4_NL && len >= 2 ? ORDER_SGEMM : single) : tiled ? ORDER_TILED : single;
        for (int64_t c = col; c < col + len; c++) {
            const uint8_t *ac = a + (size_t)c * a_stride;
            for (int64_t r = 0; r < rows; r++) {
                const uint8_t *wr = w + (size_t)r * row_bytes;
                out[(size_t)c * out_stride + (size_t)r] =
                    f ? nl4_dot(p, f, order, wr, (const hk_q8_0 *)ac, n / QK)
                        : kdot(p, type, order, wr, (const hk_q8_K *)ac, n / QK_K);
            }
        }
        col += len;
    }
}

LOWBIT_KERNELS(k_q2_K_portable, HK_ISA_PORTABLE, HK_Q2_K, ORDER_LANES)
LOWBIT_KERNELS(k_q3_K_portable, HK_ISA_PORTABLE, HK_Q3_K, ORDER_LANES)
LOWBIT_KERNELS(k_iq4_xs_portable, HK_ISA_PORTABLE, HK_IQ4_XS, ORDER_LANES)
LOWBIT_KERNELS(k_iq4_nl_portable, HK_ISA_PORTABLE, HK_IQ4_NL, ORDER_LANES)
LOWBIT_KERNELS(k_iq4_nl_x8_portable, HK_ISA_PORTABLE, HK_IQ4_NL_X8, ORDER_BLOCKS)
LOWBIT_KERNELS(k_mxfp4_portable, HK_ISA_PORTABLE, HK_MXFP4, ORDER_LANES)
LOWBIT_KERNELS(k_mxfp4_x8_portable, HK_ISA_PORTABLE, HK_MXFP4_X8, ORDER_BLOCKS)
#if HK_HAVE_AVX2
LOWBIT_KERNELS(k_iq4_nl_avx2, HK_ISA_AVX2, HK_IQ4_NL, ORDER_LANES)
LOWBIT_KERNELS(k_iq4_nl_x8_avx2, HK_ISA_AVX2, HK_IQ4_NL_X8, ORDER_BLOCKS)
LOWBIT_KERNELS(k_mxfp4_avx2, HK_ISA_AVX2, HK_MXFP4, ORDER_LANES)
LOWBIT_KERNELS(k_mxfp4_x8_avx2, HK_ISA_AVX2, HK_MXFP4_X8, ORDER_BLOCKS)
#endif

const hk_kernel *hk_lowbit_kernel(int isa, uint32_t type) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) {
        switch (type) {
        case HK_Q2_K: return &k_q2_K_avx2;
        case HK_Q3_K: return &k_q3_K_avx2;
        case HK_IQ4_XS: return &k_iq4_xs_avx2;
        case HK_IQ4_NL: return &k_iq4_nl_avx2;
        case HK_IQ4_NL_X8: return &k_iq4_nl_x8_avx2;
        case HK_MXFP4: return &k_mxfp4_avx2;
        case HK_MXFP4_X8: return &k_mxfp4_x8_avx2;
        default: return NULL;
        }
    }
#endif
    switch (type) {
    case HK_Q2_K: return &k_q2_K_portable;
    case HK_Q3_K: return &k_q3_K_portable;
    case HK_IQ4_XS: return &k_iq4_xs_portable;
    case HK_IQ4_NL: return &k_iq4_nl_portable;
    case HK_IQ4_NL_X8: return &k_iq4_nl_x8_portable;
    case HK_MXFP4: return &k_mxfp4_portable;
    case HK_MXFP4_X8: return &k_mxfp4_x8_portable;
    default: return NULL;
    }
}
