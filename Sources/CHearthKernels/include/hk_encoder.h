#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Kernels of BERT-style encoders. Each takes an instruction-set
/// path `isa` (HK_ISA_PORTABLE or HK_ISA_AVX2); both paths give the same bits.

/// x[i] = gelu(x[i]) = x/2 (1 + erf(x/sqrt 2)) in place, with erf from Abramowitz and Stegun's
/// formula 7.1.26 (absolute error below 1.5e-7) and e^x from hk_exp_approx.
void hk_gelu_erf_f32(int isa, float *x, int64_t n);

/// row = layer_norm(row + residual) * weight + bias in place, over n elements; `residual` may be
/// NULL. The variance is the biased one (divided by n), as BERT's LayerNorm has it.
void hk_layer_norm_f32(int isa, float *row, const float *residual, const float *weight, const float *bias,
                       int64_t n, float epsilon);

/// Softmax attention of one head over one sequence of `count` tokens, with no mask:
/// out_i = sum_j softmax_j(scale * q_i . k_j) v_j: hk_attention_run in sentence-transformers'
/// orders (scores in 8 lanes reduced pairwise, hk_exp_approx summed in order, each output one
/// chain of fused multiply-adds over the tokens). The query, key and value of token t start at
/// q + t * stride, k + t * stride and v + t * stride (head_dim floats each); token t's output at
/// out + t * out_stride. `scores` holds `count` floats.
void hk_encoder_attention_f32(int isa, const float *q, const float *k, const float *v, int64_t stride,
                              int64_t count, int64_t head_dim, float scale, float *scores, float *out,
                              int64_t out_stride);

#ifdef __cplusplus
}
#endif
