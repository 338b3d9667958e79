#include "hk_activations.h"
#include "hk_audio.h"
#include "internal.h"
#include "exp_approx.h"
#include "reduce.h"
#include <math.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

#if HK_HAVE_AVX2
#include <immintrin.h>
#define HK_X86 1
#endif

float hk_exp_approx(float x) {
    const float z = fmaf(x, HK_EXP_LOG2E, HK_EXP_SHIFT);
    const float n = z - HK_EXP_SHIFT;                                     // round(x / ln2)
    const float b = fmaf(-n, HK_EXP_LN2_LO, fmaf(-n, HK_EXP_LN2_HI, x));  // x - n ln2, in two steps
    const uint32_t e = bits_of(z) << 23;                        // n in the exponent field
    const float k = float_of(e + bits_of(1.0f));                // 2^n
    const float u = b * b;
    // e^b - 1
    const float j = fmaf(fmaf(fmaf(HK_EXP_C5, b, HK_EXP_C4), u, fmaf(HK_EXP_C3, b, HK_EXP_C2)), u, HK_EXP_C1 * b);
    if (!(fabsf(n) > 126)) return fmaf(j, k, k);
    // 2^n alone would overflow or underflow: scale in two factors.
    const uint32_t g = n <= 0 ? 0x82000000u : 0;
    const float s1 = float_of(g + 0x7f000000u);
    const float s2 = float_of(e - g);
    if (fabsf(n) > 192) return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

#ifdef HK_X86
__attribute__((target("avx2,fma")))
static void silu_mul_avx2(const float *gate, const float *up, float *out, int64_t n) {
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(gate + i);
        const __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, hk_exp_approx8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

__attribute__((target("avx2,fma")))
static double exp_sum_avx2(float *s, int64_t n, float max) {
    double sum = 0;
    int64_t i = 0;
    const __m256 m = _mm256_set1_ps(max);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(s + i), m));
        _mm256_storeu_ps(s + i, v);
        __m128 h = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        sum += (double)_mm_cvtss_f32(h);
    }
    if (i < n) {
        // The last run, padded with zeros as masked positions are.
        float lanes[8] = {0};
        for (int64_t t = i; t < n; t++) lanes[t - i] = s[t] = hk_exp_approx(s[t] - max);
        const __m256 v = _mm256_loadu_ps(lanes);
        __m128 h = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        sum += (double)_mm_cvtss_f32(h);
    }
    return sum;
}

#endif

static void silu_mul_portable(const float *gate, const float *up, float *out, int64_t n) {
    int64_t runs = n - n % 8;
    for (int64_t i = 0; i < runs; i++) {
        const float x = gate[i];
        out[i] = x / (1.0f + hk_exp_approx(0.0f - x)) * up[i];
    }
    for (int64_t i = runs; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

static double exp_sum_portable(float *s, int64_t n, float max) {
    double sum = 0;
    for (int64_t i = 0; i < n; i += 8) {
        float lanes[8] = {0};
        for (int64_t t = i; t < n && t < i + 8; t++) lanes[t - i] = s[t] = hk_exp_approx(s[t] - max);
        sum += (double)hk_reduce8(lanes);
    }
    return sum;
}

void hk_silu_mul_f32(int isa, const float *gate, const float *up, float *out, int64_t n) {
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) { silu_mul_avx2(gate, up, out, n); return; }
#endif
    silu_mul_portable(gate, up, out, n);
}

void hk_softmax_f32(int isa, float *scores, int64_t n, float sink) {
    if (n <= 0) return;
    float max = -INFINITY;
    for (int64_t t = 0; t < n; t++) if (scores[t] > max) max = scores[t];
    // A sink counts as one more score whose weight is dropped, as ggml_soft_max_ext's sinks do.
    const int has_sink = sink > -INFINITY;
    if (has_sink && sink > max) max = sink;
    double sum;
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) sum = exp_sum_avx2(scores, n, max); else
#endif
    sum = exp_sum_portable(scores, n, max);
    if (has_sink) sum += (double)expf(sink - max);
    const float inv = (float)(1.0 / sum);
    for (int64_t t = 0; t < n; t++) scores[t] *= inv;
}

void hk_softmax_row_f32(int isa, float *x, int64_t n) {
    if (n <= 0) return;
    float max = -INFINITY;
    for (int64_t t = 0; t < n; t++) if (x[t] > max) max = x[t];
    const int64_t whole = n - n % 8;
    double sum;
#ifdef HK_X86
    if (isa == HK_ISA_AVX2) sum = exp_sum_avx2(x, whole, max); else
#endif
    sum = exp_sum_portable(x, whole, max);
    for (int64_t t = whole; t < n; t++) {
        x[t] = expf(x[t] - max);
        sum += (double)x[t];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t t = 0; t < n; t++) x[t] *= inv;
}

// ---- GELU -----------------------------------------------------------------------------------

#include <pthread.h>

// Two entries past the last let a 4-byte gather read the last entry.
static uint16_t gelu_table[(1 << 16) + 2];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;
static int gelu_isa;

static float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float coef_a = 0.044715f;
    // 1 + a x^2 fused, as llama.cpp's compiled table has it, so table entries round the same.
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * fmaf(coef_a * x, x, 1.0f)));
}

static void build_gelu_table(void) {
    gelu_isa = hk_best_isa();
    for (uint32_t i = 0; i < (1u << 16); i++) {
        gelu_table[i] = hk_fp32_to_fp16(gelu_tanh(hk_fp16_to_fp32((uint16_t)i)));
    }
}

