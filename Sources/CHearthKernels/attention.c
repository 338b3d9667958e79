// Attention, one implementation for every network: a decoder over its KV cache, an encoder over
// one sequence, a decoder's cross-attention over an encoder's output. A call runs three stages
// per query head (the scores, the softmax, the weighted values), each in the order of sums its
// network's reference uses (hk_attention_order); the AVX2 stages give the portable stages' bits.
#include "hk_attention.h"
#include "hk_activations.h"
#include "internal.h"
#include "reduce.h"
#include "exp_approx.h"
#include <math.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

#if HK_HAVE_AVX2
#include "avx2.h"
#define HK_X86 1
#define HK_STAGE static inline __attribute__((always_inline, target("avx2,fma,f16c")))
#endif

// ---- Half precision -------------------------------------------------------------------------

#ifdef HK_X86
HK_AVX2 static void f32_to_f16_avx(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = hk_fp32_to_fp16(x[i]);
}

HK_AVX2 static void f16_to_f32_avx(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = hk_fp16_to_fp32(x[i]);
}

HK_AVX2 static __m256 load_half8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
#endif

void hk_f32_to_f16_row(int isa, const float *x, uint16_t *y, int64_t n) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) { f32_to_f16_avx(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = hk_fp32_to_fp16(x[i]);
}

// The query as the keys' type sees it: rounded through half precision for a half cache (as
// llama.cpp converts it to the keys' type), as it is otherwise.
static const float *query_for(int isa, const hk_attention *a, const float *q, float *rounded) {
    if (!a->kv_half) return q;
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) {
        uint16_t q16[512];
        f32_to_f16_avx(q, q16, a->head_dim);
        f16_to_f32_avx(q16, rounded, a->head_dim);
        return rounded;
    }
#endif
    for (int64_t i = 0; i < a->head_dim; i++) rounded[i] = hk_fp16_to_fp32(hk_fp32_to_fp16(q[i]));
    return rounded;
}

// Element i of a key or value vector whose elements lie `step` apart.
static inline float element(const hk_attention *a, const void *p, int64_t i, int64_t step) {
    return a->kv_half ? hk_fp16_to_fp32(((const uint16_t *)p)[i * step]) : ((const float *)p)[i * step];
}

// ---- Sums in every order, portable ------------------------------------------------------------

// Σ x[i] · y(i) over n terms, y's elements `step` apart (y is a key or value, x the query or
// the weights).
static float ordered_dot(int isa, const hk_attention *a, hk_sum_order order, const float *x, const void *y,
                         int64_t step, int64_t n) {
    switch (order) {
    case HK_SUM_LLAMA_ONE: {
        float slot[32] = {0};
        const int64_t whole = n - n % 32;
        for (int64_t i = 0; i < whole; i++) slot[i & 31] = fmaf(element(a, y, i, step), x[i], slot[i & 31]);
        double sum = hk_reduce32(slot);
        for (int64_t i = whole; i < n; i++) sum += (double)(element(a, y, i, step) * x[i]);
        return (float)sum;
    }
    case HK_SUM_LLAMA_MANY: {
        float lane[8] = {0};
        for (int64_t i = 0; i < n; i++) lane[i & 7] = fmaf(element(a, y, i, step), x[i], lane[i & 7]);
        return hk_reduce8(lane);
    }
    case HK_SUM_LANES8:
    case HK_SUM_LANES8_PAIRS: {
        float lane[8] = {0};
        const int64_t whole = n - n % 8;
        for (int64_t i = 0; i < whole; i++) lane[i & 7] = fmaf(x[i], element(a, y, i, step), lane[i & 7]);
        float sum = order == HK_SUM_LANES8 ? hk_reduce8(lane) : hk_reduce8_pairs(lane);
        for (int64_t i = whole; i < n; i++) sum = fmaf(x[i], element(a, y, i, step), sum);
        return sum;
    }
    case HK_SUM_SERIAL: {
        float sum = 0;
        for (int64_t i = 0; i < n; i++) sum = fmaf(x[i], element(a, y, i, step), sum);
        return sum;
    }
    case HK_SUM_VECTOR:
        return hk_dot_f32(isa, x, y, n);
    }
    return NAN;
}

// ---- Stage 1: scores --------------------------------------------------------------------------

static inline float capped(const hk_attention *a, float dot) {
    float s = dot * a->scale;
    if (a->softcap > 0) s = tanhf(s * (1.0f / a->softcap)) * a->softcap;
    return s;
}

// Every score through `capped`, with the scale and cap read once.
static inline __attribute__((always_inline)) void cap_all(const hk_attention *a, float *scores, int64_t count) {
    const float scale = a->scale, cap = a->softcap;
    if (cap > 0) {
        for (int64_t t = 0; t < count; t++) scores[t] = tanhf(scores[t] * scale * (1.0f / cap)) * cap;
    } else {
        for (int64_t t = 0; t < count; t++) scores[t] = scores[t] * scale;
    }
}

static void scores_portable(int isa, const hk_attention *a, const float *q, int64_t count, float *scores) {
    const int64_t d = a->head_dim;
    for (int64_t t = 0; t < count; t++) {
        const float dot = a->kv_transposed
            ? ordered_dot(isa, a, a->order.scores, q, (const float *)a->k + t, a->n_pos, d)
            : ordered_dot(isa, a, a->order.scores, q, (const char *)a->k + t * a->kv_stride * (a->kv_half ? 2 : 4), 1, d);
        scores[t] = capped(a, dot);
    }
}

#ifdef HK_X86
// The llama.cpp orders over one half-precision key, given as floats converted already
// (`floats`) or, when that is NULL, as halves; head_dim a multiple of 8 (of 32 for one token).
HK_STAGE float llama_score_avx(const float *floats, const uint16_t *halves, const float *q, int64_t d, int single) {
    if (single) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int64_t i = 0; i < d; i += 32)
            for (int j = 0; j < 4; j++) {
                const __m256 k = floats ? _mm256_loadu_ps(floats + i + 8 * j) : load_half8(halves + i + 8 * j);
                acc[j] = _mm256_fmadd_ps(k, _mm256_loadu_ps(q + i + 8 * j), acc[j]);
            }
        return hk_hsum32(acc[0], acc[1], acc[2], acc[3]);
    }
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; i += 8) {
        const __m256 k = floats ? _mm256_loadu_ps(floats + i) : load_half8(halves + i);
        acc = _mm256_fmadd_ps(k, _mm256_loadu_ps(q + i), acc);
    }
    return hk_hsum(acc);
}

