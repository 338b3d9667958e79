#include "hk_attention.h"
#include "hk_activations.h"
#include "internal.h"
#include "reduce.h"
#include <math.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

#if HK_HAVE_AVX2
#include "avx2.h"
#define HK_X86 1
#endif

#ifdef HK_X86
__attribute__((target("avx2,fma,f16c")))
static void f32_to_f16_avx(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = hk_fp32_to_fp16(x[i]);
}

__attribute__((target("avx2,fma,f16c")))
static void f16_to_f32_avx(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    }
    for (; i < n; i++) y[i] = hk_fp16_to_fp32(x[i]);
}

#endif

/// Softmax of the scores in place, then each weight rounded through half precision: llama.cpp
/// multiplies the half-precision V cache by the weights converted to V's type, and matching its
/// rounding keeps greedy choices between near-equal tokens the same. F16C rounds to nearest
/// even, as the portable conversion does.
static void normalise_scores(int isa, float *scores, int64_t n_pos) {
    hk_softmax_f32(isa, scores, n_pos);
    int64_t t = 0;
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) {
        uint16_t half[64];
        for (; t + 64 <= n_pos; t += 64) {
            f32_to_f16_avx(scores + t, half, 64);
            f16_to_f32_avx(half, scores + t, 64);
        }
    }
#endif
    for (; t < n_pos; t++) scores[t] = hk_fp16_to_fp32(hk_fp32_to_fp16(scores[t]));
}

// The sums below follow llama.cpp's CPU kernels for F16 matrices, whose order depends on how
// many query rows a pass has. With two or more (a prompt) it runs tinyBLAS: 8 lanes, lane l
// summing terms l, l + 8, ... with FMA, the lanes then added pairwise. With one (generation) it
// runs its vector dot product: 32 slots (term i goes to slot i mod 32) reduced in another
// pattern, in double. Keeping the same order gives the same bits, and the same greedy tokens.

// sum over i < n of x[i] * y(i), in the order of the chosen kernel. y is given as floats.
static float ordered_dot(const uint16_t *x, int64_t xstride, const float *y, int64_t n, int single) {
    if (single) {
        float slot[32] = {0};
        const int64_t whole = n - n % 32;
        for (int64_t i = 0; i < whole; i++) slot[i & 31] = fmaf(hk_fp16_to_fp32(x[i * xstride]), y[i], slot[i & 31]);
        double sum = hk_reduce32(slot);
        for (int64_t i = whole; i < n; i++) sum += (double)(hk_fp16_to_fp32(x[i * xstride]) * y[i]);
        return (float)sum;
    }
    float lane[8] = {0};
    for (int64_t i = 0; i < n; i++) lane[i & 7] = fmaf(hk_fp16_to_fp32(x[i * xstride]), y[i], lane[i & 7]);
    return hk_reduce8(lane);
}

#ifdef HK_X86
__attribute__((target("avx2,fma,f16c")))
static __m256 load_half8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

#define HK_GROUP_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