#if HK_X86
// Eight at a time: F16C rounds to half as hk_fp32_to_fp16 does (to nearest even), a gather reads
// the table, and the same products and limits follow.
__attribute__((target("avx2,fma,f16c")))
static int64_t geglu_avx2(const float *gate, const float *up, float *out, int64_t n) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(gate + i), u = _mm256_loadu_ps(up + i);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        const __m256i g = _mm256_and_si256(_mm256_i32gather_epi32((const int *)gelu_table, h, 2), low16);
        const __m256i halves = _mm256_permute4x64_epi64(_mm256_packus_epi32(g, g), 0x08);
        __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(halves)), u);
        v = _mm256_blendv_ps(v, _mm256_mul_ps(x, u), _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        v = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), v);
        _mm256_storeu_ps(out + i, v);
    }
    return i;
}
#endif

void hk_geglu_f32(const float *gate, const float *up, float *out, int64_t n) {
    pthread_once(&gelu_once, build_gelu_table);
    int64_t i = 0;
#if HK_X86
    if (gelu_isa == HK_ISA_AVX2) i = geglu_avx2(gate, up, out, n);
#endif
    for (; i < n; i++) {
        const float x = gate[i];
        if (x <= -10.0f) {
            out[i] = 0.0f;
        } else if (x >= 10.0f) {
            out[i] = x * up[i];
        } else {
            out[i] = hk_fp16_to_fp32(gelu_table[hk_fp32_to_fp16(x)]) * up[i];
        }
    }
}

// ---- RoPE -----------------------------------------------------------------------------------

// One pair at a time, each value a fused multiply-add; inlined, so that under the AVX2 target
// the compiler emits vfmadd rather than a call to libm's fmaf.
static inline __attribute__((always_inline))
void rope_rotate_pairs(float *x, int64_t heads, int64_t head_dim, int64_t dims, const float *table, int adjacent) {
    const int64_t half = dims / 2;
    for (int64_t h = 0; h < heads; h++) {
        float *v = x + h * head_dim;
        for (int64_t i = 0; i < half; i++) {
            const float c = table[2 * i], s = table[2 * i + 1];
            const int64_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
            const float x0 = v[a], x1 = v[b];
            v[a] = __builtin_fmaf(x0, c, -(x1 * s));
            v[b] = __builtin_fmaf(x0, s, x1 * c);
        }
    }
}

#if defined(__x86_64__) || defined(_M_X64)
// NeoX halves eight pairs at a time; the same products and fused adds per value as the
// portable loop (which the compiler turns into vfmadd here, with no libm call).
__attribute__((target("avx2,fma,f16c")))
static void rope_rotate_avx2(float *x, int64_t heads, int64_t head_dim, int64_t dims, const float *table, int adjacent) {
    const int64_t half = dims / 2;
    if (adjacent || half % 8 != 0) {
        rope_rotate_pairs(x, heads, head_dim, dims, table, adjacent);
        return;
    }
    const __m256i cos_index = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    for (int64_t h = 0; h < heads; h++) {
        float *v = x + h * head_dim;
        for (int64_t i = 0; i < half; i += 8) {
            const __m256 c = _mm256_i32gather_ps(table + 2 * i, cos_index, 4);
            const __m256 s = _mm256_i32gather_ps(table + 2 * i + 1, cos_index, 4);
            const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + half);
            const __m256 x1s = _mm256_mul_ps(x1, s), x1c = _mm256_mul_ps(x1, c);
            _mm256_storeu_ps(v + i, _mm256_fmadd_ps(x0, c, _mm256_xor_ps(x1s, _mm256_set1_ps(-0.0f))));
            _mm256_storeu_ps(v + i + half, _mm256_fmadd_ps(x0, s, x1c));
        }
    }
}
#endif

void hk_rope_rotate(int isa, float *x, int64_t heads, int64_t head_dim, int64_t dims, const float *table, int adjacent) {
#if defined(__x86_64__) || defined(_M_X64)
    if (isa == HK_ISA_AVX2) { rope_rotate_avx2(x, heads, head_dim, dims, table, adjacent); return; }
#endif
    rope_rotate_pairs(x, heads, head_dim, dims, table, adjacent);
}

// log Σ e^x for a logit row (Whisper's timestamp rule), the exponentials summed in 8 lanes.
#ifdef HK_X86
__attribute__((target("avx2,fma")))
static void exp_lanes_avx2(const float *x, int64_t whole, float shift, float *lanes) {
    __m256 acc = _mm256_setzero_ps();
    const __m256 s = _mm256_set1_ps(shift);
    for (int64_t j = 0; j < whole; j += 8) acc = _mm256_add_ps(acc, hk_exp_approx8(_mm256_sub_ps(_mm256_loadu_ps(x + j), s)));
    _mm256_storeu_ps(lanes, acc);
}
#endif

void hk_hadamard_rotate(float *x, int64_t n, int64_t chunk) {
    const float scale = 1.0f / sqrtf((float)chunk);
    for (int64_t c = 0; c + chunk <= n; c += chunk) {
        float *v = x + c;
        for (int64_t half = 1; half < chunk; half *= 2)
            for (int64_t i = 0; i < chunk; i += 2 * half)
                for (int64_t j = i; j < i + half; j++) {
                    const float a = v[j], b = v[j + half];
                    v[j] = a + b;
                    v[j + half] = a - b;
                }
        for (int64_t i = 0; i < chunk; i++) v[i] *= scale;
    }
}

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
