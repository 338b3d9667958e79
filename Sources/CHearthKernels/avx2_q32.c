// AVX2 kernels for the 32-element block formats: Q4_0, Q5_0, Q8_0 against Q8_0 activations,
// Q4_1, Q5_1 against Q8_1 activations.
//
// Each weight block is unpacked to 32 int8 lanes and multiplied with the activation bytes by
// vpmaddubsw (unsigned x signed). matVec runs 4 rows at a time so they share each activation
// load and keep four independent FMA chains; matMul runs one row against 4 columns so they
// share each unpacked weight block.
#include <stdlib.h>
#include "avx2.h"
#if HK_HAVE_AVX2

// How far ahead matVec prefetches, in rows (about 6 KB of a 576-wide Q4_1 matrix). With weights
// streaming from memory it lifted Q4_1 and Q8_0 matVec 1.5-2x here; 32 or more rows was worse.
#define PREFETCH_ROWS 16

enum { W_Q4_0, W_Q4_1, W_Q5_0, W_Q5_1, W_Q8_0 };

HK_INLINE size_t weight_bytes(int kind) {
    switch (kind) {
    case W_Q4_0: return sizeof(hk_q4_0);
    case W_Q4_1: return sizeof(hk_q4_1);
    case W_Q5_0: return sizeof(hk_q5_0);
    case W_Q5_1: return sizeof(hk_q5_1);
    default: return sizeof(hk_q8_0);
    }
}

// Q4_1 and Q5_1 store unsigned quants plus a minimum, and pair with Q8_1 (which carries
// s = d * sum(q)); the others store signed quants and pair with Q8_0.
HK_INLINE int has_min(int kind) { return kind == W_Q4_1 || kind == W_Q5_1; }

// The block's quants as 32 int8 lanes: unsigned 0..31 for Q4_1/Q5_1, signed otherwise.
HK_INLINE HK_AVX2 __m256i weight_quants(int kind, const uint8_t *b) {
    switch (kind) {
    case W_Q4_0:
        return _mm256_sub_epi8(hk_nibbles(b + 2), _mm256_set1_epi8(8));
    case W_Q4_1:
        return hk_nibbles(b + 4);
    case W_Q5_0:
        // A clear fifth bit means q - 16 < 0: fill the high nibble with ones.
        return _mm256_or_si256(hk_nibbles(b + 6),
                               _mm256_andnot_si256(hk_bit_mask32(b + 2), _mm256_set1_epi8((char)0xF0)));
    case W_Q5_1:
        return _mm256_or_si256(hk_nibbles(b + 8),
                               _mm256_and_si256(hk_bit_mask32(b + 4), _mm256_set1_epi8(0x10)));
    default:
        return hk_load256(b + 2);
    }
}

HK_INLINE size_t act_bytes(int kind) { return has_min(kind) ? sizeof(hk_q8_1) : sizeof(hk_q8_0); }
HK_INLINE size_t act_quants(int kind) { return has_min(kind) ? 4 : 2; }

