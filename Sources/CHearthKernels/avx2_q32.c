// AVX2 kernels for the 32-element block formats: Q4_0, Q5_0, Q8_0 against Q8_0 activations,
// Q4_1, Q5_1 against Q8_1 activations.
//
// Each weight block is unpacked to 32 int8 lanes once and multiplied with the activation
// bytes by vpmaddubsw (unsigned x signed), so one "tile" of NR weight rows by NC activation
// columns shares every unpack and every activation load. matVec runs 4 rows at a time (four
// independent FMA chains per block); matMul runs one row against 4 columns.
#include "avx2.h"
#if HK_HAVE_AVX2

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

// out[r * row_step + c * col_step] = dot(weight row r, activation column c).
HK_INLINE HK_AVX2 void tile(const int kind, const uint8_t *w, size_t row_bytes, const int NR,
                            const uint8_t *const *a, const int NC, int64_t nb,
                            float *out, size_t row_step, size_t col_step) {
    const size_t wb = weight_bytes(kind);
    const size_t ab = has_min(kind) ? sizeof(hk_q8_1) : sizeof(hk_q8_0);
    const size_t aq = has_min(kind) ? 4 : 2;
    __m256 acc[4][4];
    float mins[4][4];
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NC; c++) {
            acc[r][c] = _mm256_setzero_ps();
            mins[r][c] = 0;
        }
    for (int64_t b = 0; b < nb; b++) {
        __m256i y[4];
        float dy[4], sy[4];
        for (int c = 0; c < NC; c++) {
            const uint8_t *ablk = a[c] + (size_t)b * ab;
            y[c] = hk_load256(ablk + aq);
            dy[c] = hk_half(ablk);
            sy[c] = has_min(kind) ? hk_half(ablk + 2) : 0;
        }
        for (int r = 0; r < NR; r++) {
            const uint8_t *wblk = w + (size_t)r * row_bytes + (size_t)b * wb;
            const __m256i x = weight_quants(kind, wblk);
            const float dx = hk_half(wblk);
            const float mx = has_min(kind) ? hk_half(wblk + 2) : 0;
            // vpmaddubsw needs an unsigned left operand: move the sign of x onto y.
            const __m256i ux = has_min(kind) ? x : _mm256_sign_epi8(x, x);
            for (int c = 0; c < NC; c++) {
                const __m256i sy8 = has_min(kind) ? y[c] : _mm256_sign_epi8(y[c], x);
                const __m256 s = hk_pairs_to_float(_mm256_maddubs_epi16(ux, sy8));
                acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * dy[c]), s, acc[r][c]);
                if (has_min(kind)) mins[r][c] += mx * sy[c];
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int c = 0; c < NC; c++)
            out[(size_t)r * row_step + (size_t)c * col_step] = hk_hsum(acc[r][c]) + mins[r][c];
}

HK_INLINE HK_AVX2 void matvec(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const void *a, int64_t n, float *out) {
    const uint8_t *cols[1] = {a};
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4)
        tile(kind, w + (size_t)r * row_bytes, row_bytes, 4, cols, 1, n / QK, out + r, 1, 0);
    for (; r < rows; r++)
        tile(kind, w + (size_t)r * row_bytes, row_bytes, 1, cols, 1, n / QK, out + r, 1, 0);
}

// Rows are taken in chunks small enough to stay in L1 while every column group passes over
// them, so each weight byte comes from memory once per call.
HK_INLINE HK_AVX2 void matmul(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const uint8_t *a, size_t a_stride, int64_t cols, int64_t n,
                              float *out, size_t out_stride) {
    const int64_t chunk = 16;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (int64_t c = 0; c < cols; c += 4) {
            const uint8_t *ap[4];
            const int64_t nc = cols - c < 4 ? cols - c : 4;
            for (int i = 0; i < 4; i++) ap[i] = a + (size_t)(c + (i < nc ? i : 0)) * a_stride;
            float *o = out + (size_t)c * out_stride;
            for (int64_t r = r0; r < r1; r++) {
                const uint8_t *wr = w + (size_t)r * row_bytes;
                switch (nc) {
                case 4: tile(kind, wr, row_bytes, 1, ap, 4, n / QK, o + r, 1, out_stride); break;
                case 3: tile(kind, wr, row_bytes, 1, ap, 3, n / QK, o + r, 1, out_stride); break;
                case 2: tile(kind, wr, row_bytes, 1, ap, 2, n / QK, o + r, 1, out_stride); break;
                default: tile(kind, wr, row_bytes, 1, ap, 1, n / QK, o + r, 1, out_stride); break;
                }
            }
        }
    }
}

#define HK_Q32_KERNELS(name, kind)                                                                \
    HK_AVX2 float hk_avx2_dot_##name(const void *w, const void *a, int64_t n) {                   \
        const uint8_t *cols[1] = {a};                                                             \
        float out;                                                                                \
        tile(kind, w, 0, 1, cols, 1, n / QK, &out, 1, 0);                                         \
        return out;                                                                               \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matvec_##name(const uint8_t *w, size_t rb, int64_t rows, const void *a,  \
                                       int64_t n, float *out) {                                   \
        matvec(kind, w, rb, rows, a, n, out);                                                     \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matmul_##name(const uint8_t *w, size_t rb, int64_t rows,                 \
                                       const uint8_t *a, size_t as, int64_t cols, int64_t n,      \
                                       float *out, size_t os) {                                   \
        matmul(kind, w, rb, rows, a, as, cols, n, out, os);                                       \
    }

HK_Q32_KERNELS(q4_0, W_Q4_0)
HK_Q32_KERNELS(q4_1, W_Q4_1)
HK_Q32_KERNELS(q5_0, W_Q5_0)
HK_Q32_KERNELS(q5_1, W_Q5_1)
HK_Q32_KERNELS(q8_0, W_Q8_0)

#endif
