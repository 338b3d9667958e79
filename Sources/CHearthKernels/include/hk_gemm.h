#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What hk_gemm_packed_f32 applies to each output: nothing, or GELU with the error function
/// (hk_gelu_erf_f32's bits).
enum { HK_GEMM_NONE = 0, HK_GEMM_GELU = 1 };

/// Floats that hk_gemm_pack_f32 writes for an n × k weight matrix: n rounded up to 16, times k.
int64_t hk_gemm_packed_count(int64_t n, int64_t k);

/// Packs n weight rows of k floats (w_stride apart) into panels of 16 rows: panel p holds, for
/// each k in order, rows 16p … 16p + 15 side by side, zeros past row n. `packed` holds
/// hk_gemm_packed_count(n, k) floats, 32-byte aligned.
void hk_gemm_pack_f32(const float *w, int64_t w_stride, int64_t n, int64_t k, float *packed);

/// Dense float matrix product with bias, for encoder models kept in F32:
/// out[c * out_stride + r] = act(bias[r] + sum_k W[r][k] * x[c * x_stride + k])
/// for r in r0..<r1 and c in 0..<m, W packed by hk_gemm_pack_f32. `bias` may be NULL. Both paths
/// sum each output in the same order (a fused chain over each block of at most 384 k, added to
/// the bias one block after another), whatever the rows or row range.
void hk_gemm_packed_f32(int isa, const float *packed, int64_t n, int64_t k, int64_t r0, int64_t r1,
                        const float *x, int64_t x_stride, int64_t m, const float *bias, int activation,
                        float *out, int64_t out_stride);

/// Whether hk_gemm_packed_f32's AVX2 path runs on AVX-512 (when the CPU has it); `allowed` 0 or 1
/// sets it first, -1 leaves it. Both give the same bits, so tests compare them.
int hk_gemm_avx512(int allowed);

#ifdef __cplusplus
}
#endif