// hk_hsum of eight vectors at once: lane j is hk_hsum(v[j]), its additions in the same order,
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
HK_STAGE __m256 hsum_each8(const __m256 *v) {
    __m256 s[4];
    for (int j = 0; j < 4; j++)
        s[j] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x31));
    // s[j]: v[2j]'s (l0 + l4, l1 + l5, l2 + l6, l3 + l7), then v[2j + 1]'s.
    const __m256 w0 = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], 0x44), _mm256_shuffle_ps(s[0], s[1], 0xEE));
    const __m256 w1 = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], 0x44), _mm256_shuffle_ps(s[2], s[3], 0xEE));
    // w0: v0's two halves, v2's, then v1's, v3's; w1 likewise for v4 to v7.
    const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(w0, w1, 0x88), _mm256_shuffle_ps(w0, w1, 0xDD));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// llama_score_avx's HK_SUM_LLAMA_MANY order for the 8 keys given as floats at `floats` + j *
// stride or, when that is NULL, as halves at `halves` + j * stride: eight chains side by side.
HK_STAGE void llama_many_scores8(const float *floats, const uint16_t *halves, int64_t stride, const float *q, int64_t d,
                                 float *out) {
    __m256 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; i += 8) {
        const __m256 x = _mm256_loadu_ps(q + i);
        for (int j = 0; j < 8; j++) {
            const __m256 k = floats ? _mm256_loadu_ps(floats + j * stride + i) : load_half8(halves + j * stride + i);
            acc[j] = _mm256_fmadd_ps(k, x, acc[j]);
        }
    }
    _mm256_storeu_ps(out, hsum_each8(acc));
}

// HK_SUM_LANES8_PAIRS for 8 float keys at once: eight accumulators reduced together by
// horizontal adds. hadd(hadd(a, b), hadd(c, d)) holds ((l0 + l1) + (l2 + l3)) of a, b, c, d in
// its low half and ((l4 + l5) + (l6 + l7)) in its high half.
__attribute__((noinline)) HK_AVX2 static void pairs_scores8_avx(const float *q, const float *k, int64_t stride, int64_t d, float scale,
                                                                float *dots) {
    const int64_t whole = d - d % 8;
    const float *k0 = k, *k1 = k0 + stride, *k2 = k1 + stride, *k3 = k2 + stride;
    const float *k4 = k3 + stride, *k5 = k4 + stride, *k6 = k5 + stride, *k7 = k6 + stride;
    __m256 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 x = _mm256_loadu_ps(q + i);
        acc[0] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + i), acc[0]);
        acc[1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + i), acc[1]);
        acc[2] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + i), acc[2]);
        acc[3] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + i), acc[3]);
        acc[4] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k4 + i), acc[4]);
        acc[5] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k5 + i), acc[5]);
        acc[6] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k6 + i), acc[6]);
        acc[7] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k7 + i), acc[7]);
    }
    const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
    __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
    if (whole < d) {
        _mm256_storeu_ps(dots, sum);
        for (int j = 0; j < 8; j++)
            for (int64_t i = whole; i < d; i++) dots[j] = fmaf(q[i], k[j * stride + i], dots[j]);
        sum = _mm256_loadu_ps(dots);
    }
    _mm256_storeu_ps(dots, _mm256_mul_ps(sum, _mm256_set1_ps(scale)));
}

// HK_SUM_SERIAL over transposed keys: every position's chain advances one dimension at a time,
// four dimensions per pass over the scores.
HK_STAGE void serial_scores_transposed_avx(const float *q, const float *kt, int64_t count, int64_t d, float *dots) {
    const int64_t whole = count - count % 8;
    for (int64_t j = 0; j < count; j++) dots[j] = 0;
    int64_t e = 0;
    for (; e + 4 <= d; e += 4) {
        const __m256 q0 = _mm256_set1_ps(q[e]), q1 = _mm256_set1_ps(q[e + 1]);
        const __m256 q2 = _mm256_set1_ps(q[e + 2]), q3 = _mm256_set1_ps(q[e + 3]);
        const float *k0 = kt + e * count, *k1 = k0 + count, *k2 = k1 + count, *k3 = k2 + count;
        for (int64_t j = 0; j < whole; j += 8) {
            __m256 s = _mm256_loadu_ps(dots + j);
            s = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k0 + j), s);
            s = _mm256_fmadd_ps(q1, _mm256_loadu_ps(k1 + j), s);
            s = _mm256_fmadd_ps(q2, _mm256_loadu_ps(k2 + j), s);
            s = _mm256_fmadd_ps(q3, _mm256_loadu_ps(k3 + j), s);
            _mm256_storeu_ps(dots + j, s);
        }
        for (int64_t j = whole; j < count; j++) {
            float s = dots[j];
            s = hk_fma(q[e], k0[j], s);
            s = hk_fma(q[e + 1], k1[j], s);
            s = hk_fma(q[e + 2], k2[j], s);
            s = hk_fma(q[e + 3], k3[j], s);
            dots[j] = s;
        }
    }
    for (; e < d; e++) {
        const __m256 qd = _mm256_set1_ps(q[e]);
        const float *k = kt + e * count;
        for (int64_t j = 0; j < whole; j += 8)
            _mm256_storeu_ps(dots + j, _mm256_fmadd_ps(qd, _mm256_loadu_ps(k + j), _mm256_loadu_ps(dots + j)));
        for (int64_t j = whole; j < count; j++) dots[j] = hk_fma(q[e], k[j], dots[j]);
    }
}

