// Whisper's decoder over the encoder's output: cross-attention of one query head whose keys and
// values are stored transposed (dimension-major, so every product runs along the 1,500 audio
// positions), and the log-sum-exp of a logit row. Both paths give the same bits: products
// accumulate per position in the order of the dimensions, sums over positions in 8 lanes
// (lane l takes positions l, l + 8, ...) reduced in a fixed order, then the positions past the
// last whole 8 one by one, and exponentials are hk_exp_approx's.
#include "CHearthKernels.h"
#include "hk_activations.h"
#include "exp_approx.h"
#include "avx2.h"
#include "reduce.h"
#include <math.h>

#pragma STDC FP_CONTRACT OFF

// Σ x[j] · y[j] in 8 lanes, then the tail.
static float dot_lanes_portable(const float *x, const float *y, int64_t n) {
    float lanes[8] = {0};
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8)
        for (int l = 0; l < 8; l++) lanes[l] = fmaf(x[j + l], y[j + l], lanes[l]);
    float sum = hk_reduce8(lanes);
    for (int64_t j = whole; j < n; j++) sum = fmaf(x[j], y[j], sum);
    return sum;
}

// x[j] = exp(x[j] - shift) for every j; returns their sum in 8 lanes, then the tail.
static float exp_sum_portable(float *x, int64_t n, float shift) {
    float lanes[8] = {0};
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8)
        for (int l = 0; l < 8; l++) {
            x[j + l] = hk_exp_approx(x[j + l] - shift);
            lanes[l] += x[j + l];
        }
    float sum = hk_reduce8(lanes);
    for (int64_t j = whole; j < n; j++) {
        x[j] = hk_exp_approx(x[j] - shift);
        sum += x[j];
    }
    return sum;
}

static void attend_portable(const float *q, const float *kt, const float *vt, int64_t count, int64_t head_dim, float scale,
                            float *scores, float *out) {
    for (int64_t j = 0; j < count; j++) scores[j] = 0;
    for (int64_t d = 0; d < head_dim; d++) {
        const float *k = kt + d * count;
        for (int64_t j = 0; j < count; j++) scores[j] = fmaf(q[d], k[j], scores[j]);
    }
    float largest = -INFINITY;
    for (int64_t j = 0; j < count; j++) {
        scores[j] *= scale;
        if (scores[j] > largest) largest = scores[j];
    }
    const float sum = exp_sum_portable(scores, count, largest);
    for (int64_t d = 0; d < head_dim; d++) out[d] = dot_lanes_portable(scores, vt + d * count, count) / sum;
}

#if HK_HAVE_AVX2
static HK_AVX2 float dot_lanes_avx2(const float *x, const float *y, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), acc);
    float sum = hk_hsum(acc);
    for (int64_t j = whole; j < n; j++) sum = hk_fma(x[j], y[j], sum);
    return sum;
}

// Four dot products of x with y0..y3 at once: four independent chains of fused multiply-adds
// (one would wait on its own latency), each summed in dot_lanes_avx2's order.
static HK_AVX2 void dot_lanes4_avx2(const float *x, const float *y, int64_t stride, int64_t n, float divisor, float *out) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    const float *y0 = y, *y1 = y + stride, *y2 = y + 2 * stride, *y3 = y + 3 * stride;
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8) {
        const __m256 xv = _mm256_loadu_ps(x + j);
        a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(y0 + j), a0);
        a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(y1 + j), a1);
        a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(y2 + j), a2);
        a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(y3 + j), a3);
    }
    float s0 = hk_hsum(a0), s1 = hk_hsum(a1), s2 = hk_hsum(a2), s3 = hk_hsum(a3);
    for (int64_t j = whole; j < n; j++) {
        s0 = hk_fma(x[j], y0[j], s0);
        s1 = hk_fma(x[j], y1[j], s1);
        s2 = hk_fma(x[j], y2[j], s2);
        s3 = hk_fma(x[j], y3[j], s3);
    }
    out[0] = s0 / divisor;
    out[1] = s1 / divisor;
    out[2] = s2 / divisor;
    out[3] = s3 / divisor;
}

static HK_AVX2 float exp_sum_avx2(float *x, int64_t n, float shift) {
    __m256 acc = _mm256_setzero_ps();
    const __m256 s = _mm256_set1_ps(shift);
    const int64_t whole = n - n % 8;
    for (int64_t j = 0; j < whole; j += 8) {
        const __m256 e = hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(x + j), s));
        _mm256_storeu_ps(x + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hk_hsum(acc);
    for (int64_t j = whole; j < n; j++) {
        x[j] = hk_exp_approx(x[j] - shift);
        sum += x[j];
    }
    return sum;
}

