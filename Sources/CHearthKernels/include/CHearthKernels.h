#pragma once
#include <stdint.h>
#include <stddef.h>
#include "hk_attention.h"
#include "hk_activations.h"
#include "hk_gemm.h"
#include "hk_encoder.h"
#include "hk_audio.h"
#include "hk_recurrent.h"

// C kernels behind HearthKernels. Type arguments are GGML type numbers (GGMLType.rawValue).
// Every function takes an instruction-set path `isa` so that callers (and tests) can run the
// portable scalar code on any machine; pass hk_best_isa() for the fastest available.

#ifdef __cplusplus
extern "C" {
#endif

/// Portable scalar C, any CPU.
#define HK_ISA_PORTABLE 0
/// x86-64 with AVX2, FMA and F16C.
#define HK_ISA_AVX2 1

/// Not a GGML type: Q4_0 weights of a matrix whose row count is a multiple of 8, summed as
/// llama.cpp sums the block_q4_0x8 it repacks them into on AVX2 (one fused multiply-add per
/// block). The data is plain Q4_0; pass this in place of the type to the dot and matrix kernels.
#define HK_Q4_0_X8 0x10002

/// Not a GGML type: the rows of a HK_Q4_0_X8 matrix interleaved eight at a time by
/// `hk_interleave` (llama.cpp's block_q4_0x8 idea): for each group of 8 rows and each block,
/// the 8 rows' f16 scales, then for k = 0..3 the bytes qs[4k..4k+3] of rows 0 to 7 in turn (144
/// bytes, as many as the 8 rows' blocks). It sums as HK_Q4_0_X8 does.
#define HK_Q4_0_X8P 0x10003

/// Not a GGML type: Q8_0 rows interleaved sixteen at a time by `hk_interleave`: for each group
/// of 16 rows and each block, the 16 rows' f16 scales, then for g = 0..7 the bytes qs[4g..4g+3]
/// of rows 0 to 15 in turn, each plus 128 (544 bytes, as many as the 16 rows' blocks). It sums
/// as HK_Q8_0 does; its kernels need AVX-512 VNNI.
#define HK_Q8_0_X16P 0x10004

/// Not a GGML type: Q4_K rows interleaved sixteen at a time by `hk_interleave`: for each group
/// of 16 rows and each super-block, the quants' bytes qs[4w..4w+3] of rows 0 to 15 in turn for
/// w = 0..31, then byte b of the rows' packed scales for b = 0..11, their f16 d and their f16
/// dmin (2304 bytes, as many as the 16 rows' blocks). It sums as HK_Q4_K does; its kernels need
/// AVX-512 VNNI.
#define HK_Q4_K_X16P 0x10005

/// Not a GGML type: Q6_K rows interleaved sixteen at a time by `hk_interleave`: for each group
/// of 16 rows and each super-block, byte i of the rows' scales for i = 0..15, then for l = 0..7
/// and h = 0..1 the words ql[16h + l], ql[16h + 8 + l] and qh[8h + l] (4 bytes each) of rows 0 to
/// 15 in turn, then their f16 d (3360 bytes, as many as the 16 rows' blocks). It sums as HK_Q6_K does;
/// its kernels need AVX-512 VNNI.
#define HK_Q6_K_X16P 0x10006

/// Not a GGML type: IQ4_NL weights of a matrix whose row count is a multiple of 8, summed as
/// llama.cpp sums the block_iq4_nlx8 it repacks them into on AVX2 (one fused multiply-add per
/// block). The data is plain IQ4_NL; pass this in place of the type to the dot and matrix kernels.
#define HK_IQ4_NL_X8 0x10007

/// Not a GGML type: MXFP4 weights of a matrix whose row count is a multiple of 8, summed as
/// llama.cpp sums the block_mxfp4x8 it repacks them into on AVX2 (as HK_IQ4_NL_X8).
#define HK_MXFP4_X8 0x10008

/// Not a GGML type: Q4_K weights of a matrix whose row count is not a multiple of 8, which
/// llama.cpp leaves as they are on AVX2 rather than repacking them into block_q4_Kx8: summed as
/// ggml_vec_dot_q4_K_q8_K sums them for fewer than 8 columns and as its tiled kernel from 8 on
/// (as Q5_K is). The data is plain Q4_K.
#define HK_Q4_K_PLAIN 0x10009

// In an interleaved layout rows stay `row_bytes` apart on average: group g of G rows starts at
// g * G * row_bytes. The matrix kernels take any row range; `hk_dot` does not apply.

/// The interleaved layout that the best path multiplies fastest for `kernel_type` (HK_Q4_0_X8,
/// HK_Q8_0, HK_Q4_K or HK_Q6_K) on this CPU, or 0 when there is none; `*group_rows` gets its rows per group.
uint32_t hk_interleaved_layout(uint32_t kernel_type, int32_t *group_rows);

/// Writes `rows` (a multiple of the layout's group) rows of `row_bytes` from `src` to `dst`
/// (as many bytes) in `layout`.
void hk_interleave(uint32_t layout, const void *src, size_t row_bytes, int64_t rows, void *dst);

/// Row `row` of `n` values of the matrix at `w` in `layout`, as floats.
void hk_interleaved_row(uint32_t layout, const void *w, int64_t row, int64_t n, float *out);

/// Whether the AVX2 path's HK_Q4_0_X8, HK_Q4_0_X8P, HK_Q8_0_X16P, HK_Q4_K_X16P and HK_Q6_K_X16P products use VNNI's byte dot products (AVX-512 VNNI or
/// AVX-VNNI) where the CPU has them: they do unless `allowed` was 0; pass 1 to allow them
/// again, -1 to only ask. The results are the same bits either way.
int hk_use_vnni(int allowed);

/// The fastest path this CPU can run.
int hk_best_isa(void);

/// Asks the caches for the `bytes` bytes from `p` (a hint: never faults, returns at once).
void hk_prefetch(const void *p, size_t bytes);

/// Activation type paired with a weight type for `hk_dot`, or -1 when there is no kernel.
int32_t hk_activation_type(uint32_t weight_type);

/// Float row to an activation type (Q8_0, Q8_1, Q8_K, or F32 as a copy). Returns 0, or -1
/// for a type it cannot produce.
int hk_quantize_activations(int isa, uint32_t type, const float *x, void *dst, int64_t n);

/// Float row from a weight type. Returns 0, or -1 for an unsupported type.
int hk_dequantize(int isa, uint32_t type, const void *src, float *dst, int64_t n);

/// Dot of one weight row with one activation row of `n` elements.
float hk_dot(int isa, uint32_t weight_type, const void *w, const void *a, int64_t n);

/// out[r - r0] = dot(row r, a) for r in r0..<r1.
void hk_matvec(int isa, uint32_t weight_type, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, int64_t n, float *out);

/// out[c * out_stride + r] = dot(row r, column c) for r in r0..<r1, c in 0..<cols;
/// column c starts at a + c * a_stride bytes. `runs` (n_runs lengths summing to cols, or NULL
/// for one run) are the columns of each sequence in a forward pass: a column's sum depends on
/// the length of its run and its place in it, never on the other runs.
void hk_matmul(int isa, uint32_t weight_type, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, size_t a_stride, int64_t cols,
               int64_t n, const int64_t *runs, int64_t n_runs, float *out, size_t out_stride);

/// Sum of a[i] * b[i].
float hk_dot_f32(int isa, const float *a, const float *b, int64_t n);

/// y[i] += alpha * x[i].
void hk_axpy_f32(int isa, float alpha, const float *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif
