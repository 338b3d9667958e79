#include "hk_attention.h"
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HK_X86 1
#endif

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    uint32_t bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {
            // Subnormal half: normalise it.
            exponent = 127 - 15 + 1;
            while ((mantissa & 0x400) == 0) { mantissa <<= 1; exponent--; }
            mantissa &= 0x3ff;
            bits = sign | (exponent << 23) | (mantissa << 13);
        }
    } else if (exponent == 31) {
        bits = sign | 0x7f800000 | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t abs = x & 0x7fffffff;
    if (abs > 0x7f800000) return (uint16_t)(sign | 0x7e00);               // NaN
    if (abs >= 0x477ff000) return (uint16_t)(sign | 0x7c00);              // overflow to infinity
    if (abs < 0x38800000) {                                               // subnormal or zero
        if (abs < 0x33000000) return (uint16_t)sign;
        uint32_t exponent = abs >> 23;
        uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - exponent;                                  // 14..24
        uint32_t half = mantissa >> shift;
        uint32_t rest = mantissa & ((1u << shift) - 1);
        uint32_t midpoint = 1u << (shift - 1);
        if (rest > midpoint || (rest == midpoint && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);                   // round to nearest even
    return (uint16_t)(sign | ((rounded - 0x38000000) >> 13));
}

/// Softmax of the scores in place, then each weight rounded through half precision: llama.cpp
/// multiplies the half-precision V cache by the weights converted to V's type, and matching its
/// rounding keeps greedy choices between near-equal tokens the same.
static void normalise_scores(float *scores, int64_t n_pos, float max_score) {
    double sum = 0;
    for (int64_t t = 0; t < n_pos; t++) {
        float e = expf(scores[t] - max_score);
        scores[t] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int64_t t = 0; t < n_pos; t++) scores[t] = half_to_float(float_to_half(scores[t] * inv));
}

static int hk_has_f16c_fma(void) {
#ifdef HK_X86
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    }
    return cached;
#else
    return 0;
#endif
}

#ifdef HK_X86
__attribute__((target("avx2,fma,f16c")))
static void f32_to_f16_avx(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = float_to_half(x[i]);
}

__attribute__((target("avx2,fma,f16c")))
static void f16_to_f32_avx(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    }
    for (; i < n; i++) y[i] = half_to_float(x[i]);
}

__attribute__((target("avx2,fma,f16c")))
static float hsum_avx(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v);
    __m128 hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma,f16c")))
static void attention_avx(const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                          int64_t n_pos, int64_t head_dim, float scale, float softcap,
                          float *scores, float *out) {
    // The query is rounded through half precision, as llama.cpp converts it to the keys' type.
    float qh[512];
    uint16_t q16[512];
    int64_t d = head_dim;
    f32_to_f16_avx(q, q16, d);
    f16_to_f32_avx(q16, qh, d);
    float max_score = -INFINITY;
    for (int64_t t = 0; t < n_pos; t++) {
        const uint16_t *kt = k + t * stride;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= d; i += 16) {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kt + i))), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i + 8), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kt + i + 8))), acc1);
        }
        float s = hsum_avx(_mm256_add_ps(acc0, acc1));
        for (; i < d; i++) s += qh[i] * half_to_float(kt[i]);
        s *= scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        scores[t] = s;
        if (s > max_score) max_score = s;
    }
    normalise_scores(scores, n_pos, max_score);
    int64_t i = 0;
    for (; i + 8 <= d; i += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t t = 0; t < n_pos; t++) {
            __m256 vt = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + t * stride + i)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[t]), vt, acc);
        }
        _mm256_storeu_ps(out + i, acc);
    }
    for (; i < d; i++) {
        float acc = 0;
        for (int64_t t = 0; t < n_pos; t++) acc += scores[t] * half_to_float(v[t * stride + i]);
        out[i] = acc;
    }
}
#endif

static void attention_scalar(const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                             int64_t n_pos, int64_t head_dim, float scale, float softcap,
                             float *scores, float *out) {
    float max_score = -INFINITY;
    for (int64_t t = 0; t < n_pos; t++) {
        const uint16_t *kt = k + t * stride;
        float s = 0;
        for (int64_t i = 0; i < head_dim; i++) s += half_to_float(float_to_half(q[i])) * half_to_float(kt[i]);
        s *= scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        scores[t] = s;
        if (s > max_score) max_score = s;
    }
    normalise_scores(scores, n_pos, max_score);
    for (int64_t i = 0; i < head_dim; i++) {
        float acc = 0;
        for (int64_t t = 0; t < n_pos; t++) acc += scores[t] * half_to_float(v[t * stride + i]);
        out[i] = acc;
    }
}

void hk_f32_to_f16_row(const float *x, uint16_t *y, int64_t n) {
#ifdef HK_X86
    if (hk_has_f16c_fma()) { f32_to_f16_avx(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = float_to_half(x[i]);
}

void hk_f16_to_f32_row(const uint16_t *x, float *y, int64_t n) {
#ifdef HK_X86
    if (hk_has_f16c_fma()) { f16_to_f32_avx(x, y, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = half_to_float(x[i]);
}

void hk_attention_head_f16(const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                           int64_t n_pos, int64_t head_dim, float scale, float softcap,
                           float *scores, float *out) {
#ifdef HK_X86
    if (hk_has_f16c_fma() && head_dim <= 512) {
        attention_avx(q, k, v, stride, n_pos, head_dim, scale, softcap, scores, out);
        return;
    }
#endif
    attention_scalar(q, k, v, stride, n_pos, head_dim, scale, softcap, scores, out);
}