// Stage 1 on AVX2 when the order and layout have a vector form; returns 0 when they have none.
HK_STAGE int scores_avx(const hk_attention *a, const float *q, int64_t count, float *scores) {
    const int64_t d = a->head_dim;
    const hk_sum_order order = a->order.scores;
    if (a->kv_half && !a->kv_transposed && (order == HK_SUM_LLAMA_ONE || order == HK_SUM_LLAMA_MANY)) {
        const int single = order == HK_SUM_LLAMA_ONE;
        if (d % (single ? 32 : 8) != 0) return 0;
        int64_t t = 0;
        if (!single) {
            for (; t + 8 <= count; t += 8)
                llama_many_scores8(NULL, (const uint16_t *)a->k + t * a->kv_stride, a->kv_stride, q, d, scores + t);
            cap_all(a, scores, t);
        }
        for (; t < count; t++)
            scores[t] = capped(a, llama_score_avx(NULL, (const uint16_t *)a->k + t * a->kv_stride, q, d, single));
        return 1;
    }
    if (!a->kv_half && !a->kv_transposed && order == HK_SUM_LANES8_PAIRS) {
        const float *k = a->k;
        int64_t t = 0;
        // The scale goes with the sums; a cap, when there is one, after them all.
        const float scale = a->softcap > 0 ? 1 : a->scale;
        for (; t + 8 <= count; t += 8) pairs_scores8_avx(q, k + t * a->kv_stride, a->kv_stride, d, scale, scores + t);
        for (; t < count; t++) {
            const float *kt = k + t * a->kv_stride;
            const int64_t whole = d - d % 8;
            __m256 acc = _mm256_setzero_ps();
            for (int64_t e = 0; e < whole; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + e), _mm256_loadu_ps(kt + e), acc);
            float lane[8];
            _mm256_storeu_ps(lane, acc);
            float s = hk_reduce8_pairs(lane);
            for (int64_t e = whole; e < d; e++) s = fmaf(q[e], kt[e], s);
            scores[t] = s * scale;
        }
        if (a->softcap > 0) cap_all(a, scores, count);
        return 1;
    }
    if (!a->kv_half && a->kv_transposed && order == HK_SUM_SERIAL) {
        serial_scores_transposed_avx(q, a->k, count, d, scores);
        cap_all(a, scores, count);
        return 1;
    }
    return 0;
}
#endif

// ---- Stage 2: softmax -------------------------------------------------------------------------

#ifdef HK_X86
// x[j] = e^(x[j] - shift) by hk_exp_approx, 8 at a time (the same bits).
HK_AVX2 static inline void exp_approx_avx(float *x, int64_t n, float shift) {
    const __m256 s = _mm256_set1_ps(shift);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(x + j), s)));
    if (j == n) return;
    // The last few through the vector form as well (it gives hk_exp_approx's bits lane for lane).
    float rest[8] = {0};
    memcpy(rest, x + j, (size_t)(n - j) * sizeof(float));
    _mm256_storeu_ps(rest, hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(rest), s)));
    memcpy(x + j, rest, (size_t)(n - j) * sizeof(float));
}

HK_AVX2 static inline float lanes_total_avx(const float *x, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + j));
    float sum = hk_hsum(acc);
    for (int64_t j = whole; j < n; j++) sum += x[j];
    return sum;
}
#endif

// The scores to weights in place; returns the sum the weights still need dividing by (1 when
// they are normalised already).
static inline __attribute__((always_inline)) float softmax_stage(int isa, const hk_attention *a, float *s, int64_t n,
                                                                 int64_t head) {
    const hk_attention_order o = a->order;
    if (o.softmax == HK_SOFTMAX_LLAMA) {
        hk_softmax_f32(isa, s, n, a->sinks ? a->sinks[head] : -INFINITY);
        int64_t t = 0;
#ifdef HK_X86
        if (isa == HK_ISA_AVX2) {
            uint16_t half[64];
            for (; t + 64 <= n; t += 64) {
                f32_to_f16_avx(s + t, half, 64);
                f16_to_f32_avx(half, s + t, 64);
            }
        }
#endif
        for (; t < n; t++) s[t] = hk_fp16_to_fp32(hk_fp32_to_fp16(s[t]));
        return 1;
    }
    float largest = -INFINITY;
    for (int64_t j = 0; j < n; j++) largest = fmaxf(largest, s[j]);
    if (o.softmax == HK_SOFTMAX_EXP) {
        for (int64_t j = 0; j < n; j++) s[j] = expf(s[j] - largest);
    } else {
#ifdef HK_X86
        if (isa == HK_ISA_AVX2) exp_approx_avx(s, n, largest); else
#endif
        for (int64_t j = 0; j < n; j++) s[j] = hk_exp_approx(s[j] - largest);
    }
    float sum = 0;
    if (o.total == HK_SUM_LANES8) {
#ifdef HK_X86
        if (isa == HK_ISA_AVX2) sum = lanes_total_avx(s, n); else
#endif
        {
            float lane[8] = {0};
            const int64_t whole = n - n % 8;
            for (int64_t j = 0; j < whole; j++) lane[j & 7] += s[j];
            sum = hk_reduce8(lane);
            for (int64_t j = whole; j < n; j++) sum += s[j];
        }
    } else {
        for (int64_t j = 0; j < n; j++) sum = sum + s[j];
    }
    if (o.normalise != HK_NORMALISE_WEIGHTS) return sum;
    const float inverse = 1.0f / sum;
    for (int64_t j = 0; j < n; j++) s[j] = s[j] * inverse;
    return 1;
}

// ---- Stage 3: the weighted values -------------------------------------------------------------

