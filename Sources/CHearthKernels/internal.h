// Block layouts and helpers shared by the C kernels. The layouts are GGML's (ggml-common.h).
#pragma once
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "CHearthKernels.h"

enum {
    HK_F32 = 0, HK_F16 = 1, HK_Q4_0 = 2, HK_Q4_1 = 3, HK_Q5_0 = 6, HK_Q5_1 = 7,
    HK_Q8_0 = 8, HK_Q8_1 = 9, HK_Q2_K = 10, HK_Q3_K = 11, HK_Q4_K = 12, HK_Q5_K = 13, HK_Q6_K = 14,
    HK_Q8_K = 15, HK_IQ2_XXS = 16, HK_IQ2_XS = 17, HK_IQ3_XXS = 18, HK_IQ1_S = 19, HK_IQ4_NL = 20,
    HK_IQ3_S = 21, HK_IQ2_S = 22, HK_IQ4_XS = 23, HK_IQ1_M = 29, HK_BF16 = 30, HK_MXFP4 = 39,
};

#define QK 32
#define QK_K 256

typedef struct { uint16_t d; uint8_t qs[16]; } hk_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } hk_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } hk_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } hk_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } hk_q8_0;
typedef struct { uint16_t d, s; int8_t qs[32]; } hk_q8_1;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } hk_q4_K;

// HK_Q4_K_X16P: a group of sixteen rows' super-block (2304 bytes, as many as the rows' blocks):
//   qs      [4 chunks][8 words][16 rows] uint32: row r's qs[32 chunk + 4 word ...]
//   scales  [12 bytes][16 rows]: byte b of each row's packed scales and mins
//   d       [16 rows] f16, dmin [16 rows] f16
#define XP_QS 0
#define XP_SCALES 2048
#define XP_D (XP_SCALES + 192)
#define XP_DMIN (XP_D + 32)
#define XP_BLOCK (XP_DMIN + 32)
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } hk_q5_K;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } hk_q6_K;

// HK_Q6_K_X16P: a group of sixteen rows' super-block (3360 bytes, as many as the rows' blocks),
// in the order the kernels read it:
//   scales  [16][16 rows] int8
//   quants  [8 words l][2 halves h][3][16 rows] uint32: of each row, ql word 16h + l, ql word
//           16h + 8 + l and qh word 8h + l (the bits of quants 128h + 32k + 4l ... + 3, k = 0..3)
//   d       [16 rows] f16
#define X6P_SCALES 0
#define X6P_WORDS(h, l) (256 + 192 * (2 * (l) + (h)))
#define X6P_D 3328
#define X6P_BLOCK (X6P_D + 32)
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } hk_q8_K;
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } hk_q2_K;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } hk_q3_K;
typedef struct { uint16_t d; uint8_t qs[16]; } hk_iq4_nl;
typedef struct { uint16_t d, scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } hk_iq4_xs;
typedef struct { uint8_t e; uint8_t qs[16]; } hk_mxfp4;

// The grid formats (grid_quants.c): 256 weights in groups of 8 (IQ3: two groups of 4), each
// group a point of a fixed grid, with signs apart for IQ2 and IQ3.
//   IQ2_XXS, 2.0625 bits per weight: per 32 weights two words, the first the grid indices of its
//     4 groups, the second their four 7-bit sign indices (into hk_iq_signs) and a 4-bit scale.
typedef struct { uint16_t d; uint16_t qs[32]; } hk_iq2_xxs;
//   IQ2_XS, 2.3125: per group a 9-bit grid index and a 7-bit sign index; 4-bit scales per 16.
typedef struct { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; } hk_iq2_xs;
//   IQ2_S, 2.5625: per group 8 low bits of a 10-bit grid index (qs[0..31]) and its 8 signs
//   (qs[32..63]), the top two bits four to a byte of qh; 4-bit scales per 16.
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; } hk_iq2_s;
//   IQ3_XXS, 3.0625: 64 grid indices of 4 weights, then per 32 weights a word of four 7-bit sign
//   indices and a 4-bit scale.
typedef struct { uint16_t d; uint8_t qs[96]; } hk_iq3_xxs;
//   IQ3_S, 3.4375: 9-bit indices of 4 weights (the ninth bits in qh), 8 signs a byte, 4-bit
//   scales per 32.
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; } hk_iq3_s;
//   IQ1_S, 1.5625: 11-bit indices of 8 values -1, 0, +1 (the top three bits in qh), per 32
//   weights a 3-bit scale and the sign of a shift of 1/8 (qh's top four bits).
typedef struct { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; } hk_iq1_s;
//   IQ1_M, 1.75: IQ1_S's indices with a shift per 8 weights (bits 3 and 7 of qh), 3-bit scales
//   per 16, and the f16 super-block scale in the top four bits of each of the four words of
//   `scales`.
typedef struct { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; } hk_iq1_m;

