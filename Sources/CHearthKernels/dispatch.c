// Entry points: pick the kernel for a type and path, and loop over rows and columns.
#include "internal.h"

static int interleaved_layout(uint32_t type) {
    return type == HK_Q4_0_X8P || type == HK_Q8_0_X16P || type == HK_Q4_K_X16P || type == HK_Q6_K_X16P;
}

static const hk_kernel *kernel_for(int isa, uint32_t type) {
    const hk_kernel *lowbit = hk_lowbit_kernel(isa, type);
    if (lowbit) return lowbit;
    const hk_kernel *grid = hk_grid_kernel(isa, type);
    if (grid) return grid;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) return hk_avx2_kernel(type);
#endif
    (void)isa;
    return hk_portable_kernel(type);
}

int32_t hk_activation_type(uint32_t weight_type) {
    switch (weight_type) {
    case HK_F32: case HK_BF16: return HK_F32;
    case HK_F16: return HK_F16;
    case HK_Q4_0: case HK_Q4_0_X8: case HK_Q4_0_X8P: case HK_Q5_0: case HK_Q8_0: case HK_Q8_0_X16P:
    case HK_IQ4_NL: case HK_IQ4_NL_X8: case HK_MXFP4: case HK_MXFP4_X8: return HK_Q8_0;
    case HK_Q4_1: case HK_Q5_1: return HK_Q8_1;
    case HK_Q2_K: case HK_Q3_K: case HK_Q4_K: case HK_Q4_K_PLAIN: case HK_Q4_K_X16P: case HK_Q5_K: case HK_Q6_K: case HK_Q6_K_X16P:
    case HK_IQ4_XS: case HK_IQ2_XXS: case HK_IQ2_XS: case HK_IQ2_S: case HK_IQ3_XXS: case HK_IQ3_S: case HK_IQ1_S: case HK_IQ1_M:
        return HK_Q8_K;
    default: return -1;
    }
}

int hk_quantize_activations(int isa, uint32_t type, const float *x, void *dst, int64_t n) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) return hk_avx2_quantize(type, x, dst, n);
#endif
    return hk_portable_quantize(type, x, dst, n);
}

int hk_dequantize(int isa, uint32_t type, const void *src, float *dst, int64_t n) {
    if (hk_lowbit_dequantize(type, src, dst, n) == 0) return 0;
    if (hk_grid_dequantize(type, src, dst, n) == 0) return 0;
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) return hk_avx2_dequantize(type, src, dst, n);
#endif
    return hk_portable_dequantize(type, src, dst, n);
}

float hk_dot(int isa, uint32_t weight_type, const void *w, const void *a, int64_t n) {
    const hk_kernel *k = kernel_for(isa, weight_type);
    return k && k->dot ? k->dot(w, a, n) : 0.0f;
}

void hk_matvec(int isa, uint32_t weight_type, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, int64_t n, float *out) {
    const hk_kernel *k = kernel_for(isa, weight_type);
    if (interleaved_layout(weight_type) && r1 > r0) {
        hk_interleaved_products(isa, weight_type, k, w, row_bytes, r0, r1, a, 0, 1, n, NULL, 0, out - r0, 0);
        return;
    }
    if (!k || r1 <= r0) return;
    const uint8_t *rows = (const uint8_t *)w + (size_t)r0 * row_bytes;
    if (k->matvec) {
        k->matvec(rows, row_bytes, r1 - r0, a, n, out);
        return;
    }
    for (int64_t r = 0; r < r1 - r0; r++) out[r] = k->dot(rows + (size_t)r * row_bytes, a, n);
}

void hk_matmul(int isa, uint32_t weight_type, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, size_t a_stride, int64_t cols,
               int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    const hk_kernel *k = kernel_for(isa, weight_type);
    if (interleaved_layout(weight_type) && r1 > r0 && cols > 0) {
        hk_interleaved_products(isa, weight_type, k, w, row_bytes, r0, r1, a, a_stride, cols, n, runs, n_runs, out, out_stride);
        return;
    }
    if (!k || r1 <= r0 || cols <= 0) return;
    const uint8_t *rows = (const uint8_t *)w + (size_t)r0 * row_bytes;
    if (k->matmul) {
        k->matmul(rows, row_bytes, r1 - r0, a, a_stride, cols, n, runs, n_runs, out + r0, out_stride);
        return;
    }
    for (int64_t r = 0; r < r1 - r0; r++)
        for (int64_t c = 0; c < cols; c++)
            out[(size_t)c * out_stride + (size_t)(r0 + r)] =
                k->dot(rows + (size_t)r * row_bytes, (const uint8_t *)a + (size_t)c * a_stride, n);
}

float hk_dot_f32(int isa, const float *a, const float *b, int64_t n) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) return hk_avx2_dot_f32(a, b, n);
#endif
    return hk_portable_dot_f32(a, b, n);
}

void hk_axpy_f32(int isa, float alpha, const float *x, float *y, int64_t n) {
#if HK_HAVE_AVX2
    if (isa == HK_ISA_AVX2) { hk_avx2_axpy_f32(alpha, x, y, n); return; }
#endif
    hk_portable_axpy_f32(alpha, x, y, n);
}