static void values_portable(int isa, const hk_attention *a, const float *w, int64_t count, float sum, float *out) {
    const int64_t d = a->head_dim;
    const hk_sum_order order = a->order.values;
    const size_t size = a->kv_half ? 2 : 4;
    if (order == HK_SUM_VECTOR) {
        for (int64_t e = 0; e < d; e++) out[e] = 0;
        for (int64_t t = 0; t < count; t++) {
            const float weight = a->order.normalise == HK_NORMALISE_EACH ? w[t] / sum : w[t];
            hk_axpy_f32(isa, weight, (const float *)a->v + t * a->kv_stride, out, d);
        }
        if (a->order.normalise == HK_NORMALISE_OUTPUT) for (int64_t e = 0; e < d; e++) out[e] = out[e] / sum;
        return;
    }
    for (int64_t e = 0; e < d; e++) {
        float total;
        if (order == HK_SUM_LLAMA_ONE || order == HK_SUM_LLAMA_MANY) {
            // Over positions there are no leftovers: llama.cpp pads the cache to a multiple of 32.
            const int slots = order == HK_SUM_LLAMA_ONE ? 32 : 8;
            float slot[32] = {0};
            for (int64_t t = 0; t < count; t++) {
                const int l = (int)((a->first + t) & (slots - 1));
                slot[l] = fmaf(element(a, (const char *)a->v + (t * a->kv_stride + e) * size, 0, 0), w[t], slot[l]);
            }
            total = slots == 32 ? hk_reduce32(slot) : hk_reduce8(slot);
        } else if (a->kv_transposed) {
            total = ordered_dot(isa, a, order, w, (const float *)a->v + e * a->n_pos, 1, count);
        } else {
            total = ordered_dot(isa, a, order, w, (const char *)a->v + e * size, a->kv_stride, count);
        }
        out[e] = a->order.normalise == HK_NORMALISE_OUTPUT ? total / sum : total;
    }
}

#ifdef HK_X86
// The first of n positions (the first at absolute position `first`) that falls in slot l: a
// position's slot is its place in the whole cache, as llama.cpp's attention row spans every
// cell and masks those outside a sliding window to zero weight.
static inline int64_t first_in_slot(int l, int slots, int64_t first) {
    return ((l - first) % slots + slots) % slots;
}

// Reduces the slots of eight output dimensions as llama.cpp does: 32 slots (its vector dot
// product's four 8-lane accumulators) or 8 lanes (tinyBLAS).
HK_AVX2 static __m256 reduce_slot_vectors(const __m256 *acc, int slots) {
    if (slots == 32) {
        __m256 y[8];
        for (int l = 0; l < 8; l++) y[l] = _mm256_add_ps(_mm256_add_ps(acc[l], acc[16 + l]), _mm256_add_ps(acc[8 + l], acc[24 + l]));
        const __m256 t0 = _mm256_add_ps(y[0], y[4]), t1 = _mm256_add_ps(y[1], y[5]);
        const __m256 t2 = _mm256_add_ps(y[2], y[6]), t3 = _mm256_add_ps(y[3], y[7]);
        return _mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3));
    }
    const __m256 a0 = _mm256_add_ps(acc[4], acc[0]), a1 = _mm256_add_ps(acc[5], acc[1]);
    const __m256 a2 = _mm256_add_ps(acc[6], acc[2]), a3 = _mm256_add_ps(acc[7], acc[3]);
    return _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
}

// The llama.cpp orders over a half V cache: position t summed into slot t mod `slots` with one
// fused multiply-add each, in order. A slot at a time over 64 dimensions keeps 8 accumulators in
// registers and reads each row of V once per 64 dimensions (all 32 slots of 8 dimensions at
// once would spill).
HK_AVX2 static void llama_values_avx(const uint16_t *v, int64_t stride, int64_t n_pos, int64_t d, const float *scores,
                                     int slots, int64_t first, float *out) {
    __attribute__((aligned(32))) float buf[32 * 64];
    int64_t i0 = 0;
    for (; i0 + 64 <= d; i0 += 64) {
        for (int l = 0; l < slots; l++) {
            __m256 a[8];
            for (int j = 0; j < 8; j++) a[j] = _mm256_setzero_ps();
            for (int64_t t = first_in_slot(l, slots, first); t < n_pos; t += slots) {
                const __m256 s = _mm256_set1_ps(scores[t]);
                const uint16_t *row = v + t * stride + i0;
                for (int j = 0; j < 8; j++) a[j] = _mm256_fmadd_ps(load_half8(row + 8 * j), s, a[j]);
            }
            for (int j = 0; j < 8; j++) _mm256_store_ps(buf + l * 64 + 8 * j, a[j]);
        }
        for (int j = 0; j < 8; j++) {
            __m256 acc[32];
            for (int l = 0; l < slots; l++) acc[l] = _mm256_load_ps(buf + l * 64 + 8 * j);
            _mm256_storeu_ps(out + i0 + 8 * j, reduce_slot_vectors(acc, slots));
        }
    }
    // Head sizes that are not a multiple of 64: eight dimensions at a time.
    for (int64_t i = i0; i < d; i += 8) {
        __m256 acc[32];
        for (int l = 0; l < slots; l++) acc[l] = _mm256_setzero_ps();
        for (int64_t t = 0; t < n_pos; t++) {
            const int l = (int)((first + t) & (slots - 1));
            acc[l] = _mm256_fmadd_ps(load_half8(v + t * stride + i), _mm256_set1_ps(scores[t]), acc[l]);
        }
        _mm256_storeu_ps(out + i, reduce_slot_vectors(acc, slots));
    }
}

// HK_SUM_SERIAL over float value rows: one chain per dimension, 32 dimensions at a time so that
// each weight is broadcast once.
HK_STAGE void serial_values_avx(const float *v, int64_t stride, int64_t count, int64_t d, const float *w, float *o) {
    const int64_t whole = d - d % 8;
    int64_t e = 0;
    for (; e + 32 <= whole; e += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t j = 0; j < count; j++) {
            const __m256 s = _mm256_set1_ps(w[j]);
            const float *vj = v + j * stride + e;
            a0 = _mm256_fmadd_ps(s, _mm256_loadu_ps(vj), a0);
            a1 = _mm256_fmadd_ps(s, _mm256_loadu_ps(vj + 8), a1);
            a2 = _mm256_fmadd_ps(s, _mm256_loadu_ps(vj + 16), a2);
            a3 = _mm256_fmadd_ps(s, _mm256_loadu_ps(vj + 24), a3);
        }
        _mm256_storeu_ps(o + e, a0);
        _mm256_storeu_ps(o + e + 8, a1);
        _mm256_storeu_ps(o + e + 16, a2);
        _mm256_storeu_ps(o + e + 24, a3);
    }
    for (; e < whole; e += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t j = 0; j < count; j++) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), _mm256_loadu_ps(v + j * stride + e), acc);
        _mm256_storeu_ps(o + e, acc);
    }
    for (; e < d; e++) {
        float acc = 0;
        for (int64_t j = 0; j < count; j++) acc = fmaf(w[j], v[j * stride + e], acc);
        o[e] = acc;
    }
}