// iq_grids.c
extern const uint64_t hk_iq2xxs_grid[256];
extern const uint64_t hk_iq2xs_grid[512];
extern const uint64_t hk_iq2s_grid[1024];
extern const uint32_t hk_iq3xxs_grid[256];
extern const uint32_t hk_iq3s_grid[512];
extern const uint64_t hk_iq1s_grid[2048];
extern const uint8_t hk_iq_signs[128];

// The sixteen values of IQ4_NL and IQ4_XS quants (GGML's kvalues_iq4nl).
static const int8_t hk_iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// The sixteen FP4 (E2M1) values of MXFP4 quants, doubled (GGML's kvalues_mxfp4).
static const int8_t hk_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

_Static_assert(sizeof(hk_q4_0) == 18, "q4_0");
_Static_assert(sizeof(hk_q4_1) == 20, "q4_1");
_Static_assert(sizeof(hk_q5_0) == 22, "q5_0");
_Static_assert(sizeof(hk_q5_1) == 24, "q5_1");
_Static_assert(sizeof(hk_q8_0) == 34, "q8_0");
_Static_assert(sizeof(hk_q8_1) == 36, "q8_1");
_Static_assert(sizeof(hk_q4_K) == 144, "q4_K");
_Static_assert(sizeof(hk_q5_K) == 176, "q5_K");
_Static_assert(sizeof(hk_q6_K) == 210, "q6_K");
_Static_assert(sizeof(hk_q8_K) == 292, "q8_K");
_Static_assert(sizeof(hk_q2_K) == 84, "q2_K");
_Static_assert(sizeof(hk_q3_K) == 110, "q3_K");
_Static_assert(sizeof(hk_iq4_nl) == 18, "iq4_nl");
_Static_assert(sizeof(hk_iq4_xs) == 136, "iq4_xs");
_Static_assert(sizeof(hk_mxfp4) == 17, "mxfp4");
_Static_assert(sizeof(hk_iq2_xxs) == 66, "iq2_xxs");
_Static_assert(sizeof(hk_iq2_xs) == 74, "iq2_xs");
_Static_assert(sizeof(hk_iq2_s) == 82, "iq2_s");
_Static_assert(sizeof(hk_iq3_xxs) == 98, "iq3_xxs");
_Static_assert(sizeof(hk_iq3_s) == 110, "iq3_s");
_Static_assert(sizeof(hk_iq1_s) == 50, "iq1_s");
_Static_assert(sizeof(hk_iq1_m) == 56, "iq1_m");

static inline float hk_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t hk_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float hk_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return hk_bits_f32(sign | 0x7f800000 | (man << 13));
    if (exp != 0) return hk_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
    // Subnormal: man * 2^-24, exact in float.
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
}

