// Kernels of BERT-style encoders between the matrix products. The AVX2 and portable paths give
// the same bits: every sum runs in 8 lanes (lane l takes elements l, l + 8, ...), the lanes are
// reduced in one fixed order (hk_hsum's in layer norm, pairwise in attention scores), and
// elements past the last whole 8 are added after that, one by one, in both paths.
#include "hk_encoder.h"
#include "avx2.h"
#include "exp_approx.h"
#include "gelu.h"
#include "reduce.h"
#include <math.h>

#pragma STDC FP_CONTRACT OFF

static void gelu_portable(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hk_gelu_one(x[i]);
}

// ---- Sums in 8 lanes ------------------------------------------------------------------------

// Query-key product: 8 lanes reduced pairwise, then the leftovers.
static float score_lanes(const float *q, const float *k, int64_t n) {
    float lane[8] = {0};
    const int64_t whole = n - n % 8;
    for (int64_t i = 0; i < whole; i++) lane[i & 7] = fmaf(q[i], k[i], lane[i & 7]);
    float s = hk_reduce8_pairs(lane);
    for (int64_t i = whole; i < n; i++) s = fmaf(q[i], k[i], s);
    return s;
}

// ---- Layer norm -----------------------------------------------------------------------------

static void layer_norm_portable(float *row, const float *residual, const float *weight, const float *bias,
                                int64_t n, float epsilon) {
    const int64_t whole = n - n % 8;
    if (residual) for (int64_t i = 0; i < n; i++) row[i] = row[i] + residual[i];
    float lane[8] = {0};
    for (int64_t i = 0; i < whole; i++) lane[i & 7] = lane[i & 7] + row[i];
    float sum = hk_reduce8(lane);
    for (int64_t i = whole; i < n; i++) sum = sum + row[i];
    const float mean = sum / (float)n;
    for (int l = 0; l < 8; l++) lane[l] = 0;
    for (int64_t i = 0; i < whole; i++) {
        const float d = row[i] - mean;
        lane[i & 7] = fmaf(d, d, lane[i & 7]);
    }
    float squares = hk_reduce8(lane);
    for (int64_t i = whole; i < n; i++) {
        const float d = row[i] - mean;
        squares = fmaf(d, d, squares);
    }
    const float inverse = 1.0f / sqrtf(squares / (float)n + epsilon);
    for (int64_t i = 0; i < n; i++) row[i] = fmaf((row[i] - mean) * inverse, weight[i], bias[i]);
}

// ---- Attention ------------------------------------------------------------------------------

// Scores to weights: e^(s - max) one by one, summed in token order, scaled by 1 / sum.
static void softmax_weights(float *scores, int64_t count) {
    float largest = -INFINITY;
    for (int64_t j = 0; j < count; j++) largest = fmaxf(largest, scores[j]);
    float sum = 0;
    for (int64_t j = 0; j < count; j++) {
        scores[j] = hk_exp_approx(scores[j] - largest);
        sum = sum + scores[j];
    }
    const float inverse = 1.0f / sum;
    for (int64_t j = 0; j < count; j++) scores[j] = scores[j] * inverse;
}

static void attention_portable(const float *q, const float *k, const float *v, int64_t stride, int64_t count,
                               int64_t d, float scale, float *scores, float *out, int64_t out_stride) {
    for (int64_t i = 0; i < count; i++) {
        for (int64_t j = 0; j < count; j++) scores[j] = score_lanes(q + i * stride, k + j * stride, d) * scale;
        softmax_weights(scores, count);
        float *o = out + i * out_stride;
        for (int64_t e = 0; e < d; e++) o[e] = 0;
        for (int64_t j = 0; j < count; j++) {
            const float *vj = v + j * stride;
            for (int64_t e = 0; e < d; e++) o[e] = fmaf(scores[j], vj[e], o[e]);
        }
    }
}

#if HK_HAVE_AVX2

static void HK_AVX2 gelu_avx2(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, hk_gelu8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) x[i] = hk_gelu_one(x[i]);
}

static void HK_AVX2 layer_norm_avx2(float *row, const float *residual, const float *weight, const float *bias,
                                    int64_t n, float epsilon) {
    const int64_t whole = n - n % 8;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        __m256 x = _mm256_loadu_ps(row + i);
        if (residual) {
            x = _mm256_add_ps(x, _mm256_loadu_ps(residual + i));
            _mm256_storeu_ps(row + i, x);
        }
        acc = _mm256_add_ps(acc, x);
    }
    if (residual) for (int64_t i = whole; i < n; i++) row[i] = row[i] + residual[i];
    float sum = hk_hsum(acc);
    for (int64_t i = whole; i < n; i++) sum = sum + row[i];
    const float mean = sum / (float)n;
    const __m256 m = _mm256_set1_ps(mean);
    acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(row + i), m);
        acc = _mm256_fmadd_ps(d, d, acc);
    }
    float squares = hk_hsum(acc);
    for (int64_t i = whole; i < n; i++) {
        const float d = row[i] - mean;
        squares = fmaf(d, d, squares);
    }
    const float inverse = 1.0f / sqrtf(squares / (float)n + epsilon);
    const __m256 inv = _mm256_set1_ps(inverse);
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 x = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(row + i), m), inv);
        _mm256_storeu_ps(row + i, _mm256_fmadd_ps(x, _mm256_loadu_ps(weight + i), _mm256_loadu_ps(bias + i)));
    }
    for (int64_t i = whole; i < n; i++) row[i] = fmaf((row[i] - mean) * inverse, weight[i], bias[i]);
}

