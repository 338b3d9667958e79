// AVX2 float kernels (F32/F16/BF16 dots, axpy), dequantization, activation quantization, and
// the table of AVX2 kernels per weight type.
//
// Dequantization does the same float operations in the same order as the portable code
// (separate multiply and add, never fused), so both give identical floats.
#include <math.h>
#include "avx2.h"
#if HK_HAVE_AVX2

HK_INLINE HK_AVX2 __m256 load_f16x8(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

HK_INLINE HK_AVX2 __m256 load_bf16x8(const uint16_t *p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

// Four accumulators hide the FMA latency; `load` turns 8 weights into floats.
#define HK_FLOAT_DOT(x, y, n, load, scalar)                                                      \
    do {                                                                                         \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                               \
        int64_t i = 0;                                                                           \
        for (; i + 32 <= n; i += 32) {                                                           \
            a0 = _mm256_fmadd_ps(load(x + i), _mm256_loadu_ps(y + i), a0);                       \
            a1 = _mm256_fmadd_ps(load(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);               \
            a2 = _mm256_fmadd_ps(load(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);             \
            a3 = _mm256_fmadd_ps(load(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);             \
        }                                                                                        \
        for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load(x + i), _mm256_loadu_ps(y + i), a0); \
        float s = hk_hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));          \
        for (; i < n; i++) s += scalar(x[i]) * y[i];                                             \
        return s;                                                                                \
    } while (0)

#define HK_IDENTITY(v) (v)

float HK_AVX2 hk_avx2_dot_f32(const float *x, const float *y, int64_t n) {
    HK_FLOAT_DOT(x, y, n, _mm256_loadu_ps, HK_IDENTITY);
}

float HK_AVX2 hk_avx2_dot_bf16(const void *w, const void *a, int64_t n) {
    const uint16_t *x = w;
    const float *y = a;
    HK_FLOAT_DOT(x, y, n, load_bf16x8, hk_bf16_to_fp32);
}

void HK_AVX2 hk_avx2_axpy_f32(float alpha, const float *x, float *y, int64_t n) {
    const __m256 va = _mm256_set1_ps(alpha);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
        _mm256_storeu_ps(y + i + 8, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(alpha, x[i], y[i]);
}

// ---- dequantize ----------------------------------------------------------------------------

// 32 int8 lanes to floats: y[i] = q[i] * d (+ m when add_min).
HK_INLINE HK_AVX2 void store_scaled(__m256i q, float d, float m, int add_min, float *y) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m256i parts[4] = {_mm256_cvtepi8_epi32(lo), _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)),
                              _mm256_cvtepi8_epi32(hi), _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))};
    for (int k = 0; k < 4; k++) {
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(parts[k]), vd);
        if (add_min) v = _mm256_add_ps(v, vm);
        _mm256_storeu_ps(y + 8 * k, v);
    }
}

// Same, with a subtracted offset: y[i] = q[i] * d - m.
HK_INLINE HK_AVX2 void store_scaled_sub(__m256i q, float d, float m, float *y) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m256i parts[4] = {_mm256_cvtepi8_epi32(lo), _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)),
                              _mm256_cvtepi8_epi32(hi), _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))};
    for (int k = 0; k < 4; k++)
        _mm256_storeu_ps(y + 8 * k, _mm256_sub_ps(_mm256_mul_ps(vd, _mm256_cvtepi32_ps(parts[k])), vm));
}