// Round to nearest even, like F16C's vcvtps2ph with rounding mode 0.
static inline uint16_t hk_fp32_to_fp16(float f) {
    uint32_t x = hk_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffff;
    if (x > 0x7f800000) return sign | 0x7e00 | (uint16_t)((x >> 13) & 0x3ff);
    if (x >= 0x477ff000) return sign | 0x7c00;
    if (x >= 0x38800000) {
        x += 0xfff + ((x >> 13) & 1);
        return sign | (uint16_t)((x - (112u << 23)) >> 13);
    }
    uint32_t e = x >> 23;
    // Half subnormals count units of 2^-24; anything under 2^-25 rounds to zero.
    if (e < 102) return sign;
    uint32_t shift = 126 - e;
    uint32_t m = (x & 0x7fffff) | 0x800000;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return sign | (uint16_t)q;
}

static inline float hk_bf16_to_fp32(uint16_t h) { return hk_bits_f32((uint32_t)h << 16); }

// Sub-block j (0..7) scale and min of a Q4_K/Q5_K block, 6 bits each.
static inline void hk_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

typedef float (*hk_dot_fn)(const void *w, const void *a, int64_t n);
typedef void (*hk_matvec_fn)(const uint8_t *w, size_t row_bytes, int64_t rows,
                             const void *a, int64_t n, float *out);
/// `runs` (NULL for one run of all `cols`) splits the columns into the rows of each sequence
/// of a forward pass; kernels whose sums depend on the batch size sum each run as a batch of
/// its own, and the others ignore it.
typedef void (*hk_matmul_fn)(const uint8_t *w, size_t row_bytes, int64_t rows,
                             const uint8_t *a, size_t a_stride, int64_t cols, int64_t n,
                             const int64_t *runs, int64_t n_runs, float *out, size_t out_stride);

/// The kernels of one weight type on one instruction-set path; NULL members fall back to
/// loops over `dot`.
typedef struct {
    hk_dot_fn dot;
    hk_matvec_fn matvec;
    hk_matmul_fn matmul;
} hk_kernel;

// interleaved.c: rows r0..r1 of a matrix in an interleaved `layout` against `cols` columns into
// out[c * out_stride + r] (out[r] when cols is 1): whole groups through `k` (NULL: none),
// the rows of groups the range cuts one at a time.
void hk_interleaved_products(int isa, uint32_t layout, const hk_kernel *k, const void *w, size_t row_bytes, int64_t r0, int64_t r1,
                             const void *a, size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                             float *out, size_t out_stride);

// float_matrix.c
float hk_portable_dot_f16w(const void *w, const void *a, int64_t n);
float hk_portable_dot_f32w(const void *w, const void *a, int64_t n);
void hk_portable_matmul_f16w(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);
void hk_portable_matmul_f32w(const uint8_t *, size_t, int64_t, const uint8_t *, size_t, int64_t, int64_t, const int64_t *, int64_t, float *, size_t);

// lowbit.c: Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4, on both paths.
const hk_kernel *hk_lowbit_kernel(int isa, uint32_t type);
int hk_lowbit_dequantize(uint32_t type, const void *src, float *dst, int64_t n);

// grid_quants.c: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M, on both paths.
const hk_kernel *hk_grid_kernel(int isa, uint32_t type);
int hk_grid_dequantize(uint32_t type, const void *src, float *dst, int64_t n);

// portable.c
const hk_kernel *hk_portable_kernel(uint32_t type);
int hk_portable_dequantize(uint32_t type, const void *src, float *dst, int64_t n);
int hk_portable_quantize(uint32_t type, const float *x, void *dst, int64_t n);
float hk_portable_dot_f32(const float *a, const float *b, int64_t n);
void hk_portable_axpy_f32(float alpha, const float *x, float *y, int64_t n);

// avx2_*.c; these exist on x86-64 only.
#if defined(__x86_64__) || defined(_M_X64)
#define HK_HAVE_AVX2 1
const hk_kernel *hk_avx2_kernel(uint32_t type);
int hk_avx2_dequantize(uint32_t type, const void *src, float *dst, int64_t n);
int hk_avx2_quantize(uint32_t type, const float *x, void *dst, int64_t n);
float hk_avx2_dot_f32(const float *a, const float *b, int64_t n);
void hk_avx2_axpy_f32(float alpha, const float *x, float *y, int64_t n);
#endif