// HK_SUM_LANES8 over transposed values, four dimensions at once: four independent chains of
// fused multiply-adds (one would wait on its own latency), each divided by `divisor`.
HK_AVX2 static void lanes_values_transposed_avx(const float *w, const float *vt, int64_t count, int64_t d, float divisor,
                                                float *out) {
    const int64_t whole = count - count % 8;
    int64_t e = 0;
    for (; e + 4 <= d; e += 4) {
        const float *y0 = vt + e * count, *y1 = y0 + count, *y2 = y1 + count, *y3 = y2 + count;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t j = 0; j < whole; j += 8) {
            const __m256 x = _mm256_loadu_ps(w + j);
            a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(y0 + j), a0);
            a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(y1 + j), a1);
            a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(y2 + j), a2);
            a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(y3 + j), a3);
        }
        float s0 = hk_hsum(a0), s1 = hk_hsum(a1), s2 = hk_hsum(a2), s3 = hk_hsum(a3);
        for (int64_t j = whole; j < count; j++) {
            s0 = hk_fma(w[j], y0[j], s0);
            s1 = hk_fma(w[j], y1[j], s1);
            s2 = hk_fma(w[j], y2[j], s2);
            s3 = hk_fma(w[j], y3[j], s3);
        }
        out[e] = s0 / divisor;
        out[e + 1] = s1 / divisor;
        out[e + 2] = s2 / divisor;
        out[e + 3] = s3 / divisor;
    }
    for (; e < d; e++) {
        const float *y = vt + e * count;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t j = 0; j < whole; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(y + j), acc);
        float s = hk_hsum(acc);
        for (int64_t j = whole; j < count; j++) s = hk_fma(w[j], y[j], s);
        out[e] = s / divisor;
    }
}

// Stage 3 on AVX2 when the order and layout have a vector form; returns 0 when they have none.
HK_STAGE int values_avx(const hk_attention *a, const float *w, int64_t count, float sum, float *out) {
    const hk_sum_order order = a->order.values;
    const int64_t d = a->head_dim;
    if (a->kv_half && !a->kv_transposed && (order == HK_SUM_LLAMA_ONE || order == HK_SUM_LLAMA_MANY) && d % 8 == 0) {
        llama_values_avx(a->v, a->kv_stride, count, d, w, order == HK_SUM_LLAMA_ONE ? 32 : 8, a->first, out);
        return 1;
    }
    if (!a->kv_half && !a->kv_transposed && order == HK_SUM_SERIAL && a->order.normalise == HK_NORMALISE_WEIGHTS) {
        serial_values_avx(a->v, a->kv_stride, count, d, w, out);
        return 1;
    }
    if (!a->kv_half && a->kv_transposed && order == HK_SUM_LANES8 && a->order.normalise == HK_NORMALISE_OUTPUT) {
        lanes_values_transposed_avx(w, a->v, count, d, sum, out);
        return 1;
    }
    return 0;
}

// ---- Query heads that share a key/value head, in the llama.cpp orders --------------------------

// NQ (1 to 4) query heads over the same positions: each key and value row is read and converted
// once for all of them, and each head's arithmetic is exactly the three stages'. NQ is a
// constant in every call, so the accumulators stay in registers.
HK_STAGE void llama_group_avx(int isa, const int NQ, const hk_attention *a, int64_t head0, const float *q, int64_t n_pos,
                              float *out) {
    const int64_t d = a->head_dim, stride = a->kv_stride, first = a->first;
    const uint16_t *k = a->k, *v = a->v;
    const int single = a->order.scores == HK_SUM_LLAMA_ONE;
    float *scores = a->scores;
    __attribute__((aligned(32))) float qh[4][512];
    __attribute__((aligned(32))) float kf[512];
    for (int h = 0; h < NQ; h++) query_for(isa, a, q + h * d, qh[h]);
    int64_t t = 0;
    if (!single) {
        // Eight positions at a time, each key converted once for every head.
        __attribute__((aligned(32))) float kf8[8 * 512];
        for (; t + 8 <= n_pos; t += 8) {
            for (int j = 0; j < 8; j++) f16_to_f32_avx(k + (t + j) * stride, kf8 + j * d, d);
            for (int h = 0; h < NQ; h++) {
                float *s = scores + h * n_pos + t;
                llama_many_scores8(kf8, NULL, d, qh[h], d, s);
                cap_all(a, s, 8);
            }
        }
    }
    for (; t < n_pos; t++) {
        f16_to_f32_avx(k + t * stride, kf, d);
        for (int h = 0; h < NQ; h++) scores[h * n_pos + t] = capped(a, llama_score_avx(kf, NULL, qh[h], d, single));
    }
    for (int h = 0; h < NQ; h++) softmax_stage(isa, a, scores + h * n_pos, n_pos, head0 + h);
    // As llama_values_avx, 16 dimensions of every head at a time.
    const int slots = a->order.values == HK_SUM_LLAMA_ONE ? 32 : 8;
    __attribute__((aligned(32))) float buf[4][32 * 16];
    for (int64_t i0 = 0; i0 < d; i0 += 16) {
        for (int l = 0; l < slots; l++) {
            __m256 acc[4][2];
            for (int h = 0; h < NQ; h++) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
            for (int64_t t = first_in_slot(l, slots, first); t < n_pos; t += slots) {
                const __m256 v0 = load_half8(v + t * stride + i0), v1 = load_half8(v + t * stride + i0 + 8);
                for (int h = 0; h < NQ; h++) {
                    const __m256 w = _mm256_set1_ps(scores[h * n_pos + t]);
                    acc[h][0] = _mm256_fmadd_ps(v0, w, acc[h][0]);
                    acc[h][1] = _mm256_fmadd_ps(v1, w, acc[h][1]);
                }
            }
            for (int h = 0; h < NQ; h++) {
                _mm256_store_ps(buf[h] + l * 16, acc[h][0]);
                _mm256_store_ps(buf[h] + l * 16 + 8, acc[h][1]);
            }
        }
        for (int h = 0; h < NQ; h++)
            for (int j = 0; j < 2; j++) {
                __m256 s[32];
                for (int l = 0; l < slots; l++) s[l] = _mm256_load_ps(buf[h] + l * 16 + 8 * j);
                _mm256_storeu_ps(out + h * d + i0 + 8 * j, reduce_slot_vectors(s, slots));
            }
    }
}

