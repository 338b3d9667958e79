#include "hk_attention.h"
#include "hk_activations.h"
#include "internal.h"
#include <math.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

#if HK_HAVE_AVX2
#include <immintrin.h>
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

// Reduces 32 slots (ggml_vec_dot_f16's four 8-lane accumulators) as that kernel does.
static float reduce_slots32(const float *s) {
    float y[8];
    for (int l = 0; l < 8; l++) y[l] = (s[l] + s[16 + l]) + (s[8 + l] + s[24 + l]);
    const float t0 = y[0] + y[4], t1 = y[1] + y[5], t2 = y[2] + y[6], t3 = y[3] + y[7];
    return (t0 + t1) + (t2 + t3);
}

// Reduces 8 lanes as tinyBLAS does.
static float reduce_slots8(const float *l) {
    const float a0 = l[4] + l[0], a1 = l[5] + l[1], a2 = l[6] + l[2], a3 = l[7] + l[3];
    return (a0 + a2) + (a1 + a3);
}

// sum over i < n of x[i] * y(i), in the order of the chosen kernel. y is given as floats.
static float ordered_dot(const uint16_t *x, int64_t xstride, const float *y, int64_t n, int single) {
    if (single) {
        float slot[32] = {0};
        const int64_t whole = n - n % 32;
        for (int64_t i = 0; i < whole; i++) slot[i & 31] = fmaf(hk_fp16_to_fp32(x[i * xstride]), y[i], slot[i & 31]);
        double sum = reduce_slots32(slot);
        for (int64_t i = whole; i < n; i++) sum += (double)(hk_fp16_to_fp32(x[i * xstride]) * y[i]);
        return (float)sum;
    }
    float lane[8] = {0};
    for (int64_t i = 0; i < n; i++) lane[i & 7] = fmaf(hk_fp16_to_fp32(x[i * xstride]), y[i], lane[i & 7]);
    return reduce_slots8(lane);
}

#ifdef HK_X86
__attribute__((target("avx2,fma,f16c")))
static __m256 load_half8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

__attribute__((target("avx2,fma,f16c")))
static void attention_avx(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                          int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
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
            float slot[32];
            for (int j = 0; j < 4; j++) _mm256_storeu_ps(slot + 8 * j, acc[j]);
            dot = reduce_slots32(slot);
        } else if (!single) {
            __m256 acc = _mm256_setzero_ps();
            for (int64_t i = 0; i < d; i += 8) acc = _mm256_fmadd_ps(load_half8(kt + i), _mm256_loadu_ps(qh + i), acc);
            float lane[8];
            _mm256_storeu_ps(lane, acc);
            dot = reduce_slots8(lane);
        } else {
            dot = ordered_dot(kt, 1, qh, d, single);
        }
        float s = dot * scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        scores[t] = s;
    }
    normalise_scores(isa, scores, n_pos);
    // Eight output dimensions at a time; position t goes to slot t mod 32 (or lane t mod 8).
    const int slots = single ? 32 : 8;
    for (int64_t i = 0; i < d; i += 8) {
        __m256 acc[32];
        for (int l = 0; l < slots; l++) acc[l] = _mm256_setzero_ps();
        for (int64_t t = 0; t < n_pos; t++) {
            const int l = (int)(t & (slots - 1));
            acc[l] = _mm256_fmadd_ps(load_half8(v + t * stride + i), _mm256_set1_ps(scores[t]), acc[l]);
        }
        if (single) {
            __m256 y[8];
            for (int l = 0; l < 8; l++)
                y[l] = _mm256_add_ps(_mm256_add_ps(acc[l], acc[16 + l]), _mm256_add_ps(acc[8 + l], acc[24 + l]));
            const __m256 t0 = _mm256_add_ps(y[0], y[4]), t1 = _mm256_add_ps(y[1], y[5]);
            const __m256 t2 = _mm256_add_ps(y[2], y[6]), t3 = _mm256_add_ps(y[3], y[7]);
            _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3)));
        } else {
            const __m256 a0 = _mm256_add_ps(acc[4], acc[0]), a1 = _mm256_add_ps(acc[5], acc[1]);
            const __m256 a2 = _mm256_add_ps(acc[6], acc[2]), a3 = _mm256_add_ps(acc[7], acc[3]);
            _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3)));
        }
    }
}
#endif

static void attention_scalar(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                             int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                             float *scores, float *out) {
    float qh[512];
    for (int64_t i = 0; i < head_dim; i++) qh[i] = hk_fp16_to_fp32(hk_fp32_to_fp16(q[i]));
    for (int64_t t = 0; t < n_pos; t++) {
        float s = ordered_dot(k + t * stride, 1, qh, head_dim, single) * scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        scores[t] = s;
    }
    normalise_scores(isa, scores, n_pos);
    // Over positions there are no leftovers: llama.cpp pads the cache to a multiple of 32.
    for (int64_t i = 0; i < head_dim; i++) {
        if (single) {
            float slot[32] = {0};
            for (int64_t t = 0; t < n_pos; t++) slot[t & 31] = fmaf(hk_fp16_to_fp32(v[t * stride + i]), scores[t], slot[t & 31]);
            out[i] = reduce_slots32(slot);
        } else {
            float lane[8] = {0};
            for (int64_t t = 0; t < n_pos; t++) lane[t & 7] = fmaf(hk_fp16_to_fp32(v[t * stride + i]), scores[t], lane[t & 7]);
            out[i] = reduce_slots8(lane);
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
                           int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                           float *scores, float *out) {
    if (head_dim <= 0 || head_dim > 512) {
        // Callers reject such models when loading; never touch memory for them.
        for (int64_t i = 0; i < head_dim; i++) out[i] = NAN;
        return;
    }
#ifdef HK_X86
    if (isa == HK_ISA_AVX2 && head_dim % 8 == 0) {
        attention_avx(isa, q, k, v, stride, n_pos, head_dim, scale, softcap, single, scores, out);
        return;
    }
#endif
    attention_scalar(isa, q, k, v, stride, n_pos, head_dim, scale, softcap, single, scores, out);
}