// The block's f16 scale in lane 0 and, for Q4_1/Q5_1 weights and Q8_1 activations, the f16
// at p + 2 (m or s) in lane 1.
HK_INLINE HK_AVX2 __m128 half_pair(int kind, const uint8_t *p) {
    int32_t v = 0;
    memcpy(&v, p, has_min(kind) ? 4 : 2);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

// Sum of x * y over one block as 8 float lanes.
HK_INLINE HK_AVX2 __m256 block_dot(int kind, __m256i x, __m256i ux, __m256i y) {
    // vpmaddubsw needs an unsigned left operand: for signed quants, |x| times y with x's sign.
    const __m256i p = has_min(kind) ? _mm256_maddubs_epi16(x, y) : _mm256_maddubs_epi16(ux, _mm256_sign_epi8(y, x));
    return hk_pairs_to_float(p);
}

// out[r] = dot(weight row r, a) for NR rows (1..4) that share every activation load: four
// independent FMA chains per block. Each sum is: for each block, (dx * dy) * sum(qx * qy)
// added into 8 lanes, plus (for Q4_1/Q5_1) mx * sy added in order; matMul below produces the
// same floats.
HK_INLINE HK_AVX2 void tile_rows(const int kind, const uint8_t *w, size_t row_bytes, const int NR,
                                 const uint8_t *a, int64_t nb, int prefetch, float *out) {
    const size_t wb = weight_bytes(kind), ab = act_bytes(kind), aq = act_quants(kind);
    __m256 acc[4];
    __m128 mins[4];
    for (int r = 0; r < NR; r++) {
        acc[r] = _mm256_setzero_ps();
        mins[r] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ablk = a + (size_t)b * ab;
        const __m256i y = hk_load256(ablk + aq);
        const __m128 dsy = half_pair(kind, ablk);
        for (int r = 0; r < NR; r++) {
            const uint8_t *wblk = w + (size_t)r * row_bytes + (size_t)b * wb;
            // Weights stream from memory (a model is larger than the caches) and hardware
            // prefetch keeps up with one stream, not four interleaved ones: fetch the bytes
            // PREFETCH_ROWS rows ahead in address order, one block per block consumed.
            if (prefetch)
                _mm_prefetch((const char *)(w + PREFETCH_ROWS * row_bytes + ((size_t)b * NR + r) * wb), _MM_HINT_T0);
            const __m256i x = weight_quants(kind, wblk);
            const __m256i ux = has_min(kind) ? x : _mm256_sign_epi8(x, x);
            const __m128 prod = _mm_mul_ps(half_pair(kind, wblk), dsy);  // dx * dy, mx * sy
            if (has_min(kind)) mins[r] = _mm_add_ps(mins[r], prod);
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(prod), block_dot(kind, x, ux, y), acc[r]);
        }
    }
    for (int r = 0; r < NR; r++) {
        float m = 0;
        if (has_min(kind)) m = _mm_cvtss_f32(_mm_shuffle_ps(mins[r], mins[r], 1));
        out[r] = hk_hsum(acc[r]) + m;
    }
}

// out[c * out_stride] = dot(weight row, column c) for NC columns (1..4) sharing each unpacked
// weight block. dys/sys hold each block's activation d and s as floats, 4 columns per block.
HK_INLINE HK_AVX2 void tile_cols(const int kind, const uint8_t *w, const uint8_t *const *a, const int NC,
                                 const float *dys, const float *sys, int64_t nb, float *out, size_t out_stride) {
    const size_t wb = weight_bytes(kind), ab = act_bytes(kind), aq = act_quants(kind);
    __m256 acc[4];
    __m128 mins = _mm_setzero_ps();
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wblk = w + (size_t)b * wb;
        const __m256i x = weight_quants(kind, wblk);
        const __m256i ux = has_min(kind) ? x : _mm256_sign_epi8(x, x);
        const __m128 dmx = half_pair(kind, wblk);
        const __m256 vdx = _mm256_broadcastss_ps(dmx);
        if (has_min(kind))
            mins = _mm_add_ps(mins, _mm_mul_ps(_mm_permute_ps(dmx, 0x55), _mm_loadu_ps(sys + 4 * b)));
        for (int c = 0; c < NC; c++) {
            const __m256i y = hk_load256(a[c] + (size_t)b * ab + aq);
            const __m256 scale = _mm256_mul_ps(vdx, _mm256_broadcast_ss(dys + 4 * b + c));
            acc[c] = _mm256_fmadd_ps(scale, block_dot(kind, x, ux, y), acc[c]);
        }
    }
    float m[4];
    _mm_storeu_ps(m, mins);
    for (int c = 0; c < NC; c++) out[(size_t)c * out_stride] = hk_hsum(acc[c]) + (has_min(kind) ? m[c] : 0);
}

HK_INLINE HK_AVX2 void matvec(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const int pf = r + PREFETCH_ROWS + 4 <= rows;
        tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 4, a, nb, pf, out + r);
    }
    for (; r < rows; r++) tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 1, a, nb, 0, out + r);
}