// Whether every head of a row can go through llama_group_avx.
static int llama_groups(int isa, const hk_attention *a) {
    const hk_attention_order o = a->order;
    return isa == HK_ISA_AVX2 && a->n_heads > 1 && a->kv_half && !a->kv_transposed && a->head_dim % 32 == 0
        && (o.scores == HK_SUM_LLAMA_ONE || o.scores == HK_SUM_LLAMA_MANY) && o.values == o.scores
        && o.softmax == HK_SOFTMAX_LLAMA;
}

HK_AVX2 static void llama_heads_avx(int isa, const hk_attention *a, const float *q, int64_t n_pos, float *out) {
    const int64_t d = a->head_dim;
    for (int64_t h = 0; h < a->n_heads; h += 4) {
        switch (a->n_heads - h < 4 ? a->n_heads - h : 4) {
        case 4: llama_group_avx(isa, 4, a, h, q + h * d, n_pos, out + h * d); break;
        case 3: llama_group_avx(isa, 3, a, h, q + h * d, n_pos, out + h * d); break;
        case 2: llama_group_avx(isa, 2, a, h, q + h * d, n_pos, out + h * d); break;
        default: llama_group_avx(isa, 1, a, h, q + h * d, n_pos, out + h * d); break;
        }
    }
}
#endif

// ---- The driver -------------------------------------------------------------------------------

static int valid(const hk_attention *a) {
    const hk_attention_order o = a->order;
    if (a->head_dim <= 0 || (a->kv_half && a->head_dim > 512)) return 0;
    if (o.scores == HK_SUM_VECTOR && (a->kv_half || a->kv_transposed)) return 0;
    if (o.values == HK_SUM_VECTOR && (a->kv_half || a->kv_transposed)) return 0;
    if (a->kv_transposed && (o.values == HK_SUM_LLAMA_ONE || o.values == HK_SUM_LLAMA_MANY)) return 0;
    if (a->sinks && o.softmax != HK_SOFTMAX_LLAMA) return 0;
    return 1;
}

// One query head's three stages, on the portable path.
static void head_portable(int isa, const hk_attention *a, int64_t head, const float *q, int64_t count, float *out) {
    scores_portable(isa, a, q, count, a->scores);
    const float sum = softmax_stage(isa, a, a->scores, count, head);
    values_portable(isa, a, a->scores, count, sum, out);
}

#ifdef HK_X86
// One query head's three stages on AVX2, each stage on its vector form when the order and layout
// have one.
HK_AVX2 static void head_avx(const hk_attention *a, int64_t head, const float *q, int64_t count, float *out) {
    if (!scores_avx(a, q, count, a->scores)) scores_portable(HK_ISA_AVX2, a, q, count, a->scores);
    const float sum = softmax_stage(HK_ISA_AVX2, a, a->scores, count, head);
    if (!values_avx(a, a->scores, count, sum, out)) values_portable(HK_ISA_AVX2, a, a->scores, count, sum, out);
}
#endif

void hk_attention_run(int isa, const hk_attention *a) {
    const int64_t d = a->head_dim;
    if (!valid(a)) {
        // Callers reject such models when loading; never touch memory for them.
        for (int64_t i = 0; i < a->n_queries; i++)
            for (int64_t e = 0; e < a->n_heads * d; e++) a->out[i * a->out_stride + e] = NAN;
        return;
    }
    float rounded[512];
    for (int64_t i = 0; i < a->n_queries; i++) {
        const int64_t count = a->causal ? a->n_pos - a->n_queries + 1 + i : a->n_pos;
        const float *row = a->q + i * a->q_stride;
        float *out = a->out + i * a->out_stride;
        if (count <= 0) {
            for (int64_t e = 0; e < a->n_heads * d; e++) out[e] = 0;
            continue;
        }
#ifdef HK_X86
        if (llama_groups(isa, a)) { llama_heads_avx(isa, a, row, count, out); continue; }
#endif
        for (int64_t h = 0; h < a->n_heads; h++) {
            const float *q = query_for(isa, a, row + h * d, rounded);
#ifdef HK_X86
            if (isa == HK_ISA_AVX2) { head_avx(a, h, q, count, out + h * d); continue; }
#endif
            head_portable(isa, a, h, q, count, out + h * d);
        }
    }
}

// ---- The entry points of each network ----------------------------------------------------------

static const hk_attention_order llama_one = {HK_SUM_LLAMA_ONE, HK_SOFTMAX_LLAMA, HK_SUM_SERIAL, HK_NORMALISE_WEIGHTS, HK_SUM_LLAMA_ONE};
static const hk_attention_order llama_many = {HK_SUM_LLAMA_MANY, HK_SOFTMAX_LLAMA, HK_SUM_SERIAL, HK_NORMALISE_WEIGHTS, HK_SUM_LLAMA_MANY};

void hk_attention_heads_f16(int isa, const float *q, int64_t n_heads, const uint16_t *k, const uint16_t *v,
                            int64_t stride, int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                            int64_t first, const float *sinks, float *scores, float *out) {
    const hk_attention a = {
        .q = q, .q_stride = n_heads * head_dim, .n_queries = 1, .n_heads = n_heads, .head_dim = head_dim,
        .k = k, .v = v, .kv_half = 1, .kv_stride = stride, .n_pos = n_pos, .first = first,
        .scale = scale, .softcap = softcap, .sinks = sinks, .order = single ? llama_one : llama_many,
        .scores = scores, .out = out, .out_stride = n_heads * head_dim,
    };
    hk_attention_run(isa, &a);
}

void hk_attention_head_f16(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                           int64_t n_pos, int64_t head_dim, float scale, float softcap, int single, int64_t first,
                           float *scores, float *out) {
    hk_attention_heads_f16(isa, q, 1, k, v, stride, n_pos, head_dim, scale, softcap, single, first, NULL, scores, out);
}

// ---- Quantized KV caches -----------------------------------------------------------------------

