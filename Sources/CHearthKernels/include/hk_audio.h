#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Log-mel spectrogram frames as Whisper's feature extractor computes them, before its
/// normalization: for frame f of `samples` (n of them, already followed by whatever padding the
/// caller wants counted), the 400 samples centred on f * 160 (reflected at both ends), times a
/// periodic Hann window, through a 400-point FFT (double precision); the power of bins 0...200
/// through `filters` (n_mels rows of 201 weights) and log10 of each mel energy clamped below at
/// 1e-10. Writes frames f0..<f1 into out[m * out_stride + f] and returns the largest value
/// written (-inf when none).
float hk_log_mel_frames(const float *samples, int64_t n, const float *filters, int64_t n_mels,
                        int64_t f0, int64_t f1, float *out, int64_t out_stride);

/// out[c * out_stride + r] = bias[r] + Σᵢ w[r * n + i] · x[c * x_stride + i] for rows r0..<r1 of
/// half-precision weights (n per row) and `cols` float vectors; `bias` may be NULL. Products
/// and sums are float: 8 lanes of fused multiply-adds, reduced in a fixed order, then the last
/// n % 8 elements. Each row's weights are read once for up to 8 vectors, each vector's results
/// are the bits it gets alone, and both paths give the same bits.
void hk_matmul_f16w_f32(int isa, const uint16_t *w, int64_t r0, int64_t r1, int64_t n, const float *x, int64_t x_stride,
                        int64_t cols, const float *bias, float *out, int64_t out_stride);

/// One query of head_dim floats over `count` keys and values (key j at keys + j * stride):
/// out = Σⱼ softmaxⱼ(scale · q·kⱼ) vⱼ, with hk_dot_f32 and hk_axpy_f32 doing the sums: hk_attention_run
/// in the orders of Whisper's self-attention (expf summed in order, each weight divided by the sum).
/// `scores` holds `count` floats.
void hk_attend_one_f32(int isa, const float *q, const float *keys, const float *values, int64_t stride, int64_t count,
                       int64_t head_dim, float scale, float *scores, float *out);

/// One query head of head_dim floats over `count` keys and values stored transposed: key j's
/// element d at kt[d * count + j], value j's at vt[d * count + j]. out = Σⱼ softmaxⱼ(scale · q·kⱼ) vⱼ;
/// `scores` (count floats) is left holding exp(scale · q·kⱼ − max), the softmax before its
/// normalization. hk_attention_run in CTranslate2's orders (each score one chain over the
/// dimensions, hk_exp_approx summed in 8 lanes, each output 8 lanes over the positions divided
/// by the sum); both paths give the same bits.
void hk_attend_transposed_f32(int isa, const float *q, const float *kt, const float *vt, int64_t count, int64_t head_dim,
                              float scale, float *scores, float *out);

/// log Σⱼ exp(x[j]) (−∞ when every x is −∞), the exponentials hk_exp_approx's, summed in 8
/// lanes; both paths give the same bits.
float hk_logsumexp_f32(int isa, const float *x, int64_t n);

#ifdef __cplusplus
}
#endif
