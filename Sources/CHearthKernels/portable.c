// Portable scalar kernels: the fallback on CPUs without a vector path.
#pragma STDC FP_CONTRACT OFF
#include <math.h>
#include "internal.h"

// ---- dequantize ----------------------------------------------------------------------------

static void deq_q4_0(const hk_q4_0 *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        const float d = hk_fp16_to_fp32(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((x[i].qs[j] & 0xF) - 8) * d;
            y[j + 16] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

static void deq_q4_1(const hk_q4_1 *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        const float d = hk_fp16_to_fp32(x[i].d), m = hk_fp16_to_fp32(x[i].m);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(x[i].qs[j] & 0xF) * d + m;
            y[j + 16] = (float)(x[i].qs[j] >> 4) * d + m;
        }
    }
}

static void deq_q5_0(const hk_q5_0 *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        const float d = hk_fp16_to_fp32(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const int h0 = (qh >> j) & 1, h1 = (qh >> (j + 16)) & 1;
            y[j] = (float)(((x[i].qs[j] & 0xF) | (h0 << 4)) - 16) * d;
            y[j + 16] = (float)(((x[i].qs[j] >> 4) | (h1 << 4)) - 16) * d;
        }
    }
}

static void deq_q5_1(const hk_q5_1 *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        const float d = hk_fp16_to_fp32(x[i].d), m = hk_fp16_to_fp32(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const int h0 = (qh >> j) & 1, h1 = (qh >> (j + 16)) & 1;
            y[j] = (float)((x[i].qs[j] & 0xF) | (h0 << 4)) * d + m;
            y[j + 16] = (float)((x[i].qs[j] >> 4) | (h1 << 4)) * d + m;
        }
    }
}

static void deq_q8_0(const hk_q8_0 *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        const float d = hk_fp16_to_fp32(x[i].d);
        for (int j = 0; j < 32; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

static void deq_q4_K(const hk_q4_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hk_fp16_to_fp32(x[i].d), dmin = hk_fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int j = 0; j < 4; j++, q += 32) {
            uint8_t sc, m;
            hk_scale_min_k4(2 * j, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            hk_scale_min_k4(2 * j + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

static void deq_q5_K(const hk_q5_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hk_fp16_to_fp32(x[i].d), dmin = hk_fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int j = 0; j < 4; j++, q += 32) {
            uint8_t sc, m;
            hk_scale_min_k4(2 * j, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            hk_scale_min_k4(2 * j + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                const int h = (x[i].qh[l] >> (2 * j)) & 1;
                *y++ = d1 * (float)((q[l] & 0xF) | (h << 4)) - m1;
            }
            for (int l = 0; l < 32; l++) {
                const int h = (x[i].qh[l] >> (2 * j + 1)) & 1;
                *y++ = d2 * (float)((q[l] >> 4) | (h << 4)) - m2;
            }
        }
    }
}

static void deq_q6_K(const hk_q6_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hk_fp16_to_fp32(x[i].d);
        for (int half = 0; half < 2; half++, y += 128) {
            const uint8_t *ql = x[i].ql + 64 * half, *qh = x[i].qh + 32 * half;
            const int8_t *sc = x[i].scales + 8 * half;
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

static void deq_q8_K(const hk_q8_K *x, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < QK_K; j++) *y++ = x[i].d * (float)x[i].qs[j];
}

int hk_portable_dequantize(uint32_t type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case HK_F32: memcpy(dst, src, (size_t)n * 4); return 0;
    case HK_F16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = hk_fp16_to_fp32(s[i]);
        return 0;
    }
    case HK_BF16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = hk_bf16_to_fp32(s[i]);
        return 0;
    }
    case HK_Q4_0: deq_q4_0(src, dst, n / QK); return 0;
    case HK_Q4_1: deq_q4_1(src, dst, n / QK); return 0;
    case HK_Q5_0: deq_q5_0(src, dst, n / QK); return 0;
    case HK_Q5_1: deq_q5_1(src, dst, n / QK); return 0;
    case HK_Q8_0: deq_q8_0(src, dst, n / QK); return 0;
    case HK_Q4_K: deq_q4_K(src, dst, n / QK_K); return 0;
    case HK_Q5_K: deq_q5_K(src, dst, n / QK_K); return 0;
    case HK_Q6_K: deq_q6_K(src, dst, n / QK_K); return 0;
    case HK_Q8_K: deq_q8_K(src, dst, n / QK_K); return 0;
    default: return -1;
    }
}

// ---- quantize activations --------------------------------------------------------------------
// Q8_0 and Q8_1 follow llama.cpp's x86 quantizer (multiplier 127/amax, ties to even), which is
// what it runs on the machines its outputs are compared on; Q8_K follows quantize_row_q8_K_ref.

static void quant_q8_0(const float *x, hk_q8_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK) {
        float amax = 0;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
        y[i].d = hk_fp32_to_fp16(d);
        for (int j = 0; j < QK; j++) y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
    }
}

static void quant_q8_1(const float *x, hk_q8_1 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK) {
        float amax = 0;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK; j++) {
            y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].d = hk_fp32_to_fp16(d);
        y[i].s = hk_fp32_to_fp16((float)sum * d);
    }
}