// llama.cpp's quantize_row_q4_0_ref: the block's value of largest magnitude maps to -8.
static void quantize_q4_0(const float *x, hk_q4_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        }
        const float d = max / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = hk_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            const int lo = (int)(int8_t)(x[j] * id + 8.5f), hi = (int)(int8_t)(x[16 + j] * id + 8.5f);
            y[b].qs[j] = (uint8_t)((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
        }
    }
}

int hk_kv_store_row(int isa, uint32_t type, const float *x, void *dst, int64_t n) {
    switch (type) {
    case HK_F16: hk_f32_to_f16_row(isa, x, dst, n); return 0;
    case HK_Q8_0: return n % 32 ? -1 : hk_quantize_activations(isa, HK_Q8_0, x, dst, n);
    case HK_Q4_0: if (n % 32) return -1; quantize_q4_0(x, dst, n); return 0;
    default: return -1;
    }
}

// Stage 1 or 3 over a half cache, on the best form `isa` has.
#ifdef HK_X86
HK_AVX2 static int half_scores_avx(const hk_attention *a, const float *q, int64_t count, float *scores) {
    return scores_avx(a, q, count, scores);
}

HK_AVX2 static int half_values_avx(const hk_attention *a, const float *w, int64_t count, float *out) {
    return values_avx(a, w, count, 1, out);
}
#endif

static void half_scores(int isa, const hk_attention *a, const float *q, int64_t count, float *scores) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && half_scores_avx(a, q, count, scores)) return;
#endif
    scores_portable(isa, a, q, count, scores);
}

static void half_values(int isa, const hk_attention *a, const float *w, int64_t count, float *out) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && half_values_avx(a, w, count, out)) return;
#endif
    values_portable(isa, a, w, count, 1, out);
}

#ifdef HK_X86
// Sixteen values of position t's row (a Q8_0 or Q4_0 row of `row_bytes`) from dimension i0 (a
// multiple of 16), dequantized as hk_dequantize does (the quant as a float times the scale).
HK_STAGE void dequantize16(uint32_t type, const uint8_t *row, int64_t i0, __m256 *lo, __m256 *hi) {
    __m128i q;
    float d;
    if (type == HK_Q8_0) {
        const hk_q8_0 *b = (const hk_q8_0 *)row + i0 / 32;
        d = hk_fp16_to_fp32(b->d);
        q = _mm_loadu_si128((const __m128i *)(b->qs + i0 % 32));
    } else {
        const hk_q4_0 *b = (const hk_q4_0 *)row + i0 / 32;
        d = hk_fp16_to_fp32(b->d);
        const __m128i bytes = _mm_loadu_si128((const __m128i *)b->qs);
        const __m128i nibbles = i0 % 32 ? _mm_srli_epi16(bytes, 4) : bytes;
        q = _mm_sub_epi8(_mm_and_si128(nibbles, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
    }
    const __m256 scale = _mm256_set1_ps(d);
    *lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), scale);
    *hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))), scale);
}

// quantized_values for NQ heads, sixteen dimensions of every head at a time in registers: the
// same fused multiply-adds in the same order, without a store between positions.
HK_STAGE void quantized_values_group(const int NQ, uint32_t type, const uint8_t *v, size_t row_bytes, int64_t n_pos,
                                     int64_t d, const float *scores, float *out) {
    for (int64_t i0 = 0; i0 < d; i0 += 16) {
        __m256 acc[4][2];
        for (int h = 0; h < NQ; h++) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
        for (int64_t t = 0; t < n_pos; t++) {
            __m256 lo, hi;
            dequantize16(type, v + (size_t)t * row_bytes, i0, &lo, &hi);
            for (int h = 0; h < NQ; h++) {
                const __m256 w = _mm256_set1_ps(scores[h * n_pos + t]);
                acc[h][0] = _mm256_fmadd_ps(lo, w, acc[h][0]);
                acc[h][1] = _mm256_fmadd_ps(hi, w, acc[h][1]);
            }
        }
        for (int h = 0; h < NQ; h++) {
            _mm256_storeu_ps(out + h * d + i0, acc[h][0]);
            _mm256_storeu_ps(out + h * d + i0 + 8, acc[h][1]);
        }
    }
}

HK_AVX2 static void quantized_values_avx(uint32_t type, const uint8_t *v, size_t row_bytes, int64_t n_pos, int64_t d,
                                         const float *scores, int nq, float *out) {
    switch (nq) {
    case 4: quantized_values_group(4, type, v, row_bytes, n_pos, d, scores, out); break;
    case 3: quantized_values_group(3, type, v, row_bytes, n_pos, d, scores, out); break;
    case 2: quantized_values_group(2, type, v, row_bytes, n_pos, d, scores, out); break;
    default: quantized_values_group(1, type, v, row_bytes, n_pos, d, scores, out); break;
    }
}
#endif

// Up to four heads' weighted values over a quantized V: each row dequantized once, then one
// fused multiply-add per head and dimension, position after position.
static void quantized_values(int isa, uint32_t type, const uint8_t *v, size_t row_bytes, int64_t n_pos, int64_t d,
                             const float *scores, int nq, float *out) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && (type == HK_Q8_0 || type == HK_Q4_0) && d % 32 == 0) {
        quantized_values_avx(type, v, row_bytes, n_pos, d, scores, nq, out);
        return;
    }
#endif
    float row[512];
    for (int64_t e = 0; e < nq * d; e++) out[e] = 0;
    for (int64_t t = 0; t < n_pos; t++) {
        hk_dequantize(isa, type, v + (size_t)t * row_bytes, row, d);
        for (int h = 0; h < nq; h++) {
            const float w = scores[h * n_pos + t];
            float *o = out + h * d;
#ifdef HK_X86
            if (isa == HK_ISA_AVX2) {
                hk_avx2_axpy_f32(w, row, o, d);
                continue;
            }
#endif
            for (int64_t e = 0; e < d; e++) o[e] = fmaf(row[e], w, o[e]);
        }
    }
}

