// The interleaved layouts (see CHearthKernels.h): rows written G at a time side by side, and
// the rows of a group one at a time, for products whose row range cuts a group.
#include "internal.h"
#include <stdlib.h>
#if HK_HAVE_AVX2
#include "avx2.h"
#endif

// A layout's shape: rows per group, bytes and values of one row's block, what its rows sum as,
// and their type.
typedef struct { int group; size_t block; int64_t values; uint32_t plain, type; } layout_shape;

static layout_shape shape_of(uint32_t layout) {
    if (layout == HK_Q8_0_X16P) return (layout_shape){16, sizeof(hk_q8_0), QK, HK_Q8_0, HK_Q8_0};
    if (layout == HK_Q4_K_X16P) return (layout_shape){16, sizeof(hk_q4_K), QK_K, HK_Q4_K, HK_Q4_K};
    if (layout == HK_Q6_K_X16P) return (layout_shape){16, sizeof(hk_q6_K), QK_K, HK_Q6_K, HK_Q6_K};
    return (layout_shape){8, sizeof(hk_q4_0), QK, HK_Q4_0_X8, HK_Q4_0};
}

uint32_t hk_interleaved_layout(uint32_t kernel_type, int32_t *group_rows) {
    uint32_t layout = 0;
#if HK_HAVE_AVX2
    if (hk_best_isa() == HK_ISA_AVX2) {
        if (kernel_type == HK_Q4_0_X8) layout = HK_Q4_0_X8P;
        if (kernel_type == HK_Q8_0 && hk_vnni_kind() == HK_AVX512_VNNI) layout = HK_Q8_0_X16P;
        if (kernel_type == HK_Q4_K && hk_vnni_kind() == HK_AVX512_VNNI) layout = HK_Q4_K_X16P;
        if (kernel_type == HK_Q6_K && hk_vnni_kind() == HK_AVX512_VNNI) layout = HK_Q6_K_X16P;
    }
#else
    (void)kernel_type;
#endif
    if (group_rows) *group_rows = layout ? shape_of(layout).group : 0;
    return layout;
}

// Block b of row `lane` in a group's super-block `p` <-> the plain block `x`.
static void move_q4_K(uint8_t *p, int lane, uint8_t *x, int to_group) {
    hk_q4_K *b = (hk_q4_K *)x;
    for (int k = 0; k < 32; k++) {
        if (to_group) memcpy(p + XP_QS + 64 * k + 4 * lane, b->qs + 4 * k, 4);
        else memcpy(b->qs + 4 * k, p + XP_QS + 64 * k + 4 * lane, 4);
    }
    for (int i = 0; i < 12; i++) {
        if (to_group) p[XP_SCALES + 16 * i + lane] = b->scales[i];
        else b->scales[i] = p[XP_SCALES + 16 * i + lane];
    }
    if (to_group) {
        memcpy(p + XP_D + 2 * lane, &b->d, 2);
        memcpy(p + XP_DMIN + 2 * lane, &b->dmin, 2);
    } else {
        memcpy(&b->d, p + XP_D + 2 * lane, 2);
        memcpy(&b->dmin, p + XP_DMIN + 2 * lane, 2);
    }
}

// Block b of row `lane` in a Q6_K group's super-block `p` <-> the plain block `x`.
static void move_q6_K(uint8_t *p, int lane, uint8_t *x, int to_group) {
    hk_q6_K *b = (hk_q6_K *)x;
    for (int k = 0; k < 32; k++) {
        uint8_t *word = p + X6P_WORDS(k / 16, k % 8) + (k % 16 >= 8 ? 64 : 0) + 4 * lane;
        if (to_group) memcpy(word, b->ql + 4 * k, 4); else memcpy(b->ql + 4 * k, word, 4);
    }
    for (int k = 0; k < 16; k++) {
        uint8_t *word = p + X6P_WORDS(k / 8, k % 8) + 128 + 4 * lane;
        if (to_group) memcpy(word, b->qh + 4 * k, 4); else memcpy(b->qh + 4 * k, word, 4);
    }
    for (int i = 0; i < 16; i++) {
        if (to_group) p[X6P_SCALES + 16 * i + lane] = (uint8_t)b->scales[i];
        else b->scales[i] = (int8_t)p[X6P_SCALES + 16 * i + lane];
    }
    if (to_group) memcpy(p + X6P_D + 2 * lane, &b->d, 2);
    else memcpy(&b->d, p + X6P_D + 2 * lane, 2);
}

// Block b's bytes of row `lane` in a group's block `p` <-> the plain block `x`: the scale, then
// the quants in pieces of 4 (Q8_0's each plus 128).
static void move_block(uint32_t layout, uint8_t *p, int lane, uint8_t *x, int to_group) {
    if (layout == HK_Q4_K_X16P || layout == HK_Q6_K_X16P) {
        if (layout == HK_Q4_K_X16P) move_q4_K(p, lane, x, to_group); else move_q6_K(p, lane, x, to_group);
        return;
    }
    if (layout == HK_Q8_0_X16P) {
        if (to_group) memcpy(p + 2 * lane, x, 2); else memcpy(x, p + 2 * lane, 2);
        for (int g = 0; g < 8; g++) {
            uint8_t *in_group = p + 32 + 64 * g + 4 * lane, *in_block = x + 2 + 4 * g;
            for (int i = 0; i < 4; i++) {
                if (to_group) in_group[i] = in_block[i] ^ 0x80; else in_block[i] = in_group[i] ^ 0x80;
            }
        }
        return;
    }
    if (to_group) memcpy(p + 2 * lane, x, 2); else memcpy(x, p + 2 * lane, 2);
    for (int k = 0; k < 4; k++) {
        if (to_group) memcpy(p + 16 + 32 * k + 4 * lane, x + 2 + 4 * k, 4);
        else memcpy(x + 2 + 4 * k, p + 16 + 32 * k + 4 * lane, 4);
    }
}