// Round half to even, as GGML's nearest_int does.
static inline int nearest_even(float v) { return (int)nearbyintf(v); }

static void quant_q8_K(const float *x, hk_q8_K *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        memset(y[i].qs, 0, sizeof y[i].qs);
        memset(y[i].bsums, 0, sizeof y[i].bsums);
        y[i].d = 0;
        if (amax == 0) continue;
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = nearest_even(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

int hk_portable_quantize(uint32_t type, const float *x, void *dst, int64_t n) {
    switch (type) {
    case HK_F32: memcpy(dst, x, (size_t)n * 4); return 0;
    case HK_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = hk_fp32_to_fp16(x[i]);
        return 0;
    case HK_Q8_0: quant_q8_0(x, dst, n / QK); return 0;
    case HK_Q8_1: quant_q8_1(x, dst, n / QK); return 0;
    case HK_Q8_K: quant_q8_K(x, dst, n / QK_K); return 0;
    default: return -1;
    }
}

// ---- dot products --------------------------------------------------------------------------

static float dot_q4_0(const void *w, const void *a, int64_t n) {
    const hk_q4_0 *x = w;
    const hk_q8_0 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        sum += (float)s * (hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d));
    }
    return sum;
}

// Q4_0 in the order of llama.cpp's repacked kernels (avx2_q4_0x8.c): one fused multiply-add
// per block.
static float dot_q4_0x8(const void *w, const void *a, int64_t n) {
    const hk_q4_0 *x = w;
    const hk_q8_0 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        sum = fmaf((float)s, hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d), sum);
    }
    return sum;
}

static float dot_q4_1(const void *w, const void *a, int64_t n) {
    const hk_q4_1 *x = w;
    const hk_q8_1 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        sum += (float)s * (hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d));
        sum += hk_fp16_to_fp32(x[i].m) * hk_fp16_to_fp32(y[i].s);
    }
    return sum;
}

static float dot_q5_0(const void *w, const void *a, int64_t n) {
    const hk_q5_0 *x = w;
    const hk_q8_0 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        int s = 0;
        for (int j = 0; j < 16; j++) {
            const int v0 = ((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - 16;
            const int v1 = ((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
            s += v0 * y[i].qs[j] + v1 * y[i].qs[j + 16];
        }
        sum += (float)s * (hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d));
    }
    return sum;
}

static float dot_q5_1(const void *w, const void *a, int64_t n) {
    const hk_q5_1 *x = w;
    const hk_q8_1 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        int s = 0;
        for (int j = 0; j < 16; j++) {
            const int v0 = (x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            const int v1 = (x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            s += v0 * y[i].qs[j] + v1 * y[i].qs[j + 16];
        }
        sum += (float)s * (hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d));
        sum += hk_fp16_to_fp32(x[i].m) * hk_fp16_to_fp32(y[i].s);
    }
    return sum;
}

static float dot_q8_0(const void *w, const void *a, int64_t n) {
    const hk_q8_0 *x = w;
    const hk_q8_0 *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        int s = 0;
        for (int j = 0; j < 32; j++) s += x[i].qs[j] * y[i].qs[j];
        sum += (float)s * (hk_fp16_to_fp32(x[i].d) * hk_fp16_to_fp32(y[i].d));
    }
    return sum;
}

static float dot_q4_K(const void *w, const void *a, int64_t n) {
    const hk_q4_K *x = w;
    const hk_q8_K *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sumi = 0, summ = 0;
        const uint8_t *q = x[i].qs;
        const int8_t *v = y[i].qs;
        for (int j = 0; j < 4; j++, q += 32, v += 64) {
            uint8_t sc0, m0, sc1, m1;
            hk_scale_min_k4(2 * j, x[i].scales, &sc0, &m0);
            hk_scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            int s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 0xF) * v[l];
                s1 += (q[l] >> 4) * v[l + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
                    m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
        }
        sum += y[i].d * (hk_fp16_to_fp32(x[i].d) * (float)sumi - hk_fp16_to_fp32(x[i].dmin) * (float)summ);
    }
    return sum;
}