static HK_AVX2 void attend_avx2(const float *q, const float *kt, const float *vt, int64_t count, int64_t head_dim, float scale,
                                float *scores, float *out) {
    const int64_t whole = count - count % 8;
    for (int64_t j = 0; j < count; j++) scores[j] = 0;
    // Four dimensions per pass over the scores: a quarter of the loads and stores.
    int64_t d = 0;
    for (; d + 4 <= head_dim; d += 4) {
        const __m256 q0 = _mm256_set1_ps(q[d]), q1 = _mm256_set1_ps(q[d + 1]);
        const __m256 q2 = _mm256_set1_ps(q[d + 2]), q3 = _mm256_set1_ps(q[d + 3]);
        const float *k0 = kt + d * count, *k1 = k0 + count, *k2 = k1 + count, *k3 = k2 + count;
        for (int64_t j = 0; j < whole; j += 8) {
            __m256 s = _mm256_loadu_ps(scores + j);
            s = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k0 + j), s);
            s = _mm256_fmadd_ps(q1, _mm256_loadu_ps(k1 + j), s);
            s = _mm256_fmadd_ps(q2, _mm256_loadu_ps(k2 + j), s);
            s = _mm256_fmadd_ps(q3, _mm256_loadu_ps(k3 + j), s);
            _mm256_storeu_ps(scores + j, s);
        }
        for (int64_t j = whole; j < count; j++) {
            float s = scores[j];
            s = hk_fma(q[d], k0[j], s);
            s = hk_fma(q[d + 1], k1[j], s);
            s = hk_fma(q[d + 2], k2[j], s);
            s = hk_fma(q[d + 3], k3[j], s);
            scores[j] = s;
        }
    }
    for (; d < head_dim; d++) {
        const __m256 qd = _mm256_set1_ps(q[d]);
        const float *k = kt + d * count;
        for (int64_t j = 0; j < whole; j += 8)
            _mm256_storeu_ps(scores + j, _mm256_fmadd_ps(qd, _mm256_loadu_ps(k + j), _mm256_loadu_ps(scores + j)));
        for (int64_t j = whole; j < count; j++) scores[j] = hk_fma(q[d], k[j], scores[j]);
    }
    float largest = -INFINITY;
    for (int64_t j = 0; j < count; j++) {
        scores[j] *= scale;
        if (scores[j] > largest) largest = scores[j];
    }
    const float sum = exp_sum_avx2(scores, count, largest);
    int64_t e = 0;
    for (; e + 4 <= head_dim; e += 4) dot_lanes4_avx2(scores, vt + e * count, count, count, sum, out + e);
    for (; e < head_dim; e++) out[e] = dot_lanes_avx2(scores, vt + e * count, count) / sum;
}
#endif

void hk_attend_transposed_f32(int isa, const float *q, const float *kt, const float *vt, int64_t count, int64_t head_dim,
                              float scale, float *scores, float *out) {
    if (count <= 0) {
        for (int64_t d = 0; d < head_dim; d++) out[d] = 0;
        return;
    }
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { attend_avx2(q, kt, vt, count, head_dim, scale, scores, out); return; }
#endif
    attend_portable(q, kt, vt, count, head_dim, scale, scores, out);
}

#if HK_HAVE_AVX2
static HK_AVX2 void exp_lanes_avx2(const float *x, int64_t whole, float shift, float *lanes) {
    __m256 acc = _mm256_setzero_ps();
    const __m256 s = _mm256_set1_ps(shift);
    for (int64_t j = 0; j < whole; j += 8) acc = _mm256_add_ps(acc, hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(x + j), s)));
    _mm256_storeu_ps(lanes, acc);
}
#endif

float hk_logsumexp_f32(int isa, const float *x, int64_t n) {
    float largest = -INFINITY;
    for (int64_t j = 0; j < n; j++) if (x[j] > largest) largest = x[j];
    if (!(largest > -INFINITY)) return -INFINITY;
    float lanes[8] = {0};
    const int64_t whole = n - n % 8;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) exp_lanes_avx2(x, whole, largest, lanes); else
#endif
    for (int64_t j = 0; j < whole; j += 8)
        for (int l = 0; l < 8; l++) lanes[l] += hk_exp_approx(x[j + l] - largest);
    float sum = hk_reduce8(lanes);
    for (int64_t j = whole; j < n; j++) sum += hk_exp_approx(x[j] - largest);
    return largest + logf(sum);
}