// Rows are taken in chunks that stay in L1 while every group of 4 columns passes over them,
// so each weight byte comes from memory once per call.
HK_INLINE HK_AVX2 void matmul(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const uint8_t *a, size_t a_stride, int64_t cols, int64_t n,
                              float *out, size_t out_stride) {
    const int64_t nb = n / QK, groups = (cols + 3) / 4;
    const size_t ab = act_bytes(kind);
    float stack[2 * 4 * 256];
    const size_t need = (size_t)groups * 2 * 4 * (size_t)nb;
    float *scales = need <= sizeof stack / sizeof stack[0] ? stack : malloc(need * sizeof(float));
    if (!scales) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 1, a + (size_t)c * a_stride, nb, 0,
                          out + (size_t)c * out_stride + r);
        return;
    }
    for (int64_t g = 0; g < groups; g++) {
        float *dys = scales + (size_t)g * 8 * (size_t)nb, *sys = dys + 4 * nb;
        for (int64_t b = 0; b < nb; b++)
            for (int c = 0; c < 4; c++) {
                const int64_t col = 4 * g + c;
                float d = 0, s = 0;
                if (col < cols) {
                    const __m128 ds = half_pair(kind, a + (size_t)col * a_stride + (size_t)b * ab);
                    d = _mm_cvtss_f32(ds);
                    s = _mm_cvtss_f32(_mm_shuffle_ps(ds, ds, 1));
                }
                dys[4 * b + c] = d;
                sys[4 * b + c] = s;
            }
    }
    const int64_t chunk = 32;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (int64_t g = 0; g < groups; g++) {
            const int64_t c = 4 * g, nc = cols - c < 4 ? cols - c : 4;
            const uint8_t *ap[4];
            for (int i = 0; i < 4; i++) ap[i] = a + (size_t)(c + (i < nc ? i : 0)) * a_stride;
            const float *dys = scales + (size_t)g * 8 * (size_t)nb, *sys = dys + 4 * nb;
            float *o = out + (size_t)c * out_stride;
            for (int64_t r = r0; r < r1; r++) {
                const uint8_t *wr = w + (size_t)r * row_bytes;
                switch (nc) {
                case 4: tile_cols(kind, wr, ap, 4, dys, sys, nb, o + r, out_stride); break;
                case 3: tile_cols(kind, wr, ap, 3, dys, sys, nb, o + r, out_stride); break;
                case 2: tile_cols(kind, wr, ap, 2, dys, sys, nb, o + r, out_stride); break;
                default: tile_cols(kind, wr, ap, 1, dys, sys, nb, o + r, out_stride); break;
                }
            }
        }
    }
    if (scales != stack) free(scales);
}

#define HK_Q32_KERNELS(name, kind)                                                                \
    HK_AVX2 float hk_avx2_dot_##name(const void *w, const void *a, int64_t n) {                   \
        float out;                                                                                \
        tile_rows(kind, w, 0, 1, a, n / QK, 0, &out);                                             \
        return out;                                                                               \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matvec_##name(const uint8_t *w, size_t rb, int64_t rows, const void *a,  \
                                       int64_t n, float *out) {                                   \
        matvec(kind, w, rb, rows, a, n, out);                                                     \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matmul_##name(const uint8_t *w, size_t rb, int64_t rows,                 \
                                       const uint8_t *a, size_t as, int64_t cols, int64_t n,      \
                                       const int64_t *runs, int64_t n_runs, float *out, size_t os) { \
        (void)runs;                                                                               \
        (void)n_runs;                                                                             \
        matmul(kind, w, rb, rows, a, as, cols, n, out, os);                                       \
    }

HK_Q32_KERNELS(q4_0, W_Q4_0)
HK_Q32_KERNELS(q4_1, W_Q4_1)
HK_Q32_KERNELS(q5_0, W_Q5_0)
HK_Q32_KERNELS(q5_1, W_Q5_1)
HK_Q32_KERNELS(q8_0, W_Q8_0)

#endif
