// Dense F32 matrix products for encoder models (BERT). The weights are packed once, at load, in
// panels of 16 output features: a panel holds, for each k in order, the 16 features' weights
// side by side (64 bytes, one aligned pair of AVX2 registers). The AVX2 path computes 6
// activation rows by one panel at a time: for each k it loads the panel's 16 weights, broadcasts
// each of the 6 activations, and does 12 FMAs into 12 accumulators, so each output is one
// fused multiply-add chain over k with no horizontal sums. K runs in blocks of at most KC and
// activation rows in blocks of MC, so that the activation block stays in L2 and a panel's block
// in L1 while every group of 6 rows passes over it.
//
// Every output is summed in the same order whatever the rows beside it, the row range asked
// for or the thread: bias + the first K block's chain, then each further block's chain added.
#include "avx2.h"
#include "gelu.h"
#include "hk_gemm.h"
#include <stdlib.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

#define NR 16
#define MR 6
// K block: a panel's block is KC * 64 bytes (24 KiB), 6 activation rows' 9 KiB beside it.
#define KC 384
// Activation rows per block: MC rows of a K block is 144 KiB, in L2.
#define MC 96

int64_t hk_gemm_packed_count(int64_t n, int64_t k) { return (n + NR - 1) / NR * NR * k; }

void hk_gemm_pack_f32(const float *w, int64_t w_stride, int64_t n, int64_t k, float *packed) {
    for (int64_t p = 0; p < (n + NR - 1) / NR; p++) {
        float *panel = packed + p * NR * k;
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t j = 0; j < NR; j++) {
                const int64_t r = p * NR + j;
                panel[kk * NR + j] = r < n ? w[r * w_stride + kk] : 0.0f;
            }
    }
}

// K blocks of equal size (the last one shorter), none longer than KC.
static int64_t k_block(int64_t k) {
    const int64_t blocks = (k + KC - 1) / KC;
    return blocks > 1 ? (k + blocks - 1) / blocks : k;
}

// The portable path sums in the same order as the AVX2 one: one fused chain per K block.
static void gemm_portable(const float *packed, int64_t k, int64_t r0, int64_t r1, const float *x, int64_t x_stride,
                          int64_t m, const float *bias, int activation, float *out, int64_t out_stride) {
    const int64_t kc = k_block(k);
    for (int64_t c = 0; c < m; c++) {
        const float *xc = x + c * x_stride;
        for (int64_t r = r0; r < r1; r++) {
            const float *panel = packed + r / NR * NR * k + r % NR;
            float sum = bias ? bias[r] : 0.0f;
            for (int64_t k0 = 0; k0 < k; k0 += kc) {
                const int64_t k1 = k0 + kc < k ? k0 + kc : k;
                float chain = 0;
                for (int64_t kk = k0; kk < k1; kk++) chain = fmaf(xc[kk], panel[kk * NR], chain);
                sum = sum + chain;
            }
            out[c * out_stride + r] = activation == HK_GEMM_GELU ? hk_gelu_one(sum) : sum;
        }
    }
}

#if HK_HAVE_AVX2

