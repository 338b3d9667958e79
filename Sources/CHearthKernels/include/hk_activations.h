#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Functions taking `isa` run the path it names (HK_ISA_PORTABLE or HK_ISA_AVX2); both give
/// the same bits.

/// e^x by range reduction to 2^n * e^b (|b| <= ln2/2) and a degree-5 polynomial, within about
/// 1.5 ulp. It is the approximation llama.cpp's CPU backend vectorises, so activations computed
/// with it round exactly as llama.cpp's do; scalar and AVX2 give identical bits.
float hk_exp_approx(float x);

/// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). Runs of 8 use hk_exp_approx and the
/// last n % 8 elements libm's expf, as llama.cpp's AVX2 build does.
void hk_silu_mul_f32(int isa, const float *gate, const float *up, float *out, int64_t n);

/// Softmax of n scores in place, e^(s - max) by hk_exp_approx, summed in runs of 8 (each run
/// reduced pairwise, then added in double) and scaled by the float reciprocal of the sum. A
/// `sink` above -INFINITY is one more score (in the maximum, and its expf in the sum) with no
/// weight of its own: an attention sink.
void hk_softmax_f32(int isa, float *scores, int64_t n, float sink);

/// Softmax of one row as ggml_soft_max computes it for a row of any length (a router's
/// scores): runs of 8 through the vectorised exp, the last n % 8 through libm's expf, their sum
/// in double. (hk_softmax_f32 is attention's, whose rows llama.cpp pads with masked positions.)
void hk_softmax_row_f32(int isa, float *x, int64_t n);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// out[i] = gelu(gate[i]) * up[i] with the tanh approximation of GELU, looked up in a table over
/// every half-precision input (as llama.cpp's CPU backend does): the gate is rounded to half
/// precision, its GELU read from the table as a half, and inputs at or beyond ±10 pass through
/// (gelu(x) = x) or give 0.
void hk_geglu_f32(const float *gate, const float *up, float *out, int64_t n);

/// Rotates the first `dims` values of each of `heads` heads of `head_dim` floats at x by a row's
/// RoPE table ((cos, sin) per pair): pairs (2i, 2i+1) when `adjacent`, else (i, i + dims/2).
/// x0' = x0*c - x1*s and x1' = x0*s + x1*c, each with one fused multiply-add after the other
/// product is rounded, as llama.cpp's compiled C computes them.
void hk_rope_rotate(int isa, float *x, int64_t heads, int64_t head_dim, int64_t dims, const float *table, int adjacent);

/// Multiplies each run of `chunk` floats of the n at x by the orthonormal Walsh-Hadamard matrix
/// of that size (Sylvester's order, entries ±1/sqrt(chunk); it is its own inverse), by the fast
/// transform. `chunk` is a power of two; n a multiple of it. Rotating keys and queries alike
/// leaves their products as they were while spreading a head's outliers over all its values,
/// so that quantizing the keys (or values, rotated back after attention) loses less.
void hk_hadamard_rotate(float *x, int64_t n, int64_t chunk);

#ifdef __cplusplus
}
#endif