void hk_interleave(uint32_t layout, const void *src, size_t row_bytes, int64_t rows, void *dst) {
    const layout_shape s = shape_of(layout);
    const int64_t nb = (int64_t)(row_bytes / s.block);
    for (int64_t g = 0; g < rows / s.group; g++) {
        const uint8_t *in = (const uint8_t *)src + (size_t)g * s.group * row_bytes;
        uint8_t *out = (uint8_t *)dst + (size_t)g * s.group * row_bytes;
        for (int64_t b = 0; b < nb; b++, out += s.group * s.block)
            for (int r = 0; r < s.group; r++)
                move_block(layout, out, r, (uint8_t *)(in + (size_t)r * row_bytes + (size_t)b * s.block), 1);
    }
}

// Row `row` as the plain blocks it was made from, into `out` (nb blocks).
static void unpack_row(uint32_t layout, const void *w, int64_t row, int64_t nb, uint8_t *out) {
    const layout_shape s = shape_of(layout);
    const uint8_t *group = (const uint8_t *)w + (size_t)(row / s.group) * s.group * (size_t)nb * s.block;
    for (int64_t b = 0; b < nb; b++)
        move_block(layout, (uint8_t *)(group + (size_t)b * s.group * s.block), (int)(row % s.group), out + (size_t)b * s.block, 0);
}

void hk_interleaved_row(uint32_t layout, const void *w, int64_t row, int64_t n, float *out) {
    const layout_shape s = shape_of(layout);
    const int64_t nb = n / s.values;
    uint8_t stack[256 * 34];
    uint8_t *plain = (size_t)nb * s.block <= sizeof stack ? stack : malloc((size_t)nb * s.block);
    if (!plain) return;
    unpack_row(layout, w, row, nb, plain);
    hk_dequantize(HK_ISA_PORTABLE, s.type, plain, out, n);
    if (plain != stack) free(plain);
}

// out[c * out_stride + r] for the rows r of [r0, r1) one at a time: each unpacked, then through
// the plain rows' dot product, which sums as the interleaved kernels do.
static void rows_one_by_one(int isa, uint32_t layout, const void *w, int64_t r0, int64_t r1, const void *a, size_t a_stride,
                            int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    if (r1 <= r0) return;
    const layout_shape s = shape_of(layout);
    const int64_t nb = n / s.values;
    uint8_t stack[256 * 34];
    uint8_t *row = (size_t)nb * s.block <= sizeof stack ? stack : malloc((size_t)nb * s.block);
    if (!row) return;
    for (int64_t r = r0; r < r1; r++) {
        unpack_row(layout, w, r, nb, row);
        // K-quant columns sum in an order that depends on their runs: the plain rows' matmul.
        if ((s.plain == HK_Q4_K || s.plain == HK_Q6_K) && cols > 1) {
            hk_matmul(isa, s.plain, row, (size_t)nb * s.block, 0, 1, a, a_stride, cols, n, runs, n_runs, out + r, out_stride);
            continue;
        }
        for (int64_t c = 0; c < cols; c++)
            out[(size_t)c * out_stride + (size_t)r] = hk_dot(isa, s.plain, row, (const uint8_t *)a + (size_t)c * a_stride, n);
    }
    if (row != stack) free(row);
}

void hk_interleaved_products(int isa, uint32_t layout, const hk_kernel *k, const void *w, size_t row_bytes, int64_t r0,
                             int64_t r1, const void *a, size_t a_stride, int64_t cols, int64_t n, const int64_t *runs,
                             int64_t n_runs, float *out, size_t out_stride) {
    const int64_t group = shape_of(layout).group;
    int64_t g0 = (r0 + group - 1) / group * group, g1 = r1 / group * group;
    if (g1 < g0 || !k || (cols == 1 ? !k->matvec : !k->matmul)) g0 = g1 = r1;
    rows_one_by_one(isa, layout, w, r0, g0, a, a_stride, cols, n, runs, n_runs, out, out_stride);
    if (g1 > g0) {
        const uint8_t *rows = (const uint8_t *)w + (size_t)g0 * row_bytes;
        if (cols == 1) k->matvec(rows, row_bytes, g1 - g0, a, n, out + g0);
        else k->matmul(rows, row_bytes, g1 - g0, a, a_stride, cols, n, runs, n_runs, out + g0, out_stride);
    }
    rows_one_by_one(isa, layout, w, g1 > g0 ? g1 : g0, r1, a, a_stride, cols, n, runs, n_runs, out, out_stride);
}