// Rows of x (R of them, 1 to 6) against one panel's K block [k0, k0 + kc); the results go to
// columns lo..<hi of the panel's 16 (all 16 when `full`). On the first K block the bias (16
// floats at `bias`, or none) starts the sum, on later ones the output so far; on the last the
// activation is applied.
HK_INLINE HK_AVX2 void kernel(const int R, const float *x, int64_t x_stride, const float *b, int64_t kc, float *out,
                              int64_t out_stride, int full, int lo, int hi, const float *bias, int first, int last,
                              int activation) {
    __m256 acc[MR][2];
    for (int i = 0; i < R; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float *xr[MR];
    for (int i = 0; i < R; i++) xr[i] = x + i * x_stride;
    // Unrolled so that the loop's counter and address updates take fewer of the front end's
    // slots beside the 12 FMAs and 8 loads of each k.
#pragma clang loop unroll_count(4)
    for (int64_t kk = 0; kk < kc; kk++) {
        const __m256 b0 = _mm256_load_ps(b + kk * NR), b1 = _mm256_load_ps(b + kk * NR + 8);
        for (int i = 0; i < R; i++) {
            const __m256 a = _mm256_broadcast_ss(xr[i] + kk);
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
    }
    __m256 base0 = _mm256_setzero_ps(), base1 = base0;
    if (first && bias) {
        if (full) {
            base0 = _mm256_loadu_ps(bias);
            base1 = _mm256_loadu_ps(bias + 8);
        } else {
            float t[NR] = {0};
            for (int j = lo; j < hi; j++) t[j] = bias[j];
            base0 = _mm256_loadu_ps(t);
            base1 = _mm256_loadu_ps(t + 8);
        }
    }
    for (int i = 0; i < R; i++) {
        float *o = out + i * out_stride;
        __m256 s0 = base0, s1 = base1;
        if (!first) {
            if (full) {
                s0 = _mm256_loadu_ps(o);
                s1 = _mm256_loadu_ps(o + 8);
            } else {
                float t[NR] = {0};
                for (int j = lo; j < hi; j++) t[j] = o[j];
                s0 = _mm256_loadu_ps(t);
                s1 = _mm256_loadu_ps(t + 8);
            }
        }
        s0 = _mm256_add_ps(s0, acc[i][0]);
        s1 = _mm256_add_ps(s1, acc[i][1]);
        if (last && activation == HK_GEMM_GELU) {
            s0 = hk_gelu8(s0);
            s1 = hk_gelu8(s1);
        }
        if (full) {
            _mm256_storeu_ps(o, s0);
            _mm256_storeu_ps(o + 8, s1);
        } else {
            float t[NR];
            _mm256_storeu_ps(t, s0);
            _mm256_storeu_ps(t + 8, s1);
            for (int j = lo; j < hi; j++) o[j] = t[j];
        }
    }
}

// The blocking both instruction sets share: K in blocks of k_block(k) (the first block starts
// each output from the bias, the last applies the activation), MC activation rows at a time, each
// panel of 16 weight rows in turn, MROWS activation rows a kernel call (CALL(R), R a constant)
// and the rest in one call with fewer (CASES lists them). PAIRS may take two panels at once: it
// runs first for each panel, and `continue`s past the next panel when it has done both.
#define HK_KERNEL_ARGUMENTS x + c * x_stride + k0, x_stride, b, kc, o + c * out_stride, out_stride
#define HK_GEMM_DRIVER(NAME, TARGET, CALL, MROWS, CASES, PAIRS)                                                  \
    static void TARGET NAME(const float *packed, int64_t k, int64_t r0, int64_t r1, const float *x,              \
                            int64_t x_stride, int64_t m, const float *bias, int activation, float *out,          \
                            int64_t out_stride) {                                                                 \
        const int64_t kc_max = k_block(k);                                                                        \
        for (int64_t k0 = 0; k0 < k; k0 += kc_max) {                                                              \
            const int64_t kc = k0 + kc_max < k ? kc_max : k - k0;                                                 \
            const int first = k0 == 0, last = k0 + kc == k;                                                       \
            for (int64_t m0 = 0; m0 < m; m0 += MC) {                                                              \
                const int64_t m1 = m0 + MC < m ? m0 + MC : m;                                                     \
                for (int64_t p = r0 / NR; p * NR < r1; p++) {                                                     \
                    const int64_t base = p * NR;                                                                  \
                    const int lo = (int)(r0 > base ? r0 - base : 0), hi = (int)(r1 < base + NR ? r1 - base : NR); \
                    const int full = lo == 0 && hi == NR;                                                         \
                    const float *b = packed + p * NR * k + k0 * NR;                                               \
                    const float *bp = bias ? bias + base : NULL;                                                  \
                    float *o = out + base;                                                                        \
                    int64_t c = m0;                                                                               \
                    PAIRS                                                                                         \
                    for (; c + MROWS <= m1; c += MROWS) CALL(MROWS);                                              \
                    switch (m1 - c) {                                                                             \
                    CASES(CALL)                                                                                   \
                    default: break;                                                                               \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }
#define HK_CASE(CALL, R) case R: CALL(R); break;
#define HK_CASES_BELOW_6(CALL) HK_CASE(CALL, 5) HK_CASE(CALL, 4) HK_CASE(CALL, 3) HK_CASE(CALL, 2) HK_CASE(CALL, 1)
#define HK_CASES_BELOW_12(CALL)                                                                        \
    HK_CASE(CALL, 11) HK_CASE(CALL, 10) HK_CASE(CALL, 9) HK_CASE(CALL, 8) HK_CASE(CALL, 7) HK_CASE(CALL, 6) \
    HK_CASES_BELOW_6(CALL)

#define HK_CALL_AVX2(R) kernel(R, HK_KERNEL_ARGUMENTS, full, lo, hi, bp, first, last, activation)
HK_GEMM_DRIVER(gemm_avx2, HK_AVX2, HK_CALL_AVX2, MR, HK_CASES_BELOW_6, )

// The same products with AVX-512, on CPUs that have it: a panel's 16 weights for one k fill one
// register, so 12 activation rows take 12 accumulators and each k is 12 FMAs of 16 lanes. Each
// output is still one fused chain per K block started and finished as above, so the results are
// the AVX2 path's, bit for bit.
#define HK_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define MR16 12

HK_INLINE HK_AVX512 __m512 gelu16(__m512 v) {
    const __m256 lo = hk_gelu8(_mm512_castps512_ps256(v));
    const __m256 hi = hk_gelu8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

HK_INLINE HK_AVX512 void kernel16(const int R, const float *x, int64_t x_stride, const float *b, int64_t kc, float *out,
                                  int64_t out_stride, int full, int lo, int hi, const float *bias, int first, int last,
                                  int activation) {
    __m512 acc[MR16];
    for (int i = 0; i < R; i++) acc[i] = _mm512_setzero_ps();
    const float *xr[MR16];
    for (int i = 0; i < R; i++) xr[i] = x + i * x_stride;
#pragma clang loop unroll_count(2)
    for (int64_t kk = 0; kk < kc; kk++) {
        const __m512 bv = _mm512_loadu_ps(b + kk * NR);
        for (int i = 0; i < R; i++) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(xr[i][kk]), bv, acc[i]);
    }
    const __mmask16 mask = full ? (__mmask16)0xFFFF : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
    const __m512 base = first && bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
    for (int i = 0; i < R; i++) {
        float *o = out + i * out_stride;
        __m512 s = first ? base : _mm512_maskz_loadu_ps(mask, o);
        s = _mm512_add_ps(s, acc[i]);
        if (last && activation == HK_GEMM_GELU) s = gelu16(s);
        _mm512_mask_storeu_ps(o, mask, s);
    }
}

// Two whole panels at once: each activation broadcast feeds 2 FMAs, so a k takes 2 panel loads
// and 12 broadcasts for 24 FMAs instead of 1 and 12 for 12 (24 accumulators, 27 of the 32
// registers). Each output is the same chain as in kernel16, so the same bits.
HK_INLINE HK_AVX512 void kernel32(const int R, const float *x, int64_t x_stride, const float *b, int64_t kc, float *out,
                                  int64_t out_stride, const float *b1, const float *bias, int first, int last,
                                  int activation) {
    __m512 acc[MR16], acc1[MR16];
    for (int i = 0; i < R; i++) acc[i] = acc1[i] = _mm512_setzero_ps();
    const float *xr[MR16];
    for (int i = 0; i < R; i++) xr[i] = x + i * x_stride;
    for (int64_t kk = 0; kk < kc; kk++) {
        const __m512 bv = _mm512_loadu_ps(b + kk * NR), bv1 = _mm512_loadu_ps(b1 + kk * NR);
        // Unrolled, so that the 24 accumulators stay in registers.
#pragma clang loop unroll(full)
        for (int i = 0; i < R; i++) {
            const __m512 a = _mm512_set1_ps(xr[i][kk]);
            acc[i] = _mm512_fmadd_ps(a, bv, acc[i]);
            acc1[i] = _mm512_fmadd_ps(a, bv1, acc1[i]);
        }
    }
    const __m512 base = first && bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    const __m512 base1 = first && bias ? _mm512_loadu_ps(bias + NR) : _mm512_setzero_ps();
    for (int i = 0; i < R; i++) {
        float *o = out + i * out_stride;
        __m512 s = _mm512_add_ps(first ? base : _mm512_loadu_ps(o), acc[i]);
        __m512 s1 = _mm512_add_ps(first ? base1 : _mm512_loadu_ps(o + NR), acc1[i]);
        if (last && activation == HK_GEMM_GELU) {
            s = gelu16(s);
            s1 = gelu16(s1);
        }
        _mm512_storeu_ps(o, s);
        _mm512_storeu_ps(o + NR, s1);
    }
}

#define HK_CALL_AVX512(R) kernel16(R, HK_KERNEL_ARGUMENTS, full, lo, hi, bp, first, last, activation)
#define HK_CALL_PAIR(R) kernel32(R, HK_KERNEL_ARGUMENTS, b + NR * k, bp, first, last, activation)
#define HK_PAIRS_AVX512                                  \
    if (full && base + 2 * NR <= r1) {                   \
        for (; c + MR16 <= m1; c += MR16) HK_CALL_PAIR(MR16); \
        switch (m1 - c) {                                \
        HK_CASES_BELOW_12(HK_CALL_PAIR)                  \
        default: break;                                  \
        }                                                \
        p++;                                             \
        continue;                                        \
    }
HK_GEMM_DRIVER(gemm_avx512, HK_AVX512, HK_CALL_AVX512, MR16, HK_CASES_BELOW_12, HK_PAIRS_AVX512)

static _Atomic int avx512_allowed = 1;

static int has_avx512(void) {
    static _Atomic int known = -1;
    if (known < 0) known = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return known && avx512_allowed;
}

#endif

int hk_gemm_avx512(int allowed) {
#if HK_HAVE_AVX2
    if (allowed >= 0) avx512_allowed = allowed;
    return has_avx512();
#else
    (void)allowed;
    return 0;
#endif
}

void hk_gemm_packed_f32(int isa, const float *packed, int64_t n, int64_t k, int64_t r0, int64_t r1, const float *x,
                        int64_t x_stride, int64_t m, const float *bias, int activation, float *out, int64_t out_stride) {
    if (r1 > n) r1 = n;
    if (r0 >= r1 || m <= 0 || k <= 0) return;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2 && has_avx512()) {
        gemm_avx512(packed, k, r0, r1, x, x_stride, m, bias, activation, out, out_stride);
        return;
    }
    if (isa == HK_ISA_AVX2) {
        gemm_avx2(packed, k, r0, r1, x, x_stride, m, bias, activation, out, out_stride);
        return;
    }
#endif
    gemm_portable(packed, k, r0, r1, x, x_stride, m, bias, activation, out, out_stride);
}