// scores[j] = scale * q . k_j for 8 keys: eight accumulators reduced together by horizontal adds.
static void HK_AVX2 scores8(const float *q, const float *k, int64_t stride, int64_t d, float scale, float *scores) {
    const int64_t whole = d - d % 8;
    __m256 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 x = _mm256_loadu_ps(q + i);
        for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(x, _mm256_loadu_ps(k + j * stride + i), acc[j]);
    }
    // hadd(hadd(a, b), hadd(c, d)) holds ((l0 + l1) + (l2 + l3)) of a, b, c, d in its low half and
    // ((l4 + l5) + (l6 + l7)) in its high half.
    const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
    __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
    if (whole < d) {
        float s[8];
        _mm256_storeu_ps(s, sum);
        for (int j = 0; j < 8; j++)
            for (int64_t i = whole; i < d; i++) s[j] = fmaf(q[i], k[j * stride + i], s[j]);
        sum = _mm256_loadu_ps(s);
    }
    _mm256_storeu_ps(scores, _mm256_mul_ps(sum, _mm256_set1_ps(scale)));
}

// softmax_weights with the exponentials 8 at a time; hk_exp_approx8 gives hk_exp_approx's bits.
static void HK_AVX2 softmax_weights_avx2(float *scores, int64_t count) {
    float largest = -INFINITY;
    for (int64_t j = 0; j < count; j++) largest = fmaxf(largest, scores[j]);
    const __m256 m = _mm256_set1_ps(largest);
    int64_t j = 0;
    for (; j + 8 <= count; j += 8) _mm256_storeu_ps(scores + j, hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), m)));
    for (; j < count; j++) scores[j] = hk_exp_approx(scores[j] - largest);
    float sum = 0;
    for (j = 0; j < count; j++) sum = sum + scores[j];
    const float inverse = 1.0f / sum;
    for (j = 0; j < count; j++) scores[j] = scores[j] * inverse;
}

static void HK_AVX2 attention_avx2(const float *q, const float *k, const float *v, int64_t stride, int64_t count,
                                   int64_t d, float scale, float *scores, float *out, int64_t out_stride) {
    const int64_t whole = d - d % 8;
    for (int64_t i = 0; i < count; i++) {
        const float *qi = q + i * stride;
        int64_t j = 0;
        for (; j + 8 <= count; j += 8) scores8(qi, k + j * stride, stride, d, scale, scores + j);
        for (; j < count; j++) {
            float lane[8] = {0};
            const int64_t whole = d - d % 8;
            __m256 acc = _mm256_setzero_ps();
            for (int64_t e = 0; e < whole; e += 8)
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(qi + e), _mm256_loadu_ps(k + j * stride + e), acc);
            _mm256_storeu_ps(lane, acc);
            float s = hk_reduce8_pairs(lane);
            for (int64_t e = whole; e < d; e++) s = fmaf(qi[e], k[j * stride + e], s);
            scores[j] = s * scale;
        }
        softmax_weights_avx2(scores, count);
        float *o = out + i * out_stride;
        // Four groups of 8 output dimensions at a time, so that each weight is broadcast once.
        int64_t e = 0;
        for (; e + 32 <= whole; e += 32) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t j = 0; j < count; j++) {
                const __m256 w = _mm256_set1_ps(scores[j]);
                const float *vj = v + j * stride + e;
                a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(vj), a0);
                a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(vj + 8), a1);
                a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(vj + 16), a2);
                a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(vj + 24), a3);
            }
            _mm256_storeu_ps(o + e, a0);
            _mm256_storeu_ps(o + e + 8, a1);
            _mm256_storeu_ps(o + e + 16, a2);
            _mm256_storeu_ps(o + e + 24, a3);
        }
        for (; e < whole; e += 8) {
            __m256 a = _mm256_setzero_ps();
            for (int64_t j = 0; j < count; j++) a = _mm256_fmadd_ps(_mm256_set1_ps(scores[j]), _mm256_loadu_ps(v + j * stride + e), a);
            _mm256_storeu_ps(o + e, a);
        }
        for (; e < d; e++) {
            float a = 0;
            for (int64_t j = 0; j < count; j++) a = fmaf(scores[j], v[j * stride + e], a);
            o[e] = a;
        }
    }
}

#endif

void hk_gelu_erf_f32(int isa, float *x, int64_t n) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { gelu_avx2(x, n); return; }
#endif
    gelu_portable(x, n);
}

void hk_layer_norm_f32(int isa, float *row, const float *residual, const float *weight, const float *bias,
                       int64_t n, float epsilon) {
    if (n <= 0) return;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { layer_norm_avx2(row, residual, weight, bias, n, epsilon); return; }
#endif
    layer_norm_portable(row, residual, weight, bias, n, epsilon);
}

void hk_encoder_attention_f32(int isa, const float *q, const float *k, const float *v, int64_t stride,
                              int64_t count, int64_t head_dim, float scale, float *scores, float *out,
                              int64_t out_stride) {
    if (count <= 0 || head_dim <= 0) return;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { attention_avx2(q, k, v, stride, count, head_dim, scale, scores, out, out_stride); return; }
#endif
    attention_portable(q, k, v, stride, count, head_dim, scale, scores, out, out_stride);
}