// Reduces the slots of eight output dimensions as llama.cpp does: 32 slots (its vector dot
// product's four 8-lane accumulators) or 8 lanes (tinyBLAS).
__attribute__((target("avx2,fma,f16c")))
static __m256 reduce_slot_vectors(const __m256 *acc, int slots) {
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

// The first of n positions (the first at absolute position `first`) that falls in slot l: a
// position's slot is its place in the whole cache, as llama.cpp's attention row spans every
// cell and masks those outside a sliding window to zero weight.
static inline int64_t first_in_slot(int l, int slots, int64_t first) {
    return ((l - first) % slots + slots) % slots;
}

// out = sum over positions t of scores[t] * v[t], position t summed into slot t mod `slots` with
// one fused multiply-add each, in order, and the slots reduced as llama.cpp reduces them.
// A slot at a time over 64 dimensions keeps 8 accumulators in registers and reads each row of
// V once per 64 dimensions (all 32 slots of 8 dimensions at once would spill).
__attribute__((target("avx2,fma,f16c")))
static void weighted_values_avx(const uint16_t *v, int64_t stride, int64_t n_pos, int64_t d, const float *scores,
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

__attribute__((target("avx2,fma,f16c")))
static void attention_avx(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                          int64_t n_pos, int64_t head_dim, float scale, float softcap, int single, int64_t first,
                          float *scores, float *out) {
    // The query is rounded through half precision, as llama.cpp converts it to the keys' type.
    float qh[512];
    uint16_t q16[512];
    const int64_t d = head_dim;
    f32_to_f16_avx(q, q16, d);
    f16_to_f32_avx(q16, qh, d);
    for (int64_t t = 0; t < n_pos; t++) {
        const uint16_t *kt = k + t * stride;
        float dot;
        if (single && d % 32 == 0) {
            __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            for (int64_t i = 0; i < d; i += 32)
                for (int j = 0; j < 4; j++)
                    acc[j] = _mm256_fmadd_ps(load_half8(kt + i + 8 * j), _mm256_loadu_ps(qh + i + 8 * j), acc[j]);
            dot = hk_hsum32(acc[0], acc[1], acc[2], acc[3]);
        } else if (!single) {
            __m256 acc = _mm256_setzero_ps();
            for (int64_t i = 0; i < d; i += 8) acc = _mm256_fmadd_ps(load_half8(kt + i), _mm256_loadu_ps(qh + i), acc);
            dot = hk_hsum(acc);
        } else {
            dot = ordered_dot(kt, 1, qh, d, single);
        }
        float s = dot * scale;
        if (softcap > 0) s = tanhf(s * (1.0f / softcap)) * softcap;
        scores[t] = s;
    }
    normalise_scores(isa, scores, n_pos);
    weighted_values_avx(v, stride, n_pos, d, scores, single ? 32 : 8, first, out);
}

// Query `h` of a group against position `t`'s key, already converted to floats: the same
// products and sums, in the same order, as attention_avx's, for a head size that is a
// multiple of 32.
HK_GROUP_INLINE float group_score(const float *kf, const float *qh, int64_t d, int single) {
    if (single) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int64_t i = 0; i < d; i += 32)
            for (int j = 0; j < 4; j++)
                acc[j] = _mm256_fmadd_ps(_mm256_load_ps(kf + i + 8 * j), _mm256_load_ps(qh + i + 8 * j), acc[j]);
        return hk_hsum32(acc[0], acc[1], acc[2], acc[3]);
    }
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < d; i += 8) acc = _mm256_fmadd_ps(_mm256_load_ps(kf + i), _mm256_load_ps(qh + i), acc);
    return hk_hsum(acc);
}

// NQ (1 to 4) query heads that share one key/value head, over the same positions. Each key
// and value row is read and converted once for all of them, and each head's arithmetic is
// exactly attention_avx's. NQ is a constant in every call, so the accumulators stay in
// registers.
HK_GROUP_INLINE void attention_group_avx(int isa, const int NQ, const float *q, const uint16_t *k, const uint16_t *v,
                                         int64_t stride, int64_t n_pos, int64_t d, float scale, float softcap, int single,
                                         int64_t first, float *scores, float *out) {
    __attribute__((aligned(32))) float qh[4][512];
    __attribute__((aligned(32))) float kf[512];
    uint16_t q16[512];
    for (int h = 0; h < NQ; h++) {
        f32_to_f16_avx(q + h * d, q16, d);
        f16_to_f32_avx(q16, qh[h], d);
    }
    for (int64_t t = 0; t < n_pos; t++) {
        f16_to_f32_avx(k + t * stride, kf, d);
        for (int h = 0; h < NQ; h++) {
            float s = group_score(kf, qh[h], d, single) * scale;
            if (softcap > 0) s = tanhf(s * (1.0f / softcap)) * softcap;
            scores[h * n_pos + t] = s;
        }
    }
    for (int h = 0; h < NQ; h++) normalise_scores(isa, scores + h * n_pos, n_pos);
    // As weighted_values_avx, 16 dimensions of every head at a time.
    const int slots = single ? 32 : 8;
    __attribute__((aligned(32))) float buf[4][32 * 16];
    for (int64_t i0 = 0; i0 < d; i0 += 16) {
        for (int l = 0; l < slots; l++) {
            __m256 a[4][2];
            for (int h = 0; h < NQ; h++) a[h][0] = a[h][1] = _mm256_setzero_ps();
            for (int64_t t = first_in_slot(l, slots, first); t < n_pos; t += slots) {
                const __m256 v0 = load_half8(v + t * stride + i0), v1 = load_half8(v + t * stride + i0 + 8);
                for (int h = 0; h < NQ; h++) {
                    const __m256 w = _mm256_set1_ps(scores[h * n_pos + t]);
                    a[h][0] = _mm256_fmadd_ps(v0, w, a[h][0]);
                    a[h][1] = _mm256_fmadd_ps(v1, w, a[h][1]);
                }
            }
            for (int h = 0; h < NQ; h++) {
                _mm256_store_ps(buf[h] + l * 16, a[h][0]);
                _mm256_store_ps(buf[h] + l * 16 + 8, a[h][1]);
            }
        }
        for (int h = 0; h < NQ; h++)
            for (int j = 0; j < 2; j++) {
                __m256 acc[32];
                for (int l = 0; l < slots; l++) acc[l] = _mm256_load_ps(buf[h] + l * 16 + 8 * j);
                _mm256_storeu_ps(out + h * d + i0 + 8 * j, reduce_slot_vectors(acc, slots));
            }
    }
}