static HK_AVX2 void deq_q32(uint32_t type, const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK) {
        switch (type) {
        case HK_Q4_0: {
            const uint8_t *b = src + i * sizeof(hk_q4_0);
            store_scaled(_mm256_sub_epi8(hk_nibbles(b + 2), _mm256_set1_epi8(8)), hk_half(b), 0, 0, y);
            break;
        }
        case HK_Q4_1: {
            const uint8_t *b = src + i * sizeof(hk_q4_1);
            store_scaled(hk_nibbles(b + 4), hk_half(b), hk_half(b + 2), 1, y);
            break;
        }
        case HK_Q5_0: {
            const uint8_t *b = src + i * sizeof(hk_q5_0);
            const __m256i q = _mm256_or_si256(hk_nibbles(b + 6),
                                              _mm256_andnot_si256(hk_bit_mask32(b + 2), _mm256_set1_epi8((char)0xF0)));
            store_scaled(q, hk_half(b), 0, 0, y);
            break;
        }
        case HK_Q5_1: {
            const uint8_t *b = src + i * sizeof(hk_q5_1);
            const __m256i q = _mm256_or_si256(hk_nibbles(b + 8),
                                              _mm256_and_si256(hk_bit_mask32(b + 4), _mm256_set1_epi8(0x10)));
            store_scaled(q, hk_half(b), hk_half(b + 2), 1, y);
            break;
        }
        default: {
            const uint8_t *b = src + i * sizeof(hk_q8_0);
            store_scaled(hk_load256(b + 2), hk_half(b), 0, 0, y);
            break;
        }
        }
    }
}

static HK_AVX2 void deq_q4_K(const hk_q4_K *x, float *y, int64_t nb, int five) {
    const hk_q5_K *x5 = (const hk_q5_K *)x;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *scales = five ? x5[i].scales : x[i].scales;
        const uint8_t *qs = five ? x5[i].qs : x[i].qs;
        const float d = hk_half(five ? &x5[i].d : &x[i].d), dmin = hk_half(five ? &x5[i].dmin : &x[i].dmin);
        __m256i h = five ? hk_load256(x5[i].qh) : _mm256_setzero_si256();
        for (int j = 0; j < 4; j++, y += 64) {
            uint8_t sc0, m0, sc1, m1;
            hk_scale_min_k4(2 * j, scales, &sc0, &m0);
            hk_scale_min_k4(2 * j + 1, scales, &sc1, &m1);
            const __m256i q = hk_load256(qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (five) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(h, 4), bit4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(h, 3), bit4));
                h = _mm256_srli_epi16(h, 2);
            }
            store_scaled_sub(lo, d * (float)sc0, dmin * (float)m0, y);
            store_scaled_sub(hi, d * (float)sc1, dmin * (float)m1, y + 32);
        }
    }
}