void hk_attention_heads_kv(int isa, const float *q, int64_t n_heads, const void *k, uint32_t k_type, size_t k_row_bytes,
                           const void *v, uint32_t v_type, size_t v_row_bytes, int64_t n_pos, int64_t head_dim,
                           float scale, float softcap, int single, int64_t first, const float *sinks, float *scores,
                           float *out) {
    const int k_ok = k_type == HK_F16 || ((k_type == HK_Q8_0 || k_type == HK_Q4_0) && head_dim % 32 == 0);
    const int v_ok = v_type == HK_F16 || ((v_type == HK_Q8_0 || v_type == HK_Q4_0) && head_dim % 32 == 0);
    if (!k_ok || !v_ok || head_dim <= 0 || head_dim > 512) {
        // Callers keep only these types; never read memory laid out otherwise.
        for (int64_t e = 0; e < n_heads * head_dim; e++) out[e] = NAN;
        return;
    }
    if (k_type == HK_F16 && v_type == HK_F16) {
        hk_attention_heads_f16(isa, q, n_heads, k, v, (int64_t)(k_row_bytes / 2), n_pos, head_dim, scale, softcap, single,
                               first, sinks, scores, out);
        return;
    }
    const hk_attention half = {
        .head_dim = head_dim, .k = k, .v = v, .kv_half = 1, .kv_stride = (int64_t)(k_row_bytes / 2), .n_pos = n_pos,
        .first = first, .scale = scale, .softcap = softcap, .sinks = sinks, .order = single ? llama_one : llama_many,
    };
    hk_attention half_v = half;
    half_v.kv_stride = (int64_t)(v_row_bytes / 2);
    for (int64_t h0 = 0; h0 < n_heads; h0 += 4) {
        const int nq = (int)(n_heads - h0 < 4 ? n_heads - h0 : 4);
        if (k_type != HK_F16) {
            // The queries quantized as the keys' products take them (llama.cpp's vec_dot_type),
            // all heads' scores in one pass over the keys: each gets the bits of its own product.
            hk_q8_0 blocks[4][512 / 32];
            const size_t query_bytes = (size_t)(head_dim / 32) * sizeof(hk_q8_0);
            for (int h = 0; h < nq; h++)
                hk_quantize_activations(isa, HK_Q8_0, q + (h0 + h) * head_dim, (uint8_t *)blocks + h * query_bytes, head_dim);
            hk_matmul(isa, k_type, k, k_row_bytes, 0, n_pos, blocks, query_bytes, nq, head_dim, NULL, 0, scores, (size_t)n_pos);
        }
        for (int h = 0; h < nq; h++) {
            const float *qh = q + (h0 + h) * head_dim;
            float *s = scores + h * n_pos;
            if (k_type == HK_F16) {
                float rounded[512];
                half_scores(isa, &half, query_for(isa, &half, qh, rounded), n_pos, s);
            } else {
                cap_all(&half, s, n_pos);
            }
            // Weights go to a half V in half precision, as llama.cpp's product converts them.
            if (v_type == HK_F16) softmax_stage(isa, &half, s, n_pos, h0 + h);
            else hk_softmax_f32(isa, s, n_pos, sinks ? sinks[h0 + h] : -INFINITY);
        }
        float *o = out + h0 * head_dim;
        if (v_type == HK_F16) {
            for (int h = 0; h < nq; h++) half_values(isa, &half_v, scores + h * n_pos, n_pos, o + h * head_dim);
        } else {
            quantized_values(isa, v_type, v, v_row_bytes, n_pos, head_dim, scores, nq, o);
        }
    }
}

// BERT as sentence-transformers runs it: scores in 8 lanes reduced pairwise, e^x by
// hk_exp_approx summed in order, each weight times 1 / sum, each output one chain over positions.
static const hk_attention_order bert = {HK_SUM_LANES8_PAIRS, HK_SOFTMAX_APPROX, HK_SUM_SERIAL, HK_NORMALISE_WEIGHTS, HK_SUM_SERIAL};

void hk_encoder_attention_f32(int isa, const float *q, const float *k, const float *v, int64_t stride,
                              int64_t count, int64_t head_dim, float scale, float *scores, float *out,
                              int64_t out_stride) {
    if (count <= 0 || head_dim <= 0) return;
    const hk_attention a = {
        .q = q, .q_stride = stride, .n_queries = count, .n_heads = 1, .head_dim = head_dim,
        .k = k, .v = v, .kv_stride = stride, .n_pos = count, .scale = scale, .order = bert,
        .scores = scores, .out = out, .out_stride = out_stride,
    };
    hk_attention_run(isa, &a);
}

// Whisper's decoder over the audio, in CTranslate2's orders: each score one chain over the
// dimensions of transposed keys, e^x by hk_exp_approx summed in 8 lanes, each output 8 lanes over
// positions divided by the sum.
static const hk_attention_order whisper_cross = {HK_SUM_SERIAL, HK_SOFTMAX_APPROX, HK_SUM_LANES8, HK_NORMALISE_OUTPUT, HK_SUM_LANES8};

void hk_attend_transposed_f32(int isa, const float *q, const float *kt, const float *vt, int64_t count, int64_t head_dim,
                              float scale, float *scores, float *out) {
    const hk_attention a = {
        .q = q, .n_queries = 1, .n_heads = 1, .head_dim = head_dim, .k = kt, .v = vt, .kv_transposed = 1,
        .n_pos = count, .scale = scale, .order = whisper_cross, .scores = scores, .out = out,
    };
    hk_attention_run(isa, &a);
}

// Whisper's decoder over its own tokens: the path's dot product and axpy, e^x by expf summed in
// order, each weight divided by the sum as it is added.
static const hk_attention_order whisper_self = {HK_SUM_VECTOR, HK_SOFTMAX_EXP, HK_SUM_SERIAL, HK_NORMALISE_EACH, HK_SUM_VECTOR};

void hk_attend_one_f32(int isa, const float *q, const float *keys, const float *values, int64_t stride, int64_t count,
                       int64_t head_dim, float scale, float *scores, float *out) {
    const hk_attention a = {
        .q = q, .n_queries = 1, .n_heads = 1, .head_dim = head_dim, .k = keys, .v = values, .kv_stride = stride,
        .n_pos = count, .scale = scale, .order = whisper_self, .scores = scores, .out = out,
    };
    hk_attention_run(isa, &a);
}
