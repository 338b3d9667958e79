// The HK_Q4_0_X8P layout (see CHearthKernels.h): Q4_0 rows interleaved eight at a time, and the
// rows of a group one at a time, for products whose row range cuts a group.
#include "internal.h"
#include <stdlib.h>

#define GROUP_BLOCK (8 * sizeof(hk_q4_0))

void hk_q4_0_interleave(const void *src, size_t row_bytes, int64_t rows, void *dst) {
    const int64_t nb = (int64_t)(row_bytes / sizeof(hk_q4_0));
    for (int64_t g = 0; g < rows / 8; g++) {
        const uint8_t *in = (const uint8_t *)src + (size_t)g * 8 * row_bytes;
        uint8_t *out = (uint8_t *)dst + (size_t)g * 8 * row_bytes;
        for (int64_t b = 0; b < nb; b++, out += GROUP_BLOCK)
            for (int r = 0; r < 8; r++) {
                const hk_q4_0 *x = (const hk_q4_0 *)(in + (size_t)r * row_bytes) + b;
                memcpy(out + 2 * r, &x->d, 2);
                for (int k = 0; k < 4; k++) memcpy(out + 16 + 32 * k + 4 * r, x->qs + 4 * k, 4);
            }
    }
}

// Row `lane` of the group at `group` as the plain Q4_0 blocks it was made from.
static void unpack_row(const uint8_t *group, int lane, int64_t nb, hk_q4_0 *out) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = group + (size_t)b * GROUP_BLOCK;
        memcpy(&out[b].d, p + 2 * lane, 2);
        for (int k = 0; k < 4; k++) memcpy(out[b].qs + 4 * k, p + 16 + 32 * k + 4 * lane, 4);
    }
}

static const uint8_t *group_of(const void *w, int64_t row, int64_t nb) {
    return (const uint8_t *)w + (size_t)(row / 8) * 8 * (size_t)nb * sizeof(hk_q4_0);
}

void hk_q4_0_x8p_row(const void *w, int64_t row, int64_t n, float *out) {
    const int64_t nb = n / QK;
    const uint8_t *group = group_of(w, row, nb);
    for (int64_t b = 0; b < nb; b++) {
        hk_q4_0 block;
        unpack_row(group + (size_t)b * GROUP_BLOCK, (int)(row % 8), 1, &block);
        hk_dequantize(HK_ISA_PORTABLE, HK_Q4_0, &block, out + b * QK, QK);
    }
}

// out[c * out_stride + r] for the rows r of [r0, r1) one at a time: each unpacked, then through
// the plain rows' dot product, which sums as the interleaved kernels do.
static void rows_one_by_one(int isa, const void *w, int64_t r0, int64_t r1, const void *a, size_t a_stride, int64_t cols,
                            int64_t n, float *out, size_t out_stride) {
    if (r1 <= r0) return;
    const int64_t nb = n / QK;
    hk_q4_0 stack[256];
    hk_q4_0 *row = nb <= 256 ? stack : malloc((size_t)nb * sizeof(hk_q4_0));
    if (!row) return;
    for (int64_t r = r0; r < r1; r++) {
        unpack_row(group_of(w, r, nb), (int)(r % 8), nb, row);
        for (int64_t c = 0; c < cols; c++)
            out[(size_t)c * out_stride + (size_t)r] = hk_dot(isa, HK_Q4_0_X8, row, (const uint8_t *)a + (size_t)c * a_stride, n);
    }
    if (row != stack) free(row);
}

void hk_interleaved_products(int isa, const hk_kernel *k, const void *w, size_t row_bytes, int64_t r0, int64_t r1,
                             const void *a, size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                             float *out, size_t out_stride) {
    int64_t g0 = (r0 + 7) / 8 * 8, g1 = r1 / 8 * 8;
    if (g1 < g0 || !k || (cols == 1 ? !k->matvec : !k->matmul)) g0 = g1 = r1;
    rows_one_by_one(isa, w, r0, g0, a, a_stride, cols, n, out, out_stride);
    if (g1 > g0) {
        const uint8_t *rows = (const uint8_t *)w + (size_t)g0 * row_bytes;
        if (cols == 1) k->matvec(rows, row_bytes, g1 - g0, a, n, out + g0);
        else k->matmul(rows, row_bytes, g1 - g0, a, a_stride, cols, n, runs, n_runs, out + g0, out_stride);
    }
    rows_one_by_one(isa, w, g1 > g0 ? g1 : g0, r1, a, a_stride, cols, n, out, out_stride);
}