static HK_AVX2 void deq_q6_K(const hk_q6_K *x, float *y, int64_t nb) {
    const __m256i off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nb; i++) {
        const float d = hk_half(&x[i].d);
        for (int half = 0; half < 2; half++, y += 128) {
            const uint8_t *ql = x[i].ql + 64 * half, *qh = x[i].qh + 32 * half;
            const int8_t *sc = x[i].scales + 8 * half;
            __m256i q[4];
            hk_q6k_unpack(ql, qh, q);
            for (int k = 0; k < 4; k++) {
                const __m256i v = _mm256_sub_epi8(q[k], off);
                const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
                const __m256 d0 = _mm256_set1_ps(d * (float)sc[2 * k]), d1 = _mm256_set1_ps(d * (float)sc[2 * k + 1]);
                float *o = y + 32 * k;
                _mm256_storeu_ps(o, _mm256_mul_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
                _mm256_storeu_ps(o + 8, _mm256_mul_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
                _mm256_storeu_ps(o + 16, _mm256_mul_ps(d1, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
                _mm256_storeu_ps(o + 24, _mm256_mul_ps(d1, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
            }
        }
    }
}

// 16-bit floats to floats, 8 at a time by `load`, the rest by `scalar`; returns 0.
#define HK_WIDEN(src, dst, n, load, scalar)                                                      \
    do {                                                                                         \
        const uint16_t *s = (src);                                                               \
        int64_t i = 0;                                                                           \
        for (; i + 8 <= (n); i += 8) _mm256_storeu_ps((dst) + i, load(s + i));                   \
        for (; i < (n); i++) (dst)[i] = scalar(s[i]);                                            \
        return 0;                                                                                \
    } while (0)

int HK_AVX2 hk_avx2_dequantize(uint32_t type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case HK_F16: HK_WIDEN(src, dst, n, load_f16x8, _cvtsh_ss);
    case HK_BF16: HK_WIDEN(src, dst, n, load_bf16x8, hk_bf16_to_fp32);
    case HK_Q4_0: case HK_Q4_1: case HK_Q5_0: case HK_Q5_1: case HK_Q8_0:
        deq_q32(type, src, dst, n / QK);
        return 0;
    case HK_Q4_K: deq_q4_K(src, dst, n / QK_K, 0); return 0;
    case HK_Q5_K: deq_q4_K(src, dst, n / QK_K, 1); return 0;
    case HK_Q6_K: deq_q6_K(src, dst, n / QK_K); return 0;
    default: return hk_portable_dequantize(type, src, dst, n);
    }
}

// ---- quantize activations ------------------------------------------------------------------

// Quantizes one 32-float block to int8 at qs; returns d and the sum of the quants.
HK_INLINE HK_AVX2 float quant_block32(const float *x, int8_t *qs, int *sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    for (int k = 0; k < 4; k++) v[k] = _mm256_loadu_ps(x + 8 * k);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    // llama.cpp's x86 quantizer: multiplier 127/amax, ties to even.
    const float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; k++) {
        q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    *sum = _mm_cvtsi128_si32(s4);
    // Packing interleaves the 128-bit lanes; the permute puts the 32 bytes back in order.
    const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return d;
}

// Q8_K: scale -127 / (the element of largest magnitude, first one on ties), round half to even.
static HK_AVX2 void quant_q8_K(const float *x, hk_q8_K *y, int64_t nb) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        memset(y[i].qs, 0, sizeof y[i].qs);
        memset(y[i].bsums, 0, sizeof y[i].bsums);
        y[i].d = 0;
        if (amax == 0) continue;
        int j = 0;
        while (j < QK_K - 1 && fabsf(x[j]) != amax) j++;  // bounded: NaN never compares equal
        const float iscale = -127.0f / x[j];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int t = 0; t < 4; t++) {
                const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * t), vs);
                q[t] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), top);
            }
            for (int g = 0; g < 2; g++) {
                const __m256i s = _mm256_add_epi32(q[2 * g], q[2 * g + 1]);
                __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
                y[i].bsums[k / 16 + g] = (int16_t)_mm_cvtsi128_si32(s4);
            }
            const __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + k),
                                _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
        }
        y[i].d = 1.0f / iscale;
    }
}

int HK_AVX2 hk_avx2_quantize(uint32_t type, const float *x, void *dst, int64_t n) {
    switch (type) {
    case HK_Q8_0:
        for (int64_t i = 0; i < n / QK; i++) {
            hk_q8_0 *y = (hk_q8_0 *)dst + i;
            int sum;
            y->d = _cvtss_sh(quant_block32(x + i * QK, y->qs, &sum), 0);
        }
        return 0;
    case HK_Q8_1:
        // The scale and the block's sum times it, for the offset of Q4_1 and Q5_1 weights.
        for (int64_t i = 0; i < n / QK; i++) {
            hk_q8_1 *y = (hk_q8_1 *)dst + i;
            int sum;
            const float d = quant_block32(x + i * QK, y->qs, &sum);
            y->d = _cvtss_sh(d, 0);
            y->s = _cvtss_sh((float)sum * d, 0);
        }
        return 0;
    case HK_Q8_K:
        quant_q8_K(x, dst, n / QK_K);
        return 0;
    default: return hk_portable_quantize(type, x, dst, n);
    }
}

// ---- kernel table --------------------------------------------------------------------------