static float dot_q5_K(const void *w, const void *a, int64_t n) {
    const hk_q5_K *x = w;
    const hk_q8_K *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sumi = 0, summ = 0;
        const uint8_t *q = x[i].qs;
        const int8_t *v = y[i].qs;
        for (int j = 0; j < 4; j++, q += 32, v += 64) {
            uint8_t sc0, m0, sc1, m1;
            hk_scale_min_k4(2 * j, x[i].scales, &sc0, &m0);
            hk_scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            int s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                const int h0 = (x[i].qh[l] >> (2 * j)) & 1, h1 = (x[i].qh[l] >> (2 * j + 1)) & 1;
                s0 += ((q[l] & 0xF) | (h0 << 4)) * v[l];
                s1 += ((q[l] >> 4) | (h1 << 4)) * v[l + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
                    m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
        }
        sum += y[i].d * (hk_fp16_to_fp32(x[i].d) * (float)sumi - hk_fp16_to_fp32(x[i].dmin) * (float)summ);
    }
    return sum;
}

static float dot_q6_K(const void *w, const void *a, int64_t n) {
    const hk_q6_K *x = w;
    const hk_q8_K *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sumi = 0;
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = x[i].ql + 64 * half, *qh = x[i].qh + 32 * half;
            const int8_t *sc = x[i].scales + 8 * half, *v = y[i].qs + 128 * half;
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                sumi += sc[is] * q1 * v[l] + sc[is + 2] * q2 * v[l + 32] +
                        sc[is + 4] * q3 * v[l + 64] + sc[is + 6] * q4 * v[l + 96];
            }
        }
        sum += y[i].d * hk_fp16_to_fp32(x[i].d) * (float)sumi;
    }
    return sum;
}

static float dot_bf16(const void *w, const void *a, int64_t n) {
    const uint16_t *x = w;
    const float *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n; i++) sum += hk_bf16_to_fp32(x[i]) * y[i];
    return sum;
}

float hk_portable_dot_f32(const float *a, const float *b, int64_t n) {
    // Four partial sums let the compiler keep independent chains without reassociating.
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

void hk_portable_axpy_f32(float alpha, const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

static const hk_kernel k_f32 = {hk_portable_dot_f32w, NULL, hk_portable_matmul_f32w};
static const hk_kernel k_f16 = {hk_portable_dot_f16w, NULL, hk_portable_matmul_f16w};
static const hk_kernel k_bf16 = {dot_bf16, NULL, NULL};
static const hk_kernel k_q4_0 = {dot_q4_0, NULL, NULL};
static const hk_kernel k_q4_0x8 = {dot_q4_0x8, NULL, NULL};
static const hk_kernel k_q4_1 = {dot_q4_1, NULL, NULL};
static const hk_kernel k_q5_0 = {dot_q5_0, NULL, NULL};
static const hk_kernel k_q5_1 = {dot_q5_1, NULL, NULL};
static const hk_kernel k_q8_0 = {dot_q8_0, NULL, NULL};
static const hk_kernel k_q4_K = {dot_q4_K, NULL, NULL};
static const hk_kernel k_q5_K = {dot_q5_K, NULL, NULL};
static const hk_kernel k_q6_K = {dot_q6_K, NULL, NULL};

const hk_kernel *hk_portable_kernel(uint32_t type) {
    switch (type) {
    case HK_F32: return &k_f32;
    case HK_F16: return &k_f16;
    case HK_BF16: return &k_bf16;
    case HK_Q4_0: return &k_q4_0;
    case HK_Q4_0_X8: return &k_q4_0x8;
    case HK_Q4_1: return &k_q4_1;
    case HK_Q5_0: return &k_q5_0;
    case HK_Q5_1: return &k_q5_1;
    case HK_Q8_0: return &k_q8_0;
    case HK_Q4_K: case HK_Q4_K_PLAIN: return &k_q4_K;
    case HK_Q5_K: return &k_q5_K;
    case HK_Q6_K: return &k_q6_K;
    default: return NULL;
    }
}