// Groups of up to four heads, each group's size a constant in its call.
__attribute__((target("avx2,fma,f16c")))
static void attention_heads_avx(int isa, const float *q, int64_t n_heads, const uint16_t *k, const uint16_t *v,
                                int64_t stride, int64_t n_pos, int64_t d, float scale, float softcap, int single,
                                int64_t first, float *scores, float *out) {
    for (int64_t h = 0; h < n_heads; h += 4) {
        const float *qh = q + h * d;
        float *o = out + h * d;
        switch (n_heads - h < 4 ? n_heads - h : 4) {
        case 4: attention_group_avx(isa, 4, qh, k, v, stride, n_pos, d, scale, softcap, single, first, scores, o); break;
        case 3: attention_group_avx(isa, 3, qh, k, v, stride, n_pos, d, scale, softcap, single, first, scores, o); break;
        case 2: attention_group_avx(isa, 2, qh, k, v, stride, n_pos, d, scale, softcap, single, first, scores, o); break;
        default: attention_group_avx(isa, 1, qh, k, v, stride, n_pos, d, scale, softcap, single, first, scores, o); break;
        }
    }
}
#endif

static void attention_scalar(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                             int64_t n_pos, int64_t head_dim, float scale, float softcap, int single, int64_t first,
                             float *scores, float *out) {
    float qh[512];
    for (int64_t i = 0; i < head_dim; i++) qh[i] = hk_fp16_to_fp32(hk_fp32_to_fp16(q[i]));
    for (int64_t t = 0; t < n_pos; t++) {
        float s = ordered_dot(k + t * stride, 1, qh, head_dim, single) * scale;
        if (softcap > 0) s = tanhf(s * (1.0f / softcap)) * softcap;
        scores[t] = s;
    }
    normalise_scores(isa, scores, n_pos);
    // Over positions there are no leftovers: llama.cpp pads the cache to a multiple of 32.
    for (int64_t i = 0; i < head_dim; i++) {
        if (single) {
            float slot[32] = {0};
            for (int64_t t = 0; t < n_pos; t++) slot[(first + t) & 31] = fmaf(hk_fp16_to_fp32(v[t * stride + i]), scores[t], slot[(first + t) & 31]);
            out[i] = hk_reduce32(slot);
        } else {
            float lane[8] = {0};
            for (int64_t t = 0; t < n_pos; t++) lane[(first + t) & 7] = fmaf(hk_fp16_to_fp32(v[t * stride + i]), scores[t], lane[(first + t) & 7]);
            out[i] = hk_reduce8(lane);
        }
    }
}

void hk_f32_to_f16_row(int isa, const float *x, uint16_t *y, int64_t n) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) { f32_to_f16_avx(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = hk_fp32_to_fp16(x[i]);
}

void hk_attention_head_f16(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                           int64_t n_pos, int64_t head_dim, float scale, float softcap, int single, int64_t first,
                           float *scores, float *out) {
    if (head_dim <= 0 || head_dim > 512) {
        // Callers reject such models when loading; never touch memory for them.
        for (int64_t i = 0; i < head_dim; i++) out[i] = NAN;
        return;
    }
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && head_dim % 8 == 0) {
        attention_avx(isa, q, k, v, stride, n_pos, head_dim, scale, softcap, single, first, scores, out);
        return;
    }
#endif
    attention_scalar(isa, q, k, v, stride, n_pos, head_dim, scale, softcap, single, first, scores, out);
}

void hk_attention_heads_f16(int isa, const float *q, int64_t n_heads, const uint16_t *k, const uint16_t *v,
                            int64_t stride, int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                            int64_t first, float *scores, float *out) {
    int64_t h = 0;
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && head_dim > 0 && head_dim <= 512 && head_dim % 32 == 0) {
        attention_heads_avx(isa, q, n_heads, k, v, stride, n_pos, head_dim, scale, softcap, single, first, scores, out);
        return;
    }
#endif
    for (; h < n_heads; h++)
        hk_attention_head_f16(isa, q + h * head_dim, k, v, stride, n_pos, head_dim, scale, softcap, single, first,
                              scores, out + h * head_dim);
}