static const hk_kernel k_f32 = {hk_avx2_dot_f32w_ordered, NULL, hk_avx2_matmul_f32w};
static const hk_kernel k_f16 = {hk_avx2_dot_f16w_ordered, NULL, hk_avx2_matmul_f16w};
static const hk_kernel k_bf16 = {hk_avx2_dot_bf16, NULL, NULL};
static const hk_kernel k_q4_0 = {hk_avx2_dot_q4_0, hk_avx2_matvec_q4_0, hk_avx2_matmul_q4_0};
static const hk_kernel k_q4_1 = {hk_avx2_dot_q4_1, hk_avx2_matvec_q4_1, hk_avx2_matmul_q4_1};
static const hk_kernel k_q5_0 = {hk_avx2_dot_q5_0, hk_avx2_matvec_q5_0, hk_avx2_matmul_q5_0};
static const hk_kernel k_q5_1 = {hk_avx2_dot_q5_1, hk_avx2_matvec_q5_1, hk_avx2_matmul_q5_1};
static const hk_kernel k_q8_0 = {hk_avx2_dot_q8_0, hk_avx2_matvec_q8_0, hk_avx2_matmul_q8_0};
static const hk_kernel k_q4_0x8 = {hk_avx2_dot_q4_0x8, hk_avx2_matvec_q4_0x8, hk_avx2_matmul_q4_0x8};
static const hk_kernel k_q4_0x8p = {NULL, hk_avx2_matvec_q4_0x8p, hk_avx2_matmul_q4_0x8p};
static const hk_kernel k_q8_0x16p = {NULL, hk_avx2_matvec_q8_0x16p, hk_avx2_matmul_q8_0x16p};
static const hk_kernel k_q4_K = {hk_avx2_dot_q4_K, NULL, hk_avx2_matmul_q4_K};
static const hk_kernel k_q4_K_plain = {hk_avx2_dot_q4_K_plain, NULL, hk_avx2_matmul_q4_K_plain};
static const hk_kernel k_q4_Kx16p = {NULL, hk_avx2_matvec_q4_Kx16p, hk_avx2_matmul_q4_Kx16p};
static const hk_kernel k_q6_Kx16p = {NULL, hk_avx2_matvec_q6_Kx16p, hk_avx2_matmul_q6_Kx16p};
static const hk_kernel k_q5_K = {hk_avx2_dot_q5_K, NULL, hk_avx2_matmul_q5_K};
static const hk_kernel k_q6_K = {hk_avx2_dot_q6_K, NULL, hk_avx2_matmul_q6_K};

const hk_kernel *hk_avx2_kernel(uint32_t type) {
    switch (type) {
    case HK_F32: return &k_f32;
    case HK_F16: return &k_f16;
    case HK_BF16: return &k_bf16;
    case HK_Q4_0: return &k_q4_0;
    case HK_Q4_0_X8: return &k_q4_0x8;
    case HK_Q4_0_X8P: return &k_q4_0x8p;
    // Its kernels need AVX-512 VNNI; without it (turned off) the rows go one at a time.
    case HK_Q8_0_X16P: return hk_vnni_kind() == HK_AVX512_VNNI ? &k_q8_0x16p : NULL;
    case HK_Q4_K_X16P: return hk_vnni_kind() == HK_AVX512_VNNI ? &k_q4_Kx16p : NULL;
    case HK_Q6_K_X16P: return hk_vnni_kind() == HK_AVX512_VNNI ? &k_q6_Kx16p : NULL;
    case HK_Q4_1: return &k_q4_1;
    case HK_Q5_0: return &k_q5_0;
    case HK_Q5_1: return &k_q5_1;
    case HK_Q8_0: return &k_q8_0;
    case HK_Q4_K: return &k_q4_K;
    case HK_Q4_K_PLAIN: return &k_q4_K_plain;
    case HK_Q5_K: return &k_q5_K;
    case HK_Q6_K: return &k_q6_K;
    default: return NULL;
    }
}

#endif
